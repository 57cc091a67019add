// MCP Streamable HTTP for the edge function (`/mcp`): JSON-RPC over POST, answered with JSON
// (no SSE stream, no sessions: each request stands alone, which the protocol allows). The tools
// are the host's — the same list, schemas (the core's D06 → JSON Schema) and policy as
// everywhere — described and answered by the core's agent surface (`agentTool`, `agentResult`,
// as `jp mcp` does), and a call goes through `Host.callTool` like a `POST /` call.
//
// Two eras, as `jp mcp` serves them (native/src/mcp):
// - 2024-11-05 … 2025-11-25: `initialize`, then requests. A policy inquiry is denied at once
//   with the reason (nobody can be asked: these versions ask through server-to-client requests,
//   which need a stream this server does not keep); a `requestState` is not read.
// - 2026-07-28: no handshake. Every request names its version and the client's capabilities in
//   `params._meta` (`io.modelcontextprotocol/protocolVersion`, `…/clientCapabilities`), the
//   same version in the `MCP-Protocol-Version` header; `server/discover` tells what is served;
//   list results carry `ttlMs` and `cacheScope` (SEP-2549), every result `resultType`. A policy
//   inquiry of a client that declared form elicitation becomes an `input_required` result, and
//   the call is re-run on the retry with the answers (mrtr.js: how, and how it differs from
//   `jp mcp`); a client without it is denied at once, told why. Headers that contradict the
//   body (-32020) and versions not served (-32022, with the list) are HTTP 400, as rmcp answers.

import { agentTool, agentResult } from '../../www/jp.js';
import { answerOf, answering, asksByResult, CANNOT_ASK, elicitation, KEY, NO_STATE_KEY, replaying, StaleState } from './mrtr.js';

/** The protocol versions served with `initialize`, newest first; a client asking for another
 * gets the newest. */
export const PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'];
/** The versions without `initialize` (negotiated by `server/discover`, named per request). */
export const MODERN_VERSIONS = ['2026-07-28'];
/** Every version served, oldest first (as `jp mcp`'s `server/discover` lists them). */
const SUPPORTED_VERSIONS = [...PROTOCOL_VERSIONS].reverse().concat(MODERN_VERSIONS);

const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;
const METHOD_NOT_FOUND = -32601;
const INVALID_PARAMS = -32602;
/** 2026-07-28: a header that contradicts the body (HTTP 400). */
const HEADER_MISMATCH = -32020;
/** 2026-07-28: a protocol version this server does not speak (HTTP 400), `data` saying which. */
const UNSUPPORTED_PROTOCOL_VERSION = -32022;

const META_VERSION = 'io.modelcontextprotocol/protocolVersion';
const META_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';

/** `tools/list` on 2026-07-28: fresh for a minute, for this client only (as `jp mcp`). */
const LISTS_TTL_MS = 60_000;
/** The `_meta` key naming whose handles a request uses (as `jp mcp --http` reads it). */
const SCOPE_META = 'jp-host/scope';
/** Why a stateful command's policy question is denied at the edge. */
const STATEFUL_CANNOT_ASK = 'a command on a live handle cannot be asked about mid-way here (asking by result would send it to the session twice); allow it in the policy';

const SERVER_INFO = { name: 'jp-edge', version: '0.1.0' };
const INSTRUCTIONS = 'jp-host tools at the edge: every call runs sandboxed, its file requests decided by the access policy. `?project=ID` selects the project whose files the tools see.';

const reply = (id, result) => ({ jsonrpc: '2.0', id, result });
const failure = (id, code, message, data) => ({ jsonrpc: '2.0', id: id ?? null, error: { code, message, ...(data === undefined ? {} : { data }) } });
const ok = (body) => ({ status: 200, body });

/** An `Mcp-Name` header's value: plain, or `=?base64?…?=` (SEP-2243). */
function headerValue(raw) {
  const m = /^=\?base64\?(.*)\?=$/i.exec(raw);
  if (!m) return raw;
  try { return new TextDecoder().decode(Uint8Array.from(atob(m[1]), (c) => c.charCodeAt(0))); } catch { return null; }
}

