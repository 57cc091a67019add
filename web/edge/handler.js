// An edge function hosting sandboxed tools, the same on every engine (workerd, Deno, Node): the
// engine's entry (workerd.js, deno.js, node.mjs) gives it the wasm modules and the storage, and
// it answers `(Request) → Response`. The policy is enforced by the same core as everywhere.
//
//   POST /     {tool, args, files?, policy?, project?} → {outcome, changed, events, files?}
//              With `project` (an id), the call runs on that project's stored files (`files`
//              written first) and its changes persist — all of them, or none when it fails.
//              Without, the files live for the request and all of them come back.
//   /mcp       MCP Streamable HTTP (JSON responses, no sessions); `?project=ID` picks the
//              project; `Authorization: Bearer <JP_EDGE_TOKEN>`.
import { Host, loadJp } from '../../www/jp.js';
import { answer, errors } from './mcp.js';
import { bareHandler } from './bare.js';

/** A tool call's deadline at the edge unless JP_EDGE_DEADLINE_MS says otherwise (ms). */
export const DEADLINE_MS = 10_000;

/** Projects whose host (component instances, policy, copy of the files) is kept for their next
 * calls; the least recently used beyond this many are dropped. */
const MAX_KEPT = 32;

/** Largest request body accepted (bytes); larger ones get 413. */
export const MAX_BODY = 8 << 20;
/** An oversized body is still read (and thrown away) up to this many bytes, so that the client,
 * still sending, receives the 413 instead of a reset connection. */
const DRAIN_MAX = 64 << 20;
/** A project id: 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit. */
export const PROJECT_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

const json = (status, value, headers = {}) =>
  new Response(JSON.stringify(value), { status, headers: { 'content-type': 'application/json', ...headers } });

/** Equal strings, compared in time that does not depend on where they differ. */
function sameSecret(a, b) {
  const x = new TextEncoder().encode(a);
  const y = new TextEncoder().encode(b);
  let diff = x.length ^ y.length;
  for (let i = 0; i < Math.max(x.length, y.length); i++) diff |= (x[i] ?? 0) ^ (y[i] ?? 0);
  return diff === 0;
}

/**
 * The body as text, read as a stream and refused above `MAX_BODY` (whatever Content-Length
 * says): `{ text }` or `{ tooLarge: true }`. A chunked body is never held whole past the limit.
 */
export async function bodyText(request) {
  if (!request.body) return { text: '' };
  let tooBig = Number(request.headers.get('content-length') ?? 0) > MAX_BODY;
  const reader = request.body.getReader();
  const chunks = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    tooBig ||= size > MAX_BODY;
    if (!tooBig) chunks.push(value);
    else if (size > DRAIN_MAX) { await reader.cancel(); break; }
  }
  if (tooBig) return { tooLarge: true };
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) { bytes.set(c, at); at += c.length; }
  return { text: new TextDecoder().decode(bytes) };
}

export const tooLarge = () => json(413, { error: `the request body is larger than ${MAX_BODY} bytes; send fewer or smaller files` });

/** A stale commit (another writer moved the project during the call): 409, nothing stored. */
const isProjectChanged = (e) => e?.name === 'ProjectChanged';

/**
 * The edge function. `options`:
 * - `jp`: the jp-web `WebAssembly.Module`;
 * - `components`: `{ name: { module, cores, tools? } }` — jco's JS module, its core modules
 *   (`{ file: WebAssembly.Module }`), and its tools when it does not describe itself;
 * - `storage(projectId)`: the `ProjectStorage` of a project (see www/jp.d.ts), or null when the
 *   engine keeps none;
 * - `token`: the bearer token `/mcp` requires (no token: `/mcp` answers 503);
 * - `policy`: the policy of `/mcp` calls (TOML; empty: the workspace read-write, nothing else);
 * - `bench`: also serve `POST /__bare` (bare.js): a file of the project with no jp at all, read
 *   from storage on every call or from a kept copy, for the same request shape as a call — the
 *   benchmark's baseline on the same engine (JP_EDGE_BENCH=1);
 * - `limits`: `{ deadlineMs, memoryMiB }`: each call's deadline, and the memory cap the engine
 *   was started with (see edge.mjs).
 */
