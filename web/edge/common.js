// Shared by the engine entries: ProjectStorage in memory, and which components (and tools) an
// edge function serves.
//
// ProjectStorage implementations (the interface is in www/jp.d.ts): keys are workspace paths,
// values a file's bytes or "dir"; `batch` applies all its operations or none.

/** Projects in memory, for the life of the process (Node). */
export function memoryStorage() {
  const projects = new Map();
  return (id) => {
    if (!projects.has(id)) projects.set(id, new Map());
    const files = projects.get(id);
    return {
      get: async (path) => files.get(path),
      put: async (path, value) => { files.set(path, value); },
      delete: async (path) => { files.delete(path); },
      list: async () => [...files.entries()],
      // One synchronous pass: nothing can interleave, so it is atomic.
      batch: async (ops) => {
        for (const { path, value } of ops) value === null ? files.delete(path) : files.set(path, value);
      },
    };
  };
}

/** The components an edge function serves: `fs` always, `faults` (misbehaving on purpose) only
 * when asked for, for tests of the limits. */
export function componentNames(withFaults) {
  return withFaults ? ['fs', 'faults'] : ['fs'];
}

export { FAULT_TOOLS } from '../../www/fault-tools.js';
