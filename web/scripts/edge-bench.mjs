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
//   already started by the seeding on both sides.
//
// One client, sequential calls, alternating blocks; prints p50s, calls/s and ratios per engine
// and `TABLE|…` lines. `edge-bench [N warm calls each] [C cold projects each]`; EDGE_ENGINES=deno,node
// picks engines (wrangler also works). Asserts nothing about time.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEdge } from './edge.mjs';

const N = Number(process.argv[2] ?? 400);
const COLD = Number(process.argv[3] ?? 10);
const BLOCK = 50;
const GOAL = 2;
const TOKEN = 'edge-bench-token';
const files = {};
for (let i = 0; i < 100; i++) files[`src/file${i}.txt`] = `${`line ${i} of a small project file\n`.repeat(30)}`;

const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const perSec = (xs) => 1000 / (xs.reduce((a, b) => a + b, 0) / xs.length);
const ms = (x) => `${x.toFixed(2)} ms`;
const rows = [];
const engines = (process.env.EDGE_ENGINES ?? 'workerd,deno,node').split(',').map((e) => e.trim()).filter(Boolean);
for (const engine of engines) {
  const data = mkdtempSync(join(tmpdir(), `jp-edge-bench-${engine}-`));
  const edge = await startEdge({ engine, data, bench: true, token: TOKEN });
  try {
    const post = async (path, body) => (await fetch(new URL(path, edge.url), { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })).json();
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

    // Cold: COLD fresh projects per side, seeded without jp, each timed on its first call.
    const cold = { jp: [], bare: [] };
    for (let i = 0; i < COLD; i++) {
      for (const side of ['jp', 'bare']) {
        const r = await post('/__bare', { project: `cold-${side}-${i}`, seed: files });
        if (r.seeded !== 100) throw new Error(`seeding cold-${side}-${i} failed: ${JSON.stringify(r)}`);
      }
    }
    for (let i = 0; i < COLD; i++) {
      cold.jp.push(await timed(viaJp(`cold-jp-${i}`)));
      cold.bare.push(await timed(bare(`cold-bare-${i}`, true)));
    }
    const coldP50 = { jp: median(cold.jp), bare: median(cold.bare) };
    const coldRatio = coldP50.jp / coldP50.bare;

    console.log(`edge ${engine}, fs_read_file on a 100-file project (${N} warm calls each, ${COLD} cold projects each):`);
    console.log(`  warm  jp ${ms(p50.jp)} p50 (${rate.jp.toFixed(0)}/s) | bare, kept copy ${ms(p50['bare-kept'])} (${rate['bare-kept'].toFixed(0)}/s): ${kept.toFixed(2)}x | bare, storage read per call ${ms(p50['bare-storage'])} (${rate['bare-storage'].toFixed(0)}/s): ${fromStorage.toFixed(2)}x`);
    console.log(`  cold  first call of a project: jp ${ms(coldP50.jp)} p50 (a host made: jp-web and the component instantiated, the storage listed${['workerd', 'wrangler'].includes(engine) ? ', tools described (a handler per Durable Object)' : ''}; then the call) | bare ${ms(coldP50.bare)} p50 (list + lookup): ${coldRatio.toFixed(2)}x`);
    rows.push(`TABLE|EDGE-${engine}|fs_read_file, 100-file project, warm: jp edge function vs bare handler with the same kept copy on ${engine} (${N} calls each)|${ms(p50.jp)} p50, ${rate.jp.toFixed(0)}/s|bare kept ${ms(p50['bare-kept'])} p50, ${rate['bare-kept'].toFixed(0)}/s|${kept.toFixed(2)}x|<= ${GOAL}x|${kept <= GOAL ? 'met' : 'NOT met'}`);
    rows.push(`TABLE|EDGE-${engine}-storage|fs_read_file, warm: jp (kept copy) vs bare handler reading storage per call on ${engine}|${ms(p50.jp)} p50|bare storage ${ms(p50['bare-storage'])} p50|${fromStorage.toFixed(2)}x|report|-`);
    rows.push(`TABLE|EDGE-${engine}-cold|first call of a cold 100-file project: jp (instantiate + list + call) vs bare (list + lookup) on ${engine} (${COLD} projects each)|${ms(coldP50.jp)} p50|bare ${ms(coldP50.bare)} p50|${coldRatio.toFixed(2)}x|report|-`);
  } finally {
    await edge.stop();
    rmSync(data, { recursive: true, force: true });
  }
}
for (const r of rows) console.log(r);
