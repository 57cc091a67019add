// Edge benchmark (`npm run edge-bench`, part of ./tests/bench): `fs_read_file` on a 100-file
// project through the jp edge function vs a bare handler (web/edge/bare.js, `POST /__bare`) that
// returns the file with no jp at all, on the same engine and the same storage (workerd: Durable
// Object SQLite; Deno: KV; Node: memory). Both take the same request (POST, a JSON body naming
// the project and the file, the same bearer header) and answer JSON.
//
// What each side includes:
// - warm, jp: a kept project — its host (component instances) and its copy of the files, checked
//   against the storage's version() on every call; the call runs the fs component under the
//   policy and answers the outcome with its event list.
// - warm, bare kept: the same kind of kept copy (filled by listing the storage on the first
//   read, checked against version() on every call), then a map lookup. jp ÷ this is what jp
//   adds to a handler doing the same work.
// - warm, bare storage: the file read from the storage on every call (no copy, no version).
// - cold: the first call of a project that has files in storage but that the function has not
//   opened yet (seeded through /__bare, untimed). jp: a host is made (jp-web and the component
//   instantiated, tools described, the storage listed into a copy), then the call. Bare: the
//   storage listed into a copy, then the lookup. On workerd each project is a Durable Object,
//   already started by the seeding on both sides. 3 cold projects per side first, untimed.
//   Each timed cold request comes after IDLE_MS of quiet, on both sides, as a function's
//   requests for new projects come: jp uses such quiet to make a fresh instance of the
//   component the last cold call used ready for the next (www/jp.js, `spares`), and the bare
//   side gets the same pause, so neither pays for the other's leftovers.
//
// EDGE-<engine>-http: a component's `http.get` through jp vs the engine's own `fetch`, on a
// second start of the function (the test components served, JP_EDGE_FAULTS=1; the operator's
// policy allows GETs of this script's 127.0.0.1 server under /api/ with `envs = ["API_TOKEN"]`,
// and API_TOKEN is in the engine's environment). The server answers 200 and a small JSON body
// only to `Authorization: Bearer <the secret>`, so both sides are checked to have sent it. Both
// sides take the same request (POST, JSON naming the same project, the bearer header):
// - jp: `POST /` of the fetch component's `api_get {url}` on a kept project (no files): its
//   storage version read, the arguments checked, a session on the snapshot, the component run
//   on its pooled instance, suspended (JSPI) while the dispatcher decides the URL, fills in
//   `${API_TOKEN}`, fetches and reads the body (to its cap) and scrubs the secret from it; the
//   outcome (`status 200\n<body>`) and the call's events answered as JSON.
// - bare: `POST /__bare {get: url, headers}` (bare.js): the same header's `${API_TOKEN}` filled
//   in, the engine's `fetch` (redirect: manual, as jp's), the body's text answered as JSON.
//
// One client, sequential calls, alternating blocks; prints p50s, calls/s and ratios per engine
// and `TABLE|…` lines. `edge-bench [N warm calls each] [C cold projects each]`; EDGE_ENGINES=deno,node
// picks engines (wrangler also works). Asserts nothing about time.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEdge } from './edge.mjs';

const N = Number(process.argv[2] ?? 400);
const COLD = Number(process.argv[3] ?? 20);
const COLD_WARMUP = 3;
const IDLE_MS = 2;
const idle = () => new Promise((done) => setTimeout(done, IDLE_MS));
const BLOCK = 50;
const GOAL = 2;
const TOKEN = 'edge-bench-token';
const files = {};
for (let i = 0; i < 100; i++) files[`src/file${i}.txt`] = `${`line ${i} of a small project file\n`.repeat(30)}`;

// The API of the http rows: on 127.0.0.1, a small JSON answer to the secret's bearer only.
const API_SECRET = 'edge-bench-api-secret-5e1d';
const API_BODY = `${JSON.stringify({ id: 7, name: 'a small answer of the benchmark API', ok: true })}\n`;
const api = createServer((req, res) => {
  const ok = req.method === 'GET' && req.url === '/api/item' && req.headers.authorization === `Bearer ${API_SECRET}`;
  res.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' });
  res.end(ok ? API_BODY : '{"error":"no such item, or not this bearer"}\n');
});
await new Promise((ok) => api.listen(0, '127.0.0.1', ok));
const API_URL = `http://127.0.0.1:${api.address().port}/api/item`;
const API_POLICY = `[access]
filesystem = [{ path = ".", allow = ["read", "write"] }]
network = { allow = ["http://127.0.0.1:${api.address().port}/api/"], envs = ["API_TOKEN"] }
`;

