// An edge function hosting sandboxed tools, the same on every engine (workerd, Deno, Node): the
// engine's entry (workerd.js, deno.js, node.mjs) gives it the wasm modules and the storage, and
// it answers `(Request) → Response`. The policy is enforced by the same core as everywhere.
//
//   POST /     {tool, args, files?, policy?, project?} → {outcome, changed, events, files?}
//              With `project` (an id), the call runs on that project's stored files (`files`
//              written first) and its changes persist — all of them, or none when it fails.
//              Without, the files live for the request and all of them come back.
//   /mcp       MCP Streamable HTTP (JSON responses, no sessions); `?project=ID` picks the
//              project. Versions 2024-11-05 to 2025-11-25 (`initialize`) and 2026-07-28
//              (`server/discover`, stateless requests), see mcp.js.
//
// A policy inquiry (a sensitive path such as `.env`, a request no rule covers) is denied at once
// with the reason on `POST /` and on MCP versions before 2026-07-28: nobody can be asked. On
// 2026-07-28 a client that declared form elicitation is asked by an `input_required` result and
// the call re-runs on its retry with the answers (mrtr.js; unlike `jp mcp`, which suspends the
// call, a re-run repeats what the tool did before its question, e.g. an http.post).
//
// Secrets: the variables the operator's policy names in `network.envs` (a tool's `${VAR}`
// headers) are read from the engine's environment — workerd/Cloudflare: the Worker's bindings
// (secrets, vars), Deno: Deno.env, Node: process.env — by the entry's `env(name)`, and given to
// every call's host (`setSecrets`): substituted into the allowed requests, scrubbed from what
// the tool reads back. Only those names, never the function's own settings (JP_EDGE_*), and no
// value is ever logged or returned.
//
// Every route needs `Authorization: Bearer <token>` (issue 24): the operator's token
// (JP_EDGE_TOKEN) opens every project and project-less calls; a project token (JP_EDGE_TOKENS,
// JSON {"<token>": ["project-id", …]}) opens only its projects. No token configured: 503. The
// operator's policy (JP_EDGE_POLICY) bounds every call: a request's `policy` may only narrow it
// (decided by the core, `policyExceeds`; wider → 403 naming what was refused). A browser cannot
// drive it by accident: bodies must be `application/json`, an `Origin` other than the function's
// own is refused unless JP_EDGE_ALLOWED_ORIGINS lists it (then CORS, preflight included), and
// where the entry says so (local engines) `Host` must be one of JP_EDGE_HOSTS.
import { Host, loadJp, policyExceeds } from '../../www/jp.js';
import { answer, errors } from './mcp.js';
import { requestStates } from './mrtr.js';
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

/** The host names a local engine answers by default (DNS rebinding: a page whose name resolves
 * to 127.0.0.1 sends its own name as `Host`). */
export const LOOPBACK_HOSTS = ['127.0.0.1', 'localhost', '[::1]'];

/** A comma-separated list (an environment variable) as an array; empty entries dropped. */
export const list = (text) => (Array.isArray(text) ? text : String(text ?? '').split(',')).map((s) => s.trim()).filter((s) => s);

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
  const declared = request.headers.get('content-length');
  let tooBig = Number(declared ?? 0) > MAX_BODY;
  const reader = request.body.getReader();
  const chunks = [];
  let size = 0;
  for (;;) {
    if (tooBig) {
      // A client still sending must receive the 413, not a reset connection: a body of a known
      // length up to DRAIN_MAX is read to its end and dropped before the answer; any other is
      // answered at once while the rest is read and dropped (up to DRAIN_MAX, then cancelled).
      const drained = drain(reader, size);
      if (declared !== null && Number(declared) <= DRAIN_MAX) await drained;
      return { tooLarge: true };
    }
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    tooBig ||= size > MAX_BODY;
    if (!tooBig) chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) { bytes.set(c, at); at += c.length; }
  return { text: new TextDecoder().decode(bytes) };
}