export function createHandler({ jp, components, storage = () => null, token = '', policy = '', limits = {}, bench = false }) {
  let described = null; // the tools each component described, once
  const queues = new Map(); // project id → the tail of its calls: one at a time per project
  // project id → its host, kept for its next calls (never shared across projects): its
  // component instances, its policy and its copy of the files (reused while the storage's
  // version holds). The least recently used beyond MAX_KEPT are dropped.
  const kept = new Map();
  const bare = bench ? bareHandler(storage) : null;

  async function newHost(policyText, projectStorage, instances) {
    await loadJp(jp);
    const h = await Host.create({ db: null, policy: policyText, storage: projectStorage, limits, instances });
    const first = described === null;
    if (first) described = {};
    for (const [name, c] of Object.entries(components)) {
      const tools = await h.registerComponent(name, c.module, c.cores, first ? (c.tools ?? null) : described[name]);
      if (first) described[name] = h.listTools().filter((t) => tools.includes(t.name));
    }
    return h;
  }

  /** The host of a call: a fresh one without a project, else the project's kept one. */
  async function host(policyText, project) {
    if (project === undefined || project === null) return newHost(policyText, null, null);
    let entry = kept.get(project);
    if (entry) {
      kept.delete(project);
    } else {
      const storage = await projectStorage(project);
      entry = newHost('', storage, new Map());
      entry.catch(() => { if (kept.get(project) === entry) kept.delete(project); });
    }
    kept.set(project, entry);
    if (kept.size > MAX_KEPT) kept.delete(kept.keys().next().value);
    const h = await entry;
    if (h.policyText !== policyText) h.setPolicy(policyText);
    return h;
  }

  /** Run `work` after the project's earlier calls (snapshot → commit must not interleave). */
  function serialised(project, work) {
    if (!project) return work();
    const run = (queues.get(project) ?? Promise.resolve()).then(work, work);
    const tail = run.catch(() => {});
    queues.set(project, tail);
    tail.then(() => { if (queues.get(project) === tail) queues.delete(project); });
    return run;
  }

  async function projectStorage(project) {
    if (project === undefined || project === null) return null;
    if (typeof project !== 'string' || !PROJECT_ID.test(project)) {
      throw new BadRequest(`"project" must be an id of 1-64 letters, digits, '.', '_' or '-' starting with a letter or digit, got ${JSON.stringify(project)}`);
    }
    const s = await storage(project);
    if (!s) throw new BadRequest('this edge function keeps no projects; leave out "project" and send the files with each call');
    return s;
  }

  async function callRoute(request) {
    const body = await bodyText(request);
    if (body.tooLarge) return tooLarge();
    let parsed;
    try {
      parsed = JSON.parse(body.text);
    } catch (e) {
      return json(400, { error: `the request body must be JSON {tool, args, files?, policy?, project?}: ${e.message}` });
    }
    const { tool, args = {}, files = null, policy: policyText = '', project } = parsed ?? {};
    if (typeof tool !== 'string') return json(400, { error: 'missing "tool" (a tool name, e.g. "fs_grep_files")' });
    if (!args || typeof args !== 'object' || Array.isArray(args)) return json(400, { error: '"args" must be an object of the tool\'s arguments' });
    if (files !== null && (typeof files !== 'object' || Array.isArray(files) || Object.values(files).some((v) => typeof v !== 'string'))) {
      return json(400, { error: '"files" must be an object of path → text' });
    }
    if (typeof policyText !== 'string') return json(400, { error: '"policy" must be TOML or JSON text with [access] and/or [sandbox] tables' });
    return serialised(typeof project === 'string' ? project : null, async () => {
      let h;
      try {
        h = await host(policyText, project);
      } catch (e) {
        return json(400, { error: String(e?.message ?? e) });
      }
      if (!h.listTools().some((t) => t.name === tool)) {
        return json(404, { error: `no tool '${tool}'; available: ${h.listTools().map((t) => t.name).join(', ')}` });
      }
      const events = [];
      const unsubscribe = h.onEvent((e) => events.push(e));
      let result;
      try {
        result = await h.callTool(tool, args, { files });
      } catch (e) {
        if (isProjectChanged(e)) return json(409, { error: e.message });
        throw e;
      } finally {
        unsubscribe();
      }
      const { changed, ...outcome } = result;
      const reply = { outcome, changed, events };
      if (project == null) {
        // No project: the files live for this request, so they all come back.
        reply.files = {};
        for (const path of await h.listFiles()) reply.files[path] = await h.readFile(path);
      }
      return json(200, reply);
    });
  }

  async function mcpRoute(request, url) {
    if (!token) {
      return json(503, { error: '/mcp needs a bearer token: set JP_EDGE_TOKEN (a secret binding on workerd/Cloudflare, an environment variable on Deno and Node)' });
    }
    const auth = request.headers.get('authorization') ?? '';
    if (!auth.startsWith('Bearer ') || !sameSecret(auth.slice(7).trim(), token)) {
      return json(401, { error: 'send Authorization: Bearer <JP_EDGE_TOKEN>' }, { 'www-authenticate': 'Bearer' });
    }
    if (request.method !== 'POST') {
      return json(405, { error: `${request.method} /mcp: this server answers POST only (JSON responses, no SSE stream, no sessions)` }, { allow: 'POST' });
    }
    const body = await bodyText(request);
    if (body.tooLarge) return tooLarge();
    let message;
    try {
      message = JSON.parse(body.text);
    } catch (e) {
      return json(400, errors.failure(null, errors.PARSE_ERROR, `the body is not JSON: ${e.message}`));
    }
    const project = url.searchParams.get('project');
    return serialised(project, async () => {
      let h;
      try {
        h = await host(policy, project);
      } catch (e) {
        return json(400, errors.failure(message?.id, errors.INVALID_REQUEST, String(e?.message ?? e)));
      }
      const session = {
        tools: () => h.listTools(),
        hints: () => h.policyHints(),
        call: async (name, args) => {
          try {
            return await h.callTool(name, args);
          } catch (e) {
            if (!isProjectChanged(e)) throw e;
            return { tag: 'error', val: { message: e.message, trace: [], transient: true }, changed: [] };
          }
        },
      };
      const { status, body: out } = await answer(message, session);
      return out === undefined ? new Response(null, { status }) : json(status, out);
    });
  }

  return {
    async fetch(request) {
      const url = new URL(request.url);
      try {
        if (url.pathname === '/mcp') return await mcpRoute(request, url);
        if (bare && url.pathname === '/__bare' && request.method === 'POST') return await bare(request);
        if (url.pathname === '/' && request.method === 'POST') return await callRoute(request);
        if (url.pathname === '/' && request.method === 'GET') {
          return json(200, { service: 'jp-host edge function', call: 'POST / {tool, args, files?, policy?, project?}', mcp: 'POST /mcp (Authorization: Bearer <JP_EDGE_TOKEN>)' });
        }
        return json(404, { error: `no route ${request.method} ${url.pathname}; POST / calls a tool, /mcp speaks MCP` });
      } catch (e) {
        return json(500, { error: `the edge function failed: ${e?.message ?? e}` });
      }
    },
  };
}

class BadRequest extends Error {}