/**
 * The version a 2026-07-28 request speaks, from its `_meta` checked against its headers: `{
 * version, capabilities }`, `{ refused: {status, body} }`, or null for a request of the older
 * era (no version in `_meta`).
 */
function modernRequest(id, method, params, header) {
  const meta = params?._meta;
  const version = meta && typeof meta === 'object' ? meta[META_VERSION] : undefined;
  if (version === undefined) {
    if (method !== 'server/discover') return null;
    return { refused: ok(failure(id, INVALID_PARAMS, `server/discover needs params._meta with "${META_VERSION}" and "${META_CAPABILITIES}" (MCP 2026-07-28)`)) };
  }
  const mismatch = (message) => ({ refused: { status: 400, body: failure(id, HEADER_MISMATCH, message) } });
  const named = header('mcp-protocol-version');
  if (named === null) return mismatch(`request _meta names protocol version ${version}: send it in the MCP-Protocol-Version header too`);
  if (named !== version) return mismatch(`the MCP-Protocol-Version header (${named}) does not match the request's _meta protocolVersion (${version})`);
  const headerMethod = header('mcp-method');
  if (headerMethod !== null && headerMethod !== method) return mismatch(`the Mcp-Method header (${headerMethod}) does not match the body's method (${method})`);
  const headerName = header('mcp-name');
  if (headerName !== null && method === 'tools/call' && headerValue(headerName) !== params.name) {
    return mismatch(`the Mcp-Name header does not match the body's params.name (${params.name})`);
  }
  if (!MODERN_VERSIONS.includes(version)) {
    return { refused: { status: 400, body: failure(id, UNSUPPORTED_PROTOCOL_VERSION, `protocol version ${version} is not served here; use one of ${SUPPORTED_VERSIONS.join(', ')}`, { supported: SUPPORTED_VERSIONS, requested: version }) } };
  }
  const capabilities = meta[META_CAPABILITIES];
  return { version, capabilities: capabilities && typeof capabilities === 'object' ? capabilities : {} };
}

/**
 * Answer one JSON-RPC message (already parsed) with `{ status, body }`; `body` is undefined for
 * a notification or a response (202, nothing to say). `session` gives the tools and runs calls:
 * `{ tools(): [{name, summary, description, inputSchema}], hints(), call(name, args, {inquirer,
 * signal}) → outcome, states }` — `states` seals and opens requestStates (mrtr.js
 * `requestStates`, bound to the caller: `seal(state)`, `open(text, {tool, args})`).
 * `header(name)` reads a request header (null when absent).
 */
