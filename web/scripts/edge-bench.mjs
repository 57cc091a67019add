// Edge benchmark (`npm run edge-bench`, part of ./tests/bench): `fs_read_file` on a 100-file
// project through the jp edge function vs a bare handler that returns the file straight from
// the same storage, on the same engine (workerd: Durable Object SQLite; Deno: KV; Node:
// memory). Both take the same request (POST, a JSON body naming the project and the file) and
// answer JSON, so the ratio is what jp adds to an edge function that serves files. One client,
// sequential calls, alternating blocks; prints calls/s, p50 and the ratio per engine and
// `TABLE|…` lines. EDGE_ENGINES=deno,node picks engines. Asserts nothing about time.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEdge } from './edge.mjs';

const N = Number(process.argv[2] ?? 400);
// Every route needs a bearer token; both sides send the same headers.
const TOKEN = 'edge-bench-token-4b7a1e';
const AUTH = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
const BLOCK = 50;
const GOAL = 2;
const files = {};
for (let i = 0; i < 100; i++) files[`src/file${i}.txt`] = `${`line ${i} of a small project file\n`.repeat(30)}`;

const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const rows = [];
const engines = (process.env.EDGE_ENGINES ?? 'workerd,deno,node').split(',').map((e) => e.trim()).filter(Boolean);
for (const engine of engines) {
  const data = mkdtempSync(join(tmpdir(), `jp-edge-bench-${engine}-`));
  const edge = await startEdge({ engine, data, bench: true, token: TOKEN });
  try {
    const seeded = await (await fetch(edge.url, { method: 'POST', headers: AUTH, body: JSON.stringify({ tool: 'fs_read_file', args: { path: 'src/file0.txt' }, project: 'bench', files }) })).json();
    if (seeded.outcome?.tag !== 'success') throw new Error(`seeding failed: ${JSON.stringify(seeded).slice(0, 300)}`);
    let k = 0;
    const viaJp = async () => {
      const path = `src/file${k++ % 100}.txt`;
      const r = await (await fetch(edge.url, { method: 'POST', headers: AUTH, body: JSON.stringify({ tool: 'fs_read_file', args: { path }, project: 'bench' }) })).json();
      if (r.outcome?.val !== files[path]) throw new Error(`jp answered ${JSON.stringify(r).slice(0, 200)}`);
    };
    const bare = async () => {
      const path = `src/file${k++ % 100}.txt`;
      const r = await (await fetch(`${edge.url}__bare`, { method: 'POST', headers: AUTH, body: JSON.stringify({ project: 'bench', path }) })).json();
      if (r.val !== files[path]) throw new Error(`bare answered ${JSON.stringify(r).slice(0, 200)}`);
    };
    const samples = { jp: [], bare: [] };
    for (let i = 0; i < 20; i++) { await viaJp(); await bare(); } // warm-up
    for (let done = 0; done < N; done += BLOCK) {
      for (const [name, f] of [['jp', viaJp], ['bare', bare]]) {
        for (let i = 0; i < BLOCK; i++) {
          const t = performance.now();
          await f();
          samples[name].push(performance.now() - t);
        }
      }
    }
    const p50 = { jp: median(samples.jp), bare: median(samples.bare) };
    const perSec = (xs) => 1000 / (xs.reduce((a, b) => a + b, 0) / xs.length);
    const ratio = p50.jp / p50.bare;
    console.log(`edge ${engine}: jp ${p50.jp.toFixed(2)} ms p50 (${perSec(samples.jp).toFixed(0)} calls/s), bare ${p50.bare.toFixed(2)} ms p50 (${perSec(samples.bare).toFixed(0)} calls/s), ${ratio.toFixed(2)}x`);
    rows.push(`TABLE|EDGE-${engine}|fs_read_file, 100-file project, jp edge function vs bare storage handler on ${engine} (${N} calls each)|${p50.jp.toFixed(2)} ms p50, ${perSec(samples.jp).toFixed(0)}/s|bare ${p50.bare.toFixed(2)} ms p50, ${perSec(samples.bare).toFixed(0)}/s|${ratio.toFixed(2)}x|<= ${GOAL}x|${ratio <= GOAL ? 'met' : 'NOT met'}`);
  } finally {
    await edge.stop();
    rmSync(data, { recursive: true, force: true });
  }
}
for (const r of rows) console.log(r);
