// Shared by the engine entries: ProjectStorage in memory, and which components (and tools) an
// edge function serves.
//
// ProjectStorage implementations (the interface is in www/jp.d.ts): keys are workspace paths,
// values a file's bytes or "dir"; `batch` applies all its operations or none, and refuses a
// stale `expected` version with a ProjectChanged error.

/** The error a storage throws when a batch's expected version is no longer the project's. */
export function projectChanged() {
  const e = new Error('the project changed while the call ran (another request wrote to it); nothing of this call was stored: call again');
  e.name = 'ProjectChanged';
  return e;
}

/** Projects in memory, for the life of the process (Node). Each has a counter as its version. */
export function memoryStorage() {
  const projects = new Map();
  return (id) => {
    if (!projects.has(id)) projects.set(id, { files: new Map(), version: 0 });
    const project = projects.get(id);
    const { files } = project;
    return {
      get: async (path) => files.get(path),
      put: async (path, value) => { files.set(path, value); project.version++; },
      delete: async (path) => { files.delete(path); project.version++; },
      list: async () => [...files.entries()],
      version: async () => project.version,
      // One synchronous pass: nothing can interleave, so it is atomic.
      batch: async (ops, expected) => {
        if (expected !== undefined && expected !== project.version) throw projectChanged();
        for (const { path, value } of ops) value === null ? files.delete(path) : files.set(path, value);
        project.version++;
      },
    };
  };
}

/** The components an edge function serves: `fs` and `learn` (seed 002's knowledge base, the
 * project's KNOWLEDGE_BASE: see `knowledgeBase`) always; the test components — `faults`
 * (misbehaving on purpose, for the limits), `media` (answers with content blocks) and `fetch`
 * (issue 34's example: `api_get`, an HTTP GET with `Authorization: Bearer ${API_TOKEN}`, and
 * `read_env`, a read of `.env`, which asks) and `calc` (issue 35's stateful example: a session
 * that keeps its bindings across requests) — only when asked for (JP_EDGE_FAULTS=1). */
export function componentNames(withFaults) {
  return withFaults ? ['fs', 'learn', 'faults', 'media', 'fetch', 'calc'] : ['fs', 'learn'];
}

/** The knowledge base a builtin component reads its topic from (`learn`), or null. */
export const knowledgeBase = (name) => (name === 'learn' ? KNOWLEDGE_BASE : null);

/** The secrets of the operator's policy (`handler.secrets()`) as a start message says them:
 * their names only, and which are not set. */
export function secretsNote(secrets) {
  if (secrets.length === 0) return '';
  const missing = secrets.filter((s) => !s.set).map((s) => s.name);
  return `; secrets from the environment: ${secrets.map((s) => s.name).join(', ')}${missing.length ? ` (not set: ${missing.join(', ')})` : ''}`;
}

import { KNOWLEDGE_BASE } from '../../www/subjects.js';

export { FAULT_TOOLS } from '../../www/fault-tools.js';