/** Read and drop the rest of a body, up to DRAIN_MAX bytes in all, then cancel it. */
function drain(reader, size) {
  return (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      size += value.length;
      if (size > DRAIN_MAX) return reader.cancel();
    }
  })().catch(() => {});
}

export const tooLarge = () => json(413, { error: `the request body is larger than ${MAX_BODY} bytes; send fewer or smaller files` });

/** A stale commit (another writer moved the project during the call): 409, nothing stored. */
const isProjectChanged = (e) => e?.name === 'ProjectChanged';

/**
 * The edge function. `options`:
 * - `jp`: the jp-web `WebAssembly.Module`;
 * - `components`: `{ name: { module, cores, tools?, knowledgeBase? } }` — jco's JS module, its
 *   core modules (`{ file: WebAssembly.Module }`), its tools when it does not describe itself,
 *   and the project directory it reads its topic from (`learn`, see www/jp.js);
 * - `storage(projectId)`: the `ProjectStorage` of a project (see www/jp.d.ts), or null when the
 *   engine keeps none;
 * - `token`: the bearer token `/mcp` requires (no token: `/mcp` answers 503);
 * - `policy`: the policy of `/mcp` calls (TOML; empty: the workspace read-write, nothing else);
 * - `bench`: also serve `POST /__bare` (bare.js): a file of the project with no jp at all, read
 *   from storage on every call or from a kept copy, or a GET of a 127.0.0.1 URL with the
 *   operator's secrets in its headers, for the same request shape as a call — the benchmark's
 *   baselines on the same engine (JP_EDGE_BENCH=1);
 * - `limits`: `{ deadlineMs, memoryMiB }`: each call's deadline, and the memory cap the engine
 *   was started with (see edge.mjs);
 * - `env(name)`: a variable of the engine's environment (a string, or undefined), for the
 *   secrets the operator's policy names (`access.secrets`, `network.envs`);
 * - `stateKey`: the secret MCP requestStates are sealed with (JP_EDGE_STATE_KEY; default: a key
 *   derived from the operator's `token`; with neither, nobody is asked through input_required).
 */
/** The tools each component described, by its module: once per isolate, for every handler (on
 * workerd a Durable Object each) and every host of theirs — whose registration of the same list
 * is then shared too (`Host.registerComponent`). A component's own description, the same for
 * every project. */
const describedOnce = new WeakMap();

