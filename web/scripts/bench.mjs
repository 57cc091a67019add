// Browser benchmarks (`npm run bench`, part of ./tests/bench), in headless Chromium against the
// playground served on 127.0.0.1, and in this Node. Prints medians and ratios against baselines
// run in the same page or process, alternating with them, and `TABLE|…` lines; asserts nothing
// but that each side did its work.
//  1. 1,000 × 4 KiB write + read through a component (jp:host imports → core dispatcher →
//     snapshot, written back to IndexedDB in one transaction) vs raw IndexedDB from JS.
//  2. A component tool call (fresh instance, session, write-back) vs a bare wasm export call.
//  3. PAGE-http: a component's `http.get` through jp (the fetch component's `api_get`, its
//     `Authorization: Bearer ${API_TOKEN}` filled in from `setSecrets`) of a small same-origin
//     file vs the page's own `fetch` of the same URL with the same header, in alternating blocks.
//     jp: the arguments checked, a session on a snapshot, the component run on a pooled
//     instance, suspended (JSPI) while the dispatcher decides the URL, substitutes the secret,
//     fetches and reads the body (to its cap) and scrubs the secret from it, then the outcome
//     mapped (`status 200\n<body>`). Fetch: `fetch()` (redirect: manual, as jp's) + `text()`.
//  4. JSPI-*: the component call path with JSPI against the sync one it replaced, in Node and in
//     the page: the bench component transpiled by jco without and with the JSPI flags, imports
//     answered from one JS Map (no jp), plus jp's `callTool` of the same tool (bench-jspi.mjs).
import { readFileSync, rmSync } from 'node:fs';
import { extname, join, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import { serve } from './serve.mjs';
import { builtCores, measureCallPaths, transpileBoth } from './bench-jspi.mjs';

const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
// 3: blocks of calls per side, alternating. 4: blocks per side and tool; calls per block.
const HTTP = { blocks: 20, perBlock: 20 };
const PATHS = { blocks: 15, noop: { perBlock: 500 }, io: { n: 100, size: 64, perBlock: 5 } };

const rows = [];
const us = (x) => `${(x * 1000).toFixed(1)} µs`;
/** Prints what one engine's call paths measured (4) and adds its rows. */
function callPaths(engine, label, r) {
  // Per import: io_loop's calls less a noop call, over its 2n imports (n writes, n reads).
  const imports = 2 * PATHS.io.n;
  const perImport = Object.fromEntries(Object.keys(r.io).map((s) => [s, (r.io[s] - r.noop[s]) / imports]));
  const x = (a, b) => `${(a / b).toFixed(2)}x`;
  console.log(`${label}: a call of bench's noop on a kept instance — sync transpile ${us(r.noop.sync)}; JSPI transpile ${us(r.noop.jspi)} (${x(r.noop.jspi, r.noop.sync)}); JSPI with the build's loop checks ${us(r.noop.checked)} (${x(r.noop.checked, r.noop.sync)}); jp's callTool ${us(r.noop.jp)} (${x(r.noop.jp, r.noop.sync)})`);
  console.log(`${label}: one jp:host import (io_loop n=${PATHS.io.n}, ${PATHS.io.size} B: (io_loop − noop) / ${imports}) — sync, a function returning from a Map ${us(perImport.sync)}; JSPI, an async function from the same Map ${us(perImport.jspi)} (${x(perImport.jspi, perImport.sync)}); JSPI with loop checks ${us(perImport.checked)}; through jp's dispatcher ${us(perImport.jp)} (${x(perImport.jp, perImport.sync)}); io_loop calls: ${Object.entries(r.io).map(([s, v]) => `${s} ${(v).toFixed(2)} ms`).join(', ')}`);
  const each = `${PATHS.blocks} alternating blocks each`;
  rows.push(`TABLE|JSPI-${engine}|component call overhead (bench's noop, kept instance, no jp): jco's JSPI transpile vs its sync transpile on ${label} (${PATHS.noop.perBlock} calls × ${each})|${us(r.noop.jspi)}|sync ${us(r.noop.sync)}|${x(r.noop.jspi, r.noop.sync)}|report|-`);
  rows.push(`TABLE|JSPI-${engine}-import|one jp:host import answered from a JS Map (io_loop of ${PATHS.io.n} × ${PATHS.io.size} B, less a noop, per import): JSPI (an async import, suspending) vs sync on ${label}|${us(perImport.jspi)}|sync ${us(perImport.sync)}|${x(perImport.jspi, perImport.sync)}|report|-`);
  rows.push(`TABLE|JSPI-${engine}-jp|jp's callTool of the same noop (pooled instance, files in memory) vs the sync transpile's call on ${label}|${us(r.noop.jp)}|sync ${us(r.noop.sync)}|${x(r.noop.jp, r.noop.sync)}|report|-`);
  rows.push(`TABLE|JSPI-${engine}-jp-import|one import through jp (dispatcher on the call's snapshot) vs the sync transpile's from a Map on ${label}, per import as JSPI-${engine}-import|${us(perImport.jp)}|sync ${us(perImport.sync)}|${x(perImport.jp, perImport.sync)}|report|-`);
}

// 4 in this Node, before the browser starts: the sync and JSPI transpiles, into a temporary
// directory (never the build's), and the build's instrumented one.
const transpiled = transpileBoth(root, join(root, 'www/components/bench.wasm'));
process.on('exit', () => rmSync(transpiled.dir, { recursive: true, force: true }));
const built = join(root, 'www/components/bench');
const fileSide = (dir, cores) => ({ module: pathToFileURL(join(dir, 'bench.js')).href, base: pathToFileURL(`${dir}/`).href, cores });
const inNode = await measureCallPaths({
  ...PATHS,
  sides: { sync: fileSide(transpiled.sync.dir, transpiled.sync.cores), jspi: fileSide(transpiled.jspi.dir, transpiled.jspi.cores), checked: fileSide(built, builtCores(built)) },
  jp: { js: pathToFileURL(join(root, 'www/jp.js')).href, wasm: readFileSync(join(root, 'www/pkg/jp_web_bg.wasm')), validator: readFileSync(join(root, 'www/pkg/validate/jp_validate_bg.wasm')) },
});
callPaths('node', `Node ${process.version}`, inNode);

const server = await serve(0);
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: ARGS });
try {
  const page = await browser.newPage();
  // The temporary transpiles, served to the page under /__bench-jspi/.
  await page.route(`${server.url}__bench-jspi/**`, (route) => {
    const rel = decodeURIComponent(new URL(route.request().url()).pathname.slice('/__bench-jspi/'.length));
    if (rel.split('/').some((c) => c === '..' || c === '')) return route.fulfill({ status: 404, body: '' });
    return route.fulfill({ body: readFileSync(join(transpiled.dir, rel)), contentType: extname(rel) === '.wasm' ? 'application/wasm' : 'text/javascript' });
  });
  await page.goto(`${server.url}?db=bench-page-${Date.now()}`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 60_000 });
  const r = await page.evaluate(async () => {
    const { Host } = await import('/jp.js');
    const bench = await import('/components/bench/bench.js');
    const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const N = 1000;
    const SIZE = 4096;

    // 1a. Through a component, three runs, each on a fresh database.
    const viaComponent = [];
    for (let run = 0; run < 3; run++) {
      const host = await Host.create({ db: `bench-c-${Date.now()}-${run}`, policy: '' });
      await host.registerComponent('bench', bench, new URL('/components/bench/', location.href));
      const t = performance.now();
      const out = await host.callTool('io_loop', { n: N, size: SIZE });
      viaComponent.push(performance.now() - t);
      if (out.tag !== 'success' || out.changed.length !== N) throw new Error(JSON.stringify(out).slice(0, 300));
    }

    // 1b. Raw IndexedDB: one transaction per write and per read (what a simple app does), and
    //     all writes in one transaction then all reads in one.
    const open = (name) => new Promise((ok, fail) => {
      const req = indexedDB.open(name, 1);
      req.onupgradeneeded = () => req.result.createObjectStore('files');
      req.onsuccess = () => ok(req.result);
      req.onerror = () => fail(req.error);
    });
    const done = (req) => new Promise((ok, fail) => { req.onsuccess = () => ok(req.result); req.onerror = () => fail(req.error); });
    const committed = (tx) => new Promise((ok, fail) => { tx.oncomplete = ok; tx.onerror = () => fail(tx.error); });
    const data = new Uint8Array(SIZE).map((_, i) => 97 + (i % 26));
    const perOp = [];
    const batched = [];
    for (let run = 0; run < 3; run++) {
      const db = await open(`bench-raw-${Date.now()}-${run}`);
      let t = performance.now();
      for (let i = 0; i < N; i++) {
        const tx = db.transaction('files', 'readwrite');
        tx.objectStore('files').put(data, `bench/${i}.txt`);
        await committed(tx);
        const back = await done(db.transaction('files').objectStore('files').get(`bench/${i}.txt`));
        if (back.length !== SIZE) throw new Error('raw read back');
      }
      perOp.push(performance.now() - t);
      t = performance.now();
      const wtx = db.transaction('files', 'readwrite');
      for (let i = 0; i < N; i++) wtx.objectStore('files').put(data, `batch/${i}.txt`);
      await committed(wtx);
      const store = db.transaction('files').objectStore('files');
      for (let i = 0; i < N; i++) await done(store.get(`batch/${i}.txt`));
      batched.push(performance.now() - t);
      db.close();
    }

    // 2. Per-call cost: a no-op tool vs a bare export call of a tiny core module.
    const host = await Host.create({ db: `bench-n-${Date.now()}`, policy: '' });
    await host.registerComponent('bench', bench, new URL('/components/bench/', location.href));
    await host.callTool('noop', {});
    // performance.now() is coarse in a page (100 µs without cross-origin isolation): time
    // whole batches and divide.
    let t = performance.now();
    for (let i = 0; i < 200; i++) await host.callTool('noop', {});
    const call = (performance.now() - t) / 200;
    // (module (func (export "f") (result i32) i32.const 42))
    const bytes = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 127, 3, 2, 1, 0, 7, 5, 1, 1, 102, 0, 0, 10, 6, 1, 4, 0, 65, 42, 11]);
    const { instance } = await WebAssembly.instantiate(bytes);
    let sum = 0;
    t = performance.now();
    for (let j = 0; j < 1_000_000; j++) sum += instance.exports.f();
    const bare = (performance.now() - t) / 1_000_000;
    if (sum !== 42_000_000) throw new Error('bare calls');
    const module = await WebAssembly.compile(bytes);
    t = performance.now();
    for (let i = 0; i < 200; i++) (await WebAssembly.instantiate(module)).exports.f();
    const fresh = (performance.now() - t) / 200;
    return {
      component: median(viaComponent), perOp: median(perOp), batched: median(batched),
      call, bare, fresh,
    };
  });
  const ms = (x) => `${x.toFixed(1)} ms`;
  const us3 = (x) => `${(x * 1000).toFixed(3)} µs`;
  console.log(`1,000 x 4 KiB write+read through a component: ${ms(r.component)}; raw IndexedDB from JS: ${ms(r.perOp)} (one transaction per operation) -> ${(r.component / r.perOp).toFixed(2)}x (goal <= 1.5x); ${ms(r.batched)} (batched in two transactions) -> ${(r.component / r.batched).toFixed(2)}x`);
  console.log(`component tool call (fresh instance + session + write-back): ${us3(r.call)}; bare wasm export call: ${us3(r.bare)} (${(r.call / r.bare).toFixed(0)}x); bare instantiate + call of a tiny compiled module: ${us3(r.fresh)} (${(r.call / r.fresh).toFixed(1)}x)`);

  // 3. http.get through a component vs the page's fetch.
  const http = await page.evaluate(async ({ blocks, perBlock }) => {
    const { Host } = await import('/jp.js');
    const secret = 'bench-page-secret';
    const url = new URL('/components/fetch/cores.json', location.href).href;
    const host = await Host.create({ db: null, instances: new Map(), policy: `[access]\nnetwork = { allow = ["${location.origin}/components/"], envs = ["API_TOKEN"] }\n` });
    await host.registerComponent('fetch', new URL('/components/fetch/fetch.js', location.href), new URL('/components/fetch/', location.href));
    host.setSecrets({ API_TOKEN: secret });
    const body = await (await fetch(url)).text();
    const sides = {
      jp: async () => {
        const out = await host.callTool('api_get', { url });
        if (out.tag !== 'success' || out.val !== `status 200\n${body}`) throw new Error(`jp: ${JSON.stringify(out).slice(0, 300)}`);
      },
      fetch: async () => {
        const res = await fetch(url, { headers: { Authorization: `Bearer ${secret}` }, redirect: 'manual' });
        const text = await res.text();
        if (res.status !== 200 || text !== body) throw new Error(`fetch: ${res.status} ${text.slice(0, 200)}`);
      },
    };
    const names = Object.keys(sides);
    const timed = async (f, k) => {
      const t = performance.now();
      for (let i = 0; i < k; i++) await f();
      return (performance.now() - t) / k;
    };
    for (const name of names) await timed(sides[name], perBlock); // warm-up
    const samples = Object.fromEntries(names.map((n) => [n, []]));
    for (let b = 0; b < blocks; b++) {
      for (const name of b % 2 ? names.slice().reverse() : names) samples[name].push(await timed(sides[name], perBlock));
    }
    const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    return { jp: median(samples.jp), fetch: median(samples.fetch), bytes: body.length, path: new URL(url).pathname };
  }, HTTP);
  const calls = HTTP.blocks * HTTP.perBlock;
  console.log(`http.get of ${http.path} (${http.bytes} B, same origin, Authorization: Bearer \${API_TOKEN}), ${calls} calls each in alternating blocks of ${HTTP.perBlock}: through the fetch component's api_get ${us(http.jp)} per call (check, snapshot, pooled instance, JSPI suspend, policy decision, secret substituted, fetch + body, scrub, outcome); the page's fetch() + text() ${us(http.fetch)} -> ${(http.jp / http.fetch).toFixed(2)}x`);
  rows.push(`TABLE|PAGE-http|a component's http.get (api_get of a ${http.bytes} B same-origin file, Bearer \${API_TOKEN} from setSecrets) through jp vs the page's fetch + text() of the same URL and header, Chromium (${calls} calls each, alternating blocks)|${us(http.jp)}|fetch ${us(http.fetch)}|${(http.jp / http.fetch).toFixed(2)}x|report|-`);

  // 4 in the page: the same measurement, the transpiles served from the temporary directory.
  const served = (path, cores) => ({ module: `${server.url}${path}bench.js`, base: `${server.url}${path}`, cores });
  const inPage = await page.evaluate(measureCallPaths, {
    ...PATHS,
    sides: { sync: served('__bench-jspi/sync/', transpiled.sync.cores), jspi: served('__bench-jspi/jspi/', transpiled.jspi.cores), checked: served('components/bench/', builtCores(built)) },
    jp: { js: `${server.url}jp.js` },
  });
  callPaths('chromium', `Chromium ${browser.version()}`, inPage);
  for (const row of rows) console.log(row);
} finally {
  await browser.close();
  await server.close();
}
