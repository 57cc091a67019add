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

/** A tool call's deadline at the edge unless JP_EDGE_DEADLINE_MS says otherwise (ms). */
export const DEADLINE_MS = 10_000;

/** Projects whose component instances are kept for their next calls. */
const MAX_POOLS = 32;

/** Largest request body accepted (bytes); larger ones get 413. */
export const MAX_BODY = 8 << 20;
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

/** The body as text, refused above `MAX_BODY` (whatever Content-Length says). */
async function bodyText(request) {
  const declared = Number(request.headers.get('content-length') ?? 0);
  if (declared > MAX_BODY) return { tooLarge: true };
  const bytes = new Uint8Array(await request.arrayBuffer());
  if (bytes.length > MAX_BODY) return { tooLarge: true };
  return { text: new TextDecoder().decode(bytes) };
}

const tooLarge = () => json(413, { error: `the request body is larger than ${MAX_BODY} bytes; send fewer or smaller files` });

/**
 * The edge function. `options`:
 * - `jp`: the jp-web `WebAssembly.Module`;
 * - `components`: `{ name: { module, cores, tools? } }` — jco's JS module, its core modules
 *   (`{ file: WebAssembly.Module }`), and its tools when it does not describe itself;
 * - `storage(projectId)`: the `ProjectStorage` of a project (see www/jp.d.ts), or null when the
 *   engine keeps none;
 * - `token`: the bearer token `/mcp` requires (no token: `/mcp` answers 503);
 * - `policy`: the policy of `/mcp` calls (TOML; empty: the workspace read-write, nothing else);
 * - `bench`: also serve `GET /__bare?project=ID&path=P`, the file straight from storage with
 *   no jp at all — the benchmark's baseline on the same engine (JP_EDGE_BENCH=1);
 * - `limits`: `{ deadlineMs, memoryMiB }`: each call's deadline, and the memory cap the engine
 *   was started with (see edge.mjs).
 */
export function createHandler({ jp, components, storage = () => null, token = '', policy = '', limits = {}, bench = false }) {
  let described = null; // the tools each component described, once
  const queues = new Map(); // project id → the tail of its calls: one at a time per project
  // project id → its live component instances, reused by its next calls (never across
  // projects); the least recently used projects' are dropped.
  const pools = new Map();
  const pool = (project) => {
    if (!project) return null;
    const p = pools.get(project) ?? new Map();
    pools.delete(project);
    pools.set(project, p);
    if (pools.size > MAX_POOLS) pools.delete(pools.keys().next().value);
    return p;
  };

  async function host(policyText, projectStorage, project) {
    await loadJp(jp);
    const h = await Host.create({ db: null, policy: policyText, storage: projectStorage, limits, instances: pool(project) });
    const first = described === null;
    if (first) described = {};
    for (const [name, c] of Object.entries(components)) {
      const tools = await h.registerComponent(name, c.module, c.cores, first ? (c.tools ?? null) : described[name]);
      if (first) described[name] = h.listTools().filter((t) => tools.includes(t.name));
    }
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
        h = await host(policyText, await projectStorage(project), typeof project === 'string' ? project : null);
      } catch (e) {
        return json(400, { error: String(e?.message ?? e) });
      }
      if (!h.listTools().some((t) => t.name === tool)) {
        return json(404, { error: `no tool '${tool}'; available: ${h.listTools().map((t) => t.name).join(', ')}` });
      }
      const events = [];
      h.onEvent((e) => events.push(e));
      const { changed, ...outcome } = await h.callTool(tool, args, { files });
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
        h = await host(policy, await projectStorage(project ?? undefined), project);
      } catch (e) {
        return json(400, errors.failure(message?.id, errors.INVALID_REQUEST, String(e?.message ?? e)));
      }
      const session = {
        tools: () => h.listTools(),
        hints: () => h.policyHints(),
        call: (name, args) => h.callTool(name, args),
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
        if (bench && url.pathname === '/__bare') {
          const value = await (await storage(url.searchParams.get('project'))).get(url.searchParams.get('path'));
          return value instanceof Uint8Array ? new Response(value) : json(404, { error: 'no such file' });
        }
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