export function createHandler({ jp, validator, components, storage = () => null, token = '', tokens = '', policy = '', allowedOrigins = '', hosts = null, limits = {}, bench = false, env = () => undefined, stateKey = '' }) {
  const access = accessControl({ token, tokens, allowedOrigins, hosts });
  // Only a secret nobody else holds seals a state: the operator's key or token, never a project
  // token (whose holder could rebuild the key) and never a binding stringified.
  const states = requestStates({ secret: typeof stateKey === 'string' && stateKey ? stateKey : (typeof token === 'string' ? token : '') });
  let secrets = null; // { names, values: { NAME: value } } of the operator's `access.secrets` / `network.envs`, read once
  const queues = new Map(); // project id → the tail of its calls: one at a time per project
  // project id → its host, kept for its next calls (never shared across projects): its
  // component instances, its policy and its copy of the files (reused while the storage's
  // version holds). The least recently used beyond MAX_KEPT are dropped.
  const kept = new Map();
  const bare = bench ? bareHandler(storage, bodyText, async () => (await operatorSecrets()).values) : null;

  /** The secrets of every call: the names the operator's policy lets `${VAR}` headers use (a
   * host under that policy alone says which), their values from the engine's environment. */
  function operatorSecrets() {
    secrets ??= (async () => {
      await loadJp(jp, validator);
      // The function's own settings are never a tool's, whatever the policy says.
      const names = (await Host.create({ db: null, policy: '', ceiling: policy })).secretNames().filter((n) => !n.startsWith('JP_EDGE_'));
      const values = {};
      for (const name of names) {
        const value = env(name);
        if (typeof value === 'string' && value !== '') values[name] = value;
      }
      return { names, values };
    })();
    secrets.catch(() => { secrets = null; });
    return secrets;
  }

  async function newHost(policyText, projectStorage, instances) {
    await loadJp(jp, validator);
    const h = await Host.create({ db: null, policy: policyText, ceiling: policy, storage: projectStorage, limits, instances });
    h.setSecrets((await operatorSecrets()).values);
    for (const [name, c] of Object.entries(components)) {
      const known = describedOnce.get(c.module);
      const usable = known?.name === name && known.cores === c.cores && known.given === (c.tools ?? null) ? known.tools : null;
      const tools = await h.registerComponent(name, c.module, c.cores, usable ?? c.tools ?? null, { knowledgeBase: c.knowledgeBase ?? null });
      if (!usable) describedOnce.set(c.module, { name, cores: c.cores, given: c.tools ?? null, tools: h.listTools().filter((t) => tools.includes(t.name)) });
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
    if (h.policyText !== policyText || h.ceilingText !== policy) h.setPolicy(policyText, { ceiling: policy });
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

  async function callRoute(request, principal) {
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
    const denied = principal.refuses(project ?? null);
    if (denied) return denied;
    // The operator's policy is a ceiling: a request's policy may only narrow it.
    await loadJp(jp, validator);
    let refused;
    try {
      refused = policyExceeds(policyText, policy);
    } catch (e) {
      return json(400, { error: String(e?.message ?? e) });
    }
    if (refused.length > 0) {
      return json(403, { error: `the request's policy grants more than the operator's policy (JP_EDGE_POLICY) allows: ${refused.join('; ')}; send a narrower policy, or none to use the operator's`, refused });
    }
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
        // A stateful tool's handles belong to the caller's token and the `scope` it names, in
        // this project (without one they could not outlive the request).
        const stateful = h.tools.get(tool)?.actions?.length > 0 && typeof args.action === 'string';
        if (stateful && typeof project !== 'string') {
          return json(400, { error: `tool '${tool}': handles are kept only for a project; send "project"` });
        }
        const scope = typeof parsed.scope === 'string' ? parsed.scope.slice(0, 128) : '';
        result = stateful
          ? await h.callTool(tool, args, { files, owner: `${await principal.owner()}/${scope}` })
          : await h.callTool(tool, args, { files });
      } catch (e) {
        if (isProjectChanged(e)) return json(409, { error: e.message });
        // The request's own files are writes too, decided by the same (bounded) policy.
        if (e?.name === 'FilesRefused') return json(403, { error: e.message });
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

  async function mcpRoute(request, url, principal) {
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
    const denied = principal.refuses(project);
    if (denied) return denied;
    return serialised(project, async () => {
      let h;
      try {
        // No policy of the client's own here: the operator's, as it is.
        h = await host('', project);
      } catch (e) {
        return json(400, errors.failure(message?.id, errors.INVALID_REQUEST, String(e?.message ?? e)));
      }
      const session = {
        tools: () => h.listTools(),
        hints: () => h.policyHints(),
        // `inquirer`: null denies every question at once with the reason; `signal` stops the
        // call (mcp.js stops one at a question it asks by result: nothing is committed).
        call: async (name, args, { inquirer = null, signal = null, scope = '' } = {}) => {
          // A stateful tool's handles belong to the caller: its token, this project, and the
          // scope it names (`_meta["jp-host/scope"]`); without a project nothing outlives the
          // request, so a handle cannot be kept.
          const stateful = h.tools.get(name)?.actions?.length > 0;
          if (stateful && project === null && typeof args.action === 'string') {
            return { tag: 'error', val: { message: `tool '${name}': handles are kept only for a project; call /mcp?project=ID`, trace: [], transient: false }, changed: [] };
          }
          try {
            if (stateful) return await h.callTool(name, args, { inquirer, owner: `${await principal.owner()}/${scope}` });
            return await h.callTool(name, args, { inquirer, signal });
          } catch (e) {
            if (!isProjectChanged(e)) throw e;
            return { tag: 'error', val: { message: e.message, trace: [], transient: true }, changed: [] };
          }
        },
        // requestStates bound to this caller (its bearer token) and project.
        states: {
          ready: states.ready,
          seal: (state) => states.seal({ ...state, bearer: principal.bearer, project }),
          open: (text, call) => states.open(text, { ...call, bearer: principal.bearer, project }),
        },
      };
      const { status, body: out } = await answer(message, session, (name) => request.headers.get(name));
      return out === undefined ? new Response(null, { status }) : json(status, out);
    });
  }

  async function route(request, url, principal) {
    if (url.pathname === '/mcp') return mcpRoute(request, url, principal);
    if (bare && url.pathname === '/__bare' && request.method === 'POST') {
      // The benchmark's baseline: the operator's token only (it reaches any project).
      return principal.refuses(null) ?? bare(request);
    }
    if (url.pathname === '/' && request.method === 'POST') return callRoute(request, principal);
    if (url.pathname === '/' && request.method === 'GET') {
      return json(200, { service: 'jp-host edge function', call: 'POST / {tool, args, files?, policy?, project?}', mcp: 'POST /mcp?project=ID', auth: 'Authorization: Bearer <token>' });
    }
    return json(404, { error: `no route ${request.method} ${url.pathname}; POST / calls a tool, /mcp speaks MCP` });
  }

  return {
    /** The checks every request passes before anything is read (see `accessControl`):
     * `{ response }` to send as it is, or `{ principal, cors }`. */
    gate: (request) => access.gate(request),
    /** The secrets the operator's policy names and whether each has a value here (never the
     * values): an entry reads them at start, so that an environment it may not read fails
     * there, and says which are missing. */
    async secrets() {
      const { names, values } = await operatorSecrets();
      return names.map((name) => ({ name, set: name in values }));
    },
    async fetch(request) {
      let url;
      try {
        url = new URL(request.url);
      } catch (e) {
        return json(400, { error: `malformed request URL: ${e?.message ?? e}` });
      }
      const gated = access.gate(request, url);
      if (gated.response) return gated.response;
      try {
        return withHeaders(await route(request, url, gated.principal), gated.cors);
      } catch (e) {
        return withHeaders(json(500, { error: `the edge function failed: ${e?.message ?? e}` }), gated.cors);
      }
    },
  };
}

/** `response` with `headers` added (CORS). */
function withHeaders(response, headers) {
  if (!headers) return response;
  const out = new Response(response.body, response);
  for (const [k, v] of Object.entries(headers)) out.headers.set(k, v);
  return out;
}

/**
 * Who may call, from where: the bearer tokens, the allowed origins and host names. `gate`
 * answers `{ response }` (a refusal, or a CORS preflight's answer) or `{ principal, cors }`:
 * `principal.refuses(projectId | null)` is a 403 response for a project the token does not
 * open, else null, and `principal.bearer` the token it sent (MCP requestStates are bound to
 * it); `cors` the headers an allowed foreign origin gets.
 */
export function accessControl({ token = '', tokens = '', allowedOrigins = '', hosts = null }) {
  let projectTokens = [];
  let configError = null;
  if (String(tokens ?? '').trim()) {
    try {
      const parsed = typeof tokens === 'string' ? JSON.parse(tokens) : tokens;
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('expected an object');
      projectTokens = Object.entries(parsed).map(([t, ids]) => {
        if (!Array.isArray(ids) || ids.some((id) => typeof id !== 'string' || !PROJECT_ID.test(id))) {
          throw new Error(`the projects of a token must be a list of project ids`);
        }
        if (t.length < 16) throw new Error('a project token must be at least 16 characters');
        return [t, new Set(ids)];
      });
    } catch (e) {
      configError = `JP_EDGE_TOKENS is not valid: ${e.message}; write JSON {"<token of 16+ characters>": ["project-id", …]}`;
    }
  }
  const origins = new Set(list(allowedOrigins));
  const hostNames = hosts === null ? null : new Set(list(hosts).map((h) => h.toLowerCase()));
  const operator = { refuses: () => null };
  const projectPrincipal = (ids) => ({
    refuses: (project) => (typeof project === 'string' && ids.has(project)
      ? null
      : json(403, { error: project == null
        ? 'this token opens only its projects: name one with "project" (or ?project= for /mcp)'
        : `this token does not open project '${project}'` })),
  });

  function gate(request, url = null) {
    try {
      url ??= new URL(request.url);
    } catch (e) {
      return { response: json(400, { error: `malformed request URL or Host: ${e?.message ?? e}` }) };
    }
    // Host: a page on another name that resolves here (DNS rebinding) is refused.
    if (hostNames) {
      const host = (request.headers.get('host') ?? url.host).toLowerCase();
      const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.replace(/:\d+$/, '');
      if (!hostNames.has(name)) {
        return { response: json(400, { error: `Host '${host}' is not served here; list it in JP_EDGE_HOSTS` }) };
      }
    }
    // Origin: another site's page may not drive the function unless the operator lists it.
    const origin = request.headers.get('origin');
    let cors = null;
    if (origin !== null && origin !== url.origin) {
      if (!origins.has(origin)) {
        return { response: json(403, { error: `requests from the web origin ${origin} are refused; the operator can list it in JP_EDGE_ALLOWED_ORIGINS` }) };
      }
      cors = { 'access-control-allow-origin': origin, vary: 'Origin', 'access-control-expose-headers': 'content-type, www-authenticate' };
    }
    if (request.method === 'OPTIONS') {
      return { response: new Response(null, { status: 204, headers: { ...(cors ?? {}), 'access-control-allow-methods': 'GET, POST', 'access-control-allow-headers': 'authorization, content-type, mcp-protocol-version, mcp-session-id, accept', 'access-control-max-age': '600', allow: 'GET, POST, OPTIONS' } }) };
    }
    const refuse = (status, error, headers = {}) => ({ response: withHeaders(json(status, { error }, headers), cors) });
    if (configError) return refuse(503, configError);
    if (!token && projectTokens.length === 0) {
      return refuse(503, 'this edge function has no token: set JP_EDGE_TOKEN (the operator\'s; a secret binding on workerd/Cloudflare, an environment variable on Deno and Node) and optionally JP_EDGE_TOKENS (per project)');
    }
    const auth = request.headers.get('authorization') ?? '';
    const given = auth.startsWith('Bearer ') ? auth.slice(7).trim() : '';
    // Every configured token is compared, in constant time each, whatever matched before.
    let principal = null;
    if (given && token && sameSecret(given, token)) principal = operator;
    for (const [t, ids] of projectTokens) {
      if (given && sameSecret(given, t) && principal === null) principal = projectPrincipal(ids);
    }
    if (principal === null) {
      return refuse(401, 'send Authorization: Bearer <token> (the operator\'s JP_EDGE_TOKEN, or a project token from JP_EDGE_TOKENS)', { 'www-authenticate': 'Bearer' });
    }
    if (request.method === 'POST') {
      const type = (request.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase();
      if (type !== 'application/json') {
        return refuse(415, `send the body as Content-Type: application/json (got ${type ? `'${type}'` : 'none'})`);
      }
    }
    // The token that called: a requestState is bound to it (mrtr.js), and so are the handles
    // of stateful tools (`owner()`: a digest of it, never the token itself).
    const owner = () => crypto.subtle.digest('SHA-256', new TextEncoder().encode(given))
      .then((d) => [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, '0')).join(''));
    return { principal: { ...principal, bearer: given, owner }, cors };
  }
  return { gate };
}

class BadRequest extends Error {}
