// Where the edge's cold call goes, part by part (`npm run edge-cold-parts`, part of
// ./tests/bench): the steps the edge function's first call of a project makes (web/edge/
// handler.js `newHost`, then `callTool`), run in this Node process on the same compiled modules
// (web/edge/modules.mjs) and in-memory storage as `web/edge/node.mjs`, each step timed alone:
//
// - host: `Host.create` — jp-web's host object with the operator's policy as the ceiling (the
//   policy parsed, its sensitive-path set looked up, the storage attached);
// - register: `registerComponent` of every served component with the tools already described
//   (as every project after the isolate's first): the core adds each tool and its schema;
// - list: the project's files listed from the storage into the host's copy (`listFiles`);
// - instantiate: the call's fs component instantiated from its compiled core modules (a cold
//   project has no pooled instance);
// - call: `callTool('fs_read_file')` with that instance already pooled — arguments checked,
//   snapshot, the component's run, the outcome;
// - again: a second call on the same host and instance (what a warm call costs in process; the
//   difference to `call` is a new instance's first run);
// - whole: the same sequence on a new project, timed as one (the sum, without the timers), with
//   no spare instance ready (nothing here lets a timer run between rounds);
// - whole, spare: the same after 2 ms of quiet, in which the instance the last cold call
//   asked for is made (www/jp.js, `spares`): what a function's cold call costs when new
//   projects do not arrive back to back.
//
// Each part is given as a share of the whole; the bare handler's cold work (web/edge/bare.js: the
// storage listed into a copy and one lookup) is printed for scale (EDGE-*-cold compares the two
// over HTTP). Alternating rounds after 5 untimed ones; prints medians and `TABLE|…` lines.
// Asserts nothing about time.
// Usage: node --import ./web/edge/browser-wasi.mjs web/scripts/edge-cold-parts.mjs [ROUNDS]
import { readFile } from 'node:fs/promises';
import { compiledModules } from '../edge/modules.mjs';
import { memoryStorage } from '../edge/common.js';
import { Host, loadJp } from '../../www/jp.js';
import { instantiate } from '../../www/instance.js';

const ROUNDS = Number(process.argv[2] ?? 30);
const POLICY = '[access]\nfilesystem = [{ path = ".", allow = ["read", "write"] }]\n';
const files = {};
for (let i = 0; i < 100; i++) files[`src/file${i}.txt`] = `${`line ${i} of a small project file\n`.repeat(30)}`;

const { jp, validator, components } = await compiledModules((url) => readFile(url));
await loadJp(jp, validator);
const storage = memoryStorage();
let projects = 0;
/** A project with the 100 files in storage that no host has opened. */
async function seeded() {
  const s = storage(`p${projects++}`);
  await s.batch(Object.entries(files).map(([path, text]) => ({ path, value: new TextEncoder().encode(text) })));
  return s;
}

const described = {};
const now = () => performance.now();
/** One cold call, its parts timed: `{ host, register, list, instantiate, call }` in ms. */
async function parts(s) {
  const t = {};
  let a = now();
  const h = await Host.create({ db: null, policy: '', ceiling: POLICY, storage: s, limits: {}, instances: new Map() });
  t.host = now() - a;
  a = now();
  for (const [name, c] of Object.entries(components)) {
    const tools = await h.registerComponent(name, c.module, c.cores, described[name] ?? c.tools ?? null, { knowledgeBase: c.knowledgeBase ?? null });
    described[name] ??= h.listTools().filter((x) => tools.includes(x.name));
  }
  t.register = now() - a;
  a = now();
  await h.listFiles();
  t.list = now() - a;
  a = now();
  const live = await instantiate(h.components.get('fs'), 'fs_read_file', 10_000);
  t.instantiate = now() - a;
  h.instances.set('fs', live);
  a = now();
  const r = await h.callTool('fs_read_file', { path: 'src/file7.txt' });
  t.call = now() - a;
  a = now();
  await h.callTool('fs_read_file', { path: 'src/file8.txt' });
  t.again = now() - a;
  if (r.tag !== 'success') throw new Error(`the call failed: ${JSON.stringify(r)}`);
  return t;
}
/** The same cold call untimed inside, as the handler makes it. */
async function whole(s) {
  const a = now();
  const h = await Host.create({ db: null, policy: '', ceiling: POLICY, storage: s, limits: {}, instances: new Map() });
  for (const [name, c] of Object.entries(components)) {
    await h.registerComponent(name, c.module, c.cores, described[name], { knowledgeBase: c.knowledgeBase ?? null });
  }
  const r = await h.callTool('fs_read_file', { path: 'src/file7.txt' });
  if (r.tag !== 'success') throw new Error(`the call failed: ${JSON.stringify(r)}`);
  return now() - a;
}
/** The bare handler's cold work: the storage listed into a copy, one lookup. */
async function bare(s) {
  const a = now();
  const copy = new Map(await s.list());
  const text = new TextDecoder().decode(copy.get('src/file7.txt'));
  if (!text.startsWith('line 7')) throw new Error('bare read the wrong file');
  return now() - a;
}

const quiet = () => new Promise((done) => setTimeout(done, 2));
const samples = { host: [], register: [], list: [], instantiate: [], call: [], again: [], whole: [], spare: [], bare: [] };
for (let i = 0; i < 5; i++) { await parts(await seeded()); await whole(await seeded()); await bare(await seeded()); }
for (let i = 0; i < ROUNDS; i++) {
  const t = await parts(await seeded());
  for (const k of Object.keys(t)) samples[k].push(t[k]);
  samples.whole.push(await whole(await seeded()));
  samples.bare.push(await bare(await seeded()));
  const next = await seeded();
  await quiet();
  samples.spare.push(await whole(next));
}
const median = (xs) => xs.slice().sort((x, y) => x - y)[Math.floor(xs.length / 2)];
const total = median(samples.whole);
const base = median(samples.bare);
console.log(`edge cold parts (Node ${process.version}, ${ROUNDS} rounds, medians): the whole cold call ${total.toFixed(3)} ms; bare (storage listed + one lookup) ${base.toFixed(3)} ms`);
const spare = median(samples.spare);
console.log(`  whole, after 2 ms of quiet (a spare instance ready): ${spare.toFixed(3)} ms`);
console.log(`TABLE|EDGE-cold-spare|the edge's cold call on Node in process after 2 ms of quiet (the spare instance made in it)|${spare.toFixed(2)} ms|whole cold call ${total.toFixed(2)} ms|${((100 * spare) / total).toFixed(0)}%|-|info`);
for (const k of ['host', 'register', 'list', 'instantiate', 'call', 'again']) {
  const m = median(samples[k]);
  console.log(`  ${k.padEnd(12)} ${m.toFixed(3)} ms  (${((100 * m) / total).toFixed(0)}% of the whole)`);
  console.log(`TABLE|EDGE-cold-${k}|the edge's cold call on Node in process, part: ${k}|${m.toFixed(2)} ms|whole cold call ${total.toFixed(2)} ms|${((100 * m) / total).toFixed(0)}%|-|info`);
}
