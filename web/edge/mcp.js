// MCP Streamable HTTP for the edge function (`/mcp`): JSON-RPC over POST, answered with JSON
// (no SSE stream, no sessions: each request stands alone, which the protocol allows). The tools
// are the host's — the same list, schemas (the core's D06 → JSON Schema) and policy as
// everywhere — described and answered by the core's agent surface (`agentTool`, `agentResult`,
// as `jp mcp` does), and a call goes through `Host.callTool` like a `POST /` call.

import { agentTool, agentResult } from '../../www/jp.js';

/** The protocol versions served, newest first; a client asking for another gets the newest. */
export const PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'];

const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;
const METHOD_NOT_FOUND = -32601;
const INVALID_PARAMS = -32602;

const reply = (id, result) => ({ jsonrpc: '2.0', id, result });
const failure = (id, code, message) => ({ jsonrpc: '2.0', id: id ?? null, error: { code, message } });

/**
 * Answer one JSON-RPC message (already parsed) with `{ status, body }`; `body` is undefined for
 * a notification or a response (202, nothing to say). `session` gives the tools and runs calls:
 * `{ tools(): [{name, summary, description, inputSchema}], hints(), call(name, args) → outcome }`.
 */
export async function answer(message, session) {
  if (Array.isArray(message)) {
    return { status: 400, body: failure(null, INVALID_REQUEST, 'batches are not supported: send one JSON-RPC message per request') };
  }
  if (!message || typeof message !== 'object' || message.jsonrpc !== '2.0') {
    return { status: 400, body: failure(message?.id, INVALID_REQUEST, 'not a JSON-RPC 2.0 message: expected {"jsonrpc":"2.0", "method", …}') };
  }
  if (!('method' in message)) return { status: 202 }; // a response to nothing we asked
  const { id, method, params = {} } = message;
  if (id === undefined) return { status: 202 }; // notifications: initialized, cancelled, …
  switch (method) {
    case 'initialize': {
      const asked = params.protocolVersion;
      const protocolVersion = PROTOCOL_VERSIONS.includes(asked) ? asked : PROTOCOL_VERSIONS[0];
      return {
        status: 200,
        body: reply(id, {
          protocolVersion,
          capabilities: { tools: { listChanged: false } },
          serverInfo: { name: 'jp-edge', version: '0.1.0' },
          instructions: 'jp-host tools at the edge: every call runs sandboxed, its file requests decided by the access policy. `?project=ID` selects the project whose files the tools see.',
        }),
      };
    }
    case 'ping':
      return { status: 200, body: reply(id, {}) };
    case 'tools/list': {
      const hints = session.hints();
      return { status: 200, body: reply(id, { tools: session.tools().map((t) => agentTool(t, hints)) }) };
    }
    case 'tools/call': {
      const { name, arguments: args = {} } = params;
      if (typeof name !== 'string') return { status: 200, body: failure(id, INVALID_PARAMS, 'tools/call needs params.name (a tool name from tools/list)') };
      if (!args || typeof args !== 'object' || Array.isArray(args)) {
        return { status: 200, body: failure(id, INVALID_PARAMS, `tools/call ${name}: params.arguments must be an object`) };
      }
      if (!session.tools().some((t) => t.name === name)) {
        return { status: 200, body: failure(id, INVALID_PARAMS, `no tool '${name}'; available: ${session.tools().map((t) => t.name).join(', ')}`) };
      }
      return { status: 200, body: reply(id, agentResult(name, await session.call(name, args))) };
    }
    default:
      return { status: 200, body: failure(id, METHOD_NOT_FOUND, `method '${method}' is not served here (initialize, ping, tools/list, tools/call are)`) };
  }
}

export const errors = { PARSE_ERROR, INVALID_REQUEST, failure };
