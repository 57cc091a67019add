// The edge function on Node: `node web/edge/node.mjs --port N` (or `npm run edge -- --engine
// node`). Projects live in memory for the life of the process. JP_EDGE_TOKEN (the operator's)
// and JP_EDGE_TOKENS (per project) are the bearer tokens every route needs; JP_EDGE_HOSTS the
// host names it answers to (default: loopback names); JP_EDGE_SERVED the directory of the user's
// components it serves (default www/components, see modules.mjs). The secrets the operator's
// policy names (`network.envs` of JP_EDGE_POLICY) come from process.env.
//
// The request body is handed on as a stream (the handler reads it with a cap, never holding it
// past the cap), a malformed request line or `Host` gets 400 and the server goes on serving, and
// no error of one request ends the process.
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { createHandler, DEADLINE_MS, LOOPBACK_HOSTS } from './handler.js';
import { compiledModules } from './modules.mjs';
import { memoryStorage, secretsNote } from './common.js';

const env = (k) => process.env[k] ?? '';

/** The handler with Node's modules and in-memory projects (or `storage`: id → ProjectStorage). */
export async function nodeHandler({ token = env('JP_EDGE_TOKEN'), tokens = env('JP_EDGE_TOKENS'), policy = env('JP_EDGE_POLICY'), allowedOrigins = env('JP_EDGE_ALLOWED_ORIGINS'), hosts = env('JP_EDGE_HOSTS') || LOOPBACK_HOSTS, faults = env('JP_EDGE_FAULTS') === '1', storage = memoryStorage(), environment = (name) => process.env[name], stateKey = env('JP_EDGE_STATE_KEY'), served = env('JP_EDGE_SERVED') } = {}) {
  const { jp, validator, components } = await compiledModules((url) => readFile(url), { faults, served });
  return createHandler({ jp, validator, components, storage, token, tokens, policy, allowedOrigins, hosts, env: environment, stateKey, bench: env('JP_EDGE_BENCH') === '1', limits: { memoryMiB: Number(env('JP_EDGE_MEMORY_MIB') || 0), deadlineMs: Number(env('JP_EDGE_DEADLINE_MS') || DEADLINE_MS) } });
}

const plain = (res, status, error) => {
  if (res.headersSent) return res.destroy();
  res.writeHead(status, { 'content-type': 'application/json', connection: 'close' });
  res.end(JSON.stringify({ error }));
};

/** One request: a web `Request` whose body streams from the socket, answered by `handler`. */
async function serve(handler, req, res) {
  let request;
  try {
    // Throws on a `Host` that is no host name (`a b`), a malformed header value, …
    const url = new URL(req.url ?? '/', `http://${req.headers.host ?? '127.0.0.1'}`);
    if (!req.url?.startsWith('/') || url.host !== (req.headers.host ?? '127.0.0.1').toLowerCase().replace(/:80$/, '')) {
      throw new Error(`the request target or Host is malformed`);
    }
    const streamed = !['GET', 'HEAD'].includes(req.method);
    request = new Request(url, { method: req.method, headers: req.headers, body: streamed ? Readable.toWeb(req) : undefined, duplex: 'half' });
  } catch (e) {
    req.resume();
    return plain(res, 400, `malformed request: ${e?.message ?? e}`);
  }
  const response = await handler.fetch(request);
  res.writeHead(response.status, Object.fromEntries(response.headers));
  res.end(Buffer.from(await response.arrayBuffer()));
}

/** Serve `handler` on 127.0.0.1:`port` with node:http. */
export function listen(handler, port) {
  const server = createServer((req, res) => {
    serve(handler, req, res).catch((e) => plain(res, 500, `the edge function failed: ${e?.message ?? e}`));
  });
  // A request line or header the parser refuses: 400, and the server goes on.
  server.on('clientError', (err, socket) => {
    if (socket.writable && !socket.destroyed) socket.end('HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n{"error":"malformed request"}');
    else socket.destroy();
  });
  return new Promise((ok) => server.listen(port, '127.0.0.1', () => ok(server)));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  // Whatever one request leaves behind, the function keeps serving the others.
  process.on('unhandledRejection', (e) => console.error(`jp edge (node): unhandled rejection: ${e?.stack ?? e}`));
  process.on('uncaughtException', (e) => console.error(`jp edge (node): uncaught exception: ${e?.stack ?? e}`));
  const i = process.argv.indexOf('--port');
  const handler = await nodeHandler();
  const secrets = await handler.secrets();
  const server = await listen(handler, i > 0 ? Number(process.argv[i + 1]) : 8787);
  console.log(`jp edge function (node) on http://127.0.0.1:${server.address().port}/${secretsNote(secrets)}`);
}
