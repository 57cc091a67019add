// The edge function on Node: `node web/edge/node.mjs --port N` (or `npm run edge -- --engine
// node`). Projects live in memory for the life of the process. JP_EDGE_TOKEN enables /mcp.
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { createHandler, DEADLINE_MS } from './handler.js';
import { compiledModules } from './modules.mjs';
import { memoryStorage } from './common.js';

/** The handler with Node's modules and in-memory projects (or `storage`: id → ProjectStorage). */
export async function nodeHandler({ token = process.env.JP_EDGE_TOKEN ?? '', policy = process.env.JP_EDGE_POLICY ?? '', faults = process.env.JP_EDGE_FAULTS === '1', storage = memoryStorage() } = {}) {
  const { jp, components } = await compiledModules((url) => readFile(url), { faults });
  return createHandler({ jp, components, storage, token, policy, bench: process.env.JP_EDGE_BENCH === '1', limits: { memoryMiB: Number(process.env.JP_EDGE_MEMORY_MIB ?? 0), deadlineMs: Number(process.env.JP_EDGE_DEADLINE_MS || DEADLINE_MS) } });
}

/** Serve `handler` on 127.0.0.1:`port` with node:http. */
export function listen(handler, port) {
  const server = createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = ['GET', 'HEAD'].includes(req.method) ? undefined : Buffer.concat(chunks);
    const request = new Request(`http://${req.headers.host ?? '127.0.0.1'}${req.url}`, { method: req.method, headers: req.headers, body });
    const response = await handler.fetch(request);
    res.writeHead(response.status, Object.fromEntries(response.headers));
    res.end(Buffer.from(await response.arrayBuffer()));
  });
  return new Promise((ok) => server.listen(port, '127.0.0.1', () => ok(server)));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const i = process.argv.indexOf('--port');
  const server = await listen(await nodeHandler(), i > 0 ? Number(process.argv[i + 1]) : 8787);
  console.log(`jp edge function (node) on http://127.0.0.1:${server.address().port}/`);
}