/** `POST base + path` with the bench's bearer token and a JSON body; resolves to the JSON. */
const poster = (base) => async (path, body) => (await fetch(new URL(path, base), { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })).json();

const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const perSec = (xs) => 1000 / (xs.reduce((a, b) => a + b, 0) / xs.length);
const ms = (x) => `${x.toFixed(2)} ms`;
const rows = [];
const engines = (process.env.EDGE_ENGINES ?? 'workerd,deno,node').split(',').map((e) => e.trim()).filter(Boolean);
for (const engine of engines) {
  const data = mkdtempSync(join(tmpdir(), `jp-edge-bench-${engine}-`));
  const edge = await startEdge({ engine, data, bench: true, token: TOKEN });
  try {
    const post = poster(edge.url);
    const seeded = await post('/', { tool: 'fs_read_file', args: { path: 'src/file0.txt' }, project: 'bench', files });
    if (seeded.outcome?.tag !== 'success') throw new Error(`seeding failed: ${JSON.stringify(seeded).slice(0, 300)}`);
    let k = 0;
    const viaJp = (project) => async () => {
      const path = `src/file${k++ % 100}.txt`;
      const r = await post('/', { tool: 'fs_read_file', args: { path }, project });
      if (r.outcome?.val !== files[path]) throw new Error(`jp answered ${JSON.stringify(r).slice(0, 200)}`);
    };
    const bare = (project, kept) => async () => {
      const path = `src/file${k++ % 100}.txt`;
      const r = await post('/__bare', { project, path, kept });
      if (r.val !== files[path]) throw new Error(`bare answered ${JSON.stringify(r).slice(0, 200)}`);
    };
    const timed = async (f) => { const t = performance.now(); await f(); return performance.now() - t; };

    // Warm: the same project on every side (bare's kept copy is filled in the warm-up).
    const sides = [['jp', viaJp('bench')], ['bare-kept', bare('bench', true)], ['bare-storage', bare('bench', false)]];
    const samples = Object.fromEntries(sides.map(([name]) => [name, []]));
    for (let i = 0; i < 20; i++) for (const [, f] of sides) await f(); // warm-up
    for (let done = 0; done < N; done += BLOCK) {
      for (const [name, f] of sides) for (let i = 0; i < BLOCK; i++) samples[name].push(await timed(f));
    }
    const p50 = Object.fromEntries(sides.map(([name]) => [name, median(samples[name])]));
    const rate = Object.fromEntries(sides.map(([name]) => [name, perSec(samples[name])]));
    const kept = p50.jp / p50['bare-kept'];
    const fromStorage = p50.jp / p50['bare-storage'];

    // Cold: COLD fresh projects per side, seeded without jp, each timed on its first call,
    // after COLD_WARMUP untimed ones per side (the cold path's own code warmed up on both sides,
    // as a running function has opened projects before; the isolate's start is not this row).
    const cold = { jp: [], bare: [] };
    for (let i = -COLD_WARMUP; i < COLD; i++) {
      for (const side of ['jp', 'bare']) {
        const r = await post('/__bare', { project: `cold-${side}-${i}`, seed: files });
        if (r.seeded !== 100) throw new Error(`seeding cold-${side}-${i} failed: ${JSON.stringify(r)}`);
      }
    }
    for (let i = -COLD_WARMUP; i < COLD; i++) {
      await idle();
      const a = await timed(viaJp(`cold-jp-${i}`));
      await idle();
      const b = await timed(bare(`cold-bare-${i}`, true));
      if (i >= 0) cold.jp.push(a), cold.bare.push(b);
    }
    const coldP50 = { jp: median(cold.jp), bare: median(cold.bare) };
    const coldRatio = coldP50.jp / coldP50.bare;

    console.log(`edge ${engine}, fs_read_file on a 100-file project (${N} warm calls each, ${COLD} cold projects each):`);
    console.log(`  warm  jp ${ms(p50.jp)} p50 (${rate.jp.toFixed(0)}/s) | bare, kept copy ${ms(p50['bare-kept'])} (${rate['bare-kept'].toFixed(0)}/s): ${kept.toFixed(2)}x | bare, storage read per call ${ms(p50['bare-storage'])} (${rate['bare-storage'].toFixed(0)}/s): ${fromStorage.toFixed(2)}x`);
    console.log(`  cold  first call of a project: jp ${ms(coldP50.jp)} p50 (after ${IDLE_MS} ms of quiet; a host made: jp-web's host, the component's instance (the spare made in the quiet), the storage listed${['workerd', 'wrangler'].includes(engine) ? ', a handler made (one per Durable Object; the tools are described once per isolate)' : ''}; then the call) | bare ${ms(coldP50.bare)} p50 (the same quiet; list + lookup): ${coldRatio.toFixed(2)}x`);
    rows.push(`TABLE|EDGE-${engine}|fs_read_file, 100-file project, warm: jp edge function vs bare handler with the same kept copy on ${engine} (${N} calls each)|${ms(p50.jp)} p50, ${rate.jp.toFixed(0)}/s|bare kept ${ms(p50['bare-kept'])} p50, ${rate['bare-kept'].toFixed(0)}/s|${kept.toFixed(2)}x|<= ${GOAL}x|${kept <= GOAL ? 'met' : 'NOT met'}`);
    rows.push(`TABLE|EDGE-${engine}-storage|fs_read_file, warm: jp (kept copy) vs bare handler reading storage per call on ${engine}|${ms(p50.jp)} p50|bare storage ${ms(p50['bare-storage'])} p50|${fromStorage.toFixed(2)}x|report|-`);
    rows.push(`TABLE|EDGE-${engine}-cold|first call of a cold 100-file project after ${IDLE_MS} ms of quiet: jp (host + spare instance + list + call) vs bare (list + lookup) on ${engine} (${COLD} projects each)|${ms(coldP50.jp)} p50|bare ${ms(coldP50.bare)} p50|${coldRatio.toFixed(2)}x|report|-`);
  } finally {
    await edge.stop();
    rmSync(data, { recursive: true, force: true });
  }
  await httpRows(engine);
}
for (const r of rows) console.log(r);
await new Promise((done) => api.close(done));