export async function answer(message, session, header = () => null) {
  if (Array.isArray(message)) {
    return { status: 400, body: failure(null, INVALID_REQUEST, 'batches are not supported: send one JSON-RPC message per request') };
  }
  if (!message || typeof message !== 'object' || message.jsonrpc !== '2.0') {
    return { status: 400, body: failure(message?.id, INVALID_REQUEST, 'not a JSON-RPC 2.0 message: expected {"jsonrpc":"2.0", "method", …}') };
  }
  if (!('method' in message)) return { status: 202 }; // a response to nothing we asked
  const { id, method } = message;
  const params = message.params && typeof message.params === 'object' ? message.params : {};
  if (id === undefined) return { status: 202 }; // notifications: initialized, cancelled, …
  const modern = modernRequest(id, method, params, header);
  if (modern?.refused) return modern.refused;
  // 2026-07-28 results say what they are (`complete`, or `input_required` for a question).
  const done = (result) => ok(reply(id, modern ? { resultType: 'complete', ...result } : result));
  switch (method) {
    case 'initialize': {
      const asked = params.protocolVersion;
      const protocolVersion = PROTOCOL_VERSIONS.includes(asked) ? asked : PROTOCOL_VERSIONS[0];
      return ok(reply(id, { protocolVersion, capabilities: { tools: { listChanged: false } }, serverInfo: SERVER_INFO, instructions: INSTRUCTIONS }));
    }
    case 'server/discover':
      // As `jp mcp` answers it: every version, oldest first; the server's info in `_meta`.
      return done({
        supportedVersions: SUPPORTED_VERSIONS,
        capabilities: { tools: {} },
        instructions: INSTRUCTIONS,
        ttlMs: 0,
        cacheScope: 'private',
        _meta: { 'io.modelcontextprotocol/serverInfo': SERVER_INFO },
      });
    case 'ping':
      return done({});
    case 'tools/list': {
      const hints = session.hints();
      const tools = session.tools().map((t) => agentTool(t, hints));
      return done(modern ? { ttlMs: LISTS_TTL_MS, cacheScope: 'private', tools } : { tools });
    }
    case 'tools/call': {
      const { name, arguments: args = {} } = params;
      if (typeof name !== 'string') return ok(failure(id, INVALID_PARAMS, 'tools/call needs params.name (a tool name from tools/list)'));
      if (!args || typeof args !== 'object' || Array.isArray(args)) {
        return ok(failure(id, INVALID_PARAMS, `tools/call ${name}: params.arguments must be an object`));
      }
      if (!session.tools().some((t) => t.name === name)) {
        return ok(failure(id, INVALID_PARAMS, `no tool '${name}'; available: ${session.tools().map((t) => t.name).join(', ')}`));
      }
      // Whose handles a stateful tool's command uses: the caller's, in the scope it names.
      const scope = params._meta?.[SCOPE_META] ?? '';
      if (typeof scope !== 'string' || scope.length > 128 || /\p{Cc}/u.test(scope)) {
        return done({ content: [{ type: 'text', text: `_meta["${SCOPE_META}"] must be a string of at most 128 characters without control characters (it names whose handles this request uses)` }], isError: true });
      }
      // Older versions ask nobody (and know no requestState): a question is denied at once
      // with the reason, as on `POST /`. So is a stateful tool's: asking by result re-runs the
      // call, and a command sent to a live session twice (each committed) would be done twice.
      if (!modern) return done(agentResult(name, await session.call(name, args, { inquirer: null, scope })));
      if (session.tools().find((t) => t.name === name)?.actions?.length) {
        const inquirer = () => STATEFUL_CANNOT_ASK;
        return done(agentResult(name, await session.call(name, args, { inquirer, scope })));
      }
      // The retry of a call that asked: its answers so far, and the one to the question it
      // asked last. A state that resumes nothing is invalid params (SEP-2322: a server rejects
      // state it cannot verify with a JSON-RPC error).
      let answers = [];
      if (params.requestState !== undefined) {
        try {
          const { answers: before, asking } = await session.states.open(params.requestState, { tool: name, args });
          answers = [...before, { method: asking.method, target: asking.target, answer: answerOf(params.inputResponses?.[KEY]) }];
        } catch (e) {
          if (e instanceof StaleState) return ok(failure(id, INVALID_PARAMS, e.message));
          throw e;
        }
      }
      if (!asksByResult(modern.capabilities) || !session.states.ready) {
        // A client without form elicitation cannot be asked, nor anybody where no key seals the
        // state: denied at once, saying why.
        const answer = answering(answers);
        const why = session.states.ready ? CANNOT_ASK : NO_STATE_KEY;
        const inquirer = (q) => answer(q) ?? why;
        return done(agentResult(name, await session.call(name, args, { inquirer })));
      }
      const run = replaying(answers);
      const outcome = await session.call(name, args, { inquirer: run.inquirer, signal: run.signal });
      const asked = run.asked();
      if (!asked) return done(agentResult(name, outcome));
      // Stopped at its question (nothing of it committed): ask, with every answer so far.
      const requestState = await session.states.seal({ tool: name, args, answers, asking: asked });
      return ok(reply(id, { resultType: 'input_required', inputRequests: { [KEY]: elicitation(asked) }, requestState }));
    }
    default: {
      const served = modern ? 'server/discover, ping, tools/list, tools/call are' : 'initialize, ping, tools/list, tools/call are';
      return ok(failure(id, METHOD_NOT_FOUND, `method '${method}' is not served here (${served})`));
    }
  }
}

export const errors = { PARSE_ERROR, INVALID_REQUEST, failure };