/** EDGE-<engine>-http: `api_get` through jp vs the bare route's fetch, on a start of its own. */
async function httpRows(engine) {
  const data = mkdtempSync(join(tmpdir(), `jp-edge-bench-http-${engine}-`));
  const edge = await startEdge({ engine, data, bench: true, token: TOKEN, faults: true, policy: API_POLICY, secrets: { API_TOKEN: API_SECRET } });
  try {
    const post = poster(edge.url);
    const sides = [
      ['jp', async () => {
        const r = await post('/', { tool: 'api_get', args: { url: API_URL }, project: 'http' });
        if (r.outcome?.tag !== 'success' || r.outcome.val !== `status 200\n${API_BODY}`) throw new Error(`jp answered ${JSON.stringify(r).slice(0, 300)}`);
      }],
      ['bare', async () => {
        const r = await post('/__bare', { project: 'http', get: API_URL, headers: { Authorization: 'Bearer ${API_TOKEN}' } });
        if (r.status !== 200 || r.val !== API_BODY) throw new Error(`bare answered ${JSON.stringify(r).slice(0, 300)}`);
      }],
    ];
    const timed = async (f) => { const t = performance.now(); await f(); return performance.now() - t; };
    const samples = Object.fromEntries(sides.map(([name]) => [name, []]));
    for (let i = 0; i < 20; i++) for (const [, f] of sides) await f(); // warm-up
    for (let done = 0, b = 0; done < N; done += BLOCK, b++) {
      for (const [name, f] of b % 2 ? sides.slice().reverse() : sides) for (let i = 0; i < BLOCK; i++) samples[name].push(await timed(f));
    }
    const p50 = Object.fromEntries(sides.map(([name]) => [name, median(samples[name])]));
    const rate = Object.fromEntries(sides.map(([name]) => [name, perSec(samples[name])]));
    const ratio = p50.jp / p50.bare;
    console.log(`edge ${engine}, a component's http.get of a ${API_BODY.length} B answer on 127.0.0.1 (${N} calls each, alternating blocks of ${BLOCK}):`);
    console.log(`  jp (POST / api_get: policy decision, \${API_TOKEN} filled in, fetch, scrub, outcome) ${ms(p50.jp)} p50 (${rate.jp.toFixed(0)}/s) | bare (POST /__bare: the same header, the engine's fetch) ${ms(p50.bare)} p50 (${rate.bare.toFixed(0)}/s): ${ratio.toFixed(2)}x`);
    rows.push(`TABLE|EDGE-${engine}-http|a component's http.get (api_get, Bearer \${API_TOKEN} from the engine's environment) of a ${API_BODY.length} B answer on 127.0.0.1: POST / through jp vs POST /__bare doing the engine's fetch of the same URL and header on ${engine} (${N} calls each)|${ms(p50.jp)} p50, ${rate.jp.toFixed(0)}/s|bare fetch ${ms(p50.bare)} p50, ${rate.bare.toFixed(0)}/s|${ratio.toFixed(2)}x|report|-`);
  } finally {
    await edge.stop();
    rmSync(data, { recursive: true, force: true });
  }
}
