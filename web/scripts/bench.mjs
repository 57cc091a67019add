// Browser benchmarks (`npm run bench`), in headless Chromium against the playground served on
// 127.0.0.1. Prints medians and ratios against baselines run in the same page; asserts nothing.
//  1. 1,000 × 4 KiB write + read through a component (jp:host imports → core dispatcher →
//     snapshot, written back to IndexedDB in one transaction) vs raw IndexedDB from JS.
//  2. A component tool call (fresh instance, session, write-back) vs a bare wasm export call.
import { chromium } from 'playwright-core';
import { serve } from './serve.mjs';

const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const server = await serve(0);
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: ARGS });
try {
  const page = await browser.newPage();
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
  const us = (x) => `${(x * 1000).toFixed(3)} µs`;
  console.log(`1,000 x 4 KiB write+read through a component: ${ms(r.component)}; raw IndexedDB from JS: ${ms(r.perOp)} (one transaction per operation) -> ${(r.component / r.perOp).toFixed(2)}x (goal <= 1.5x); ${ms(r.batched)} (batched in two transactions) -> ${(r.component / r.batched).toFixed(2)}x`);
  console.log(`component tool call (fresh instance + session + write-back): ${us(r.call)}; bare wasm export call: ${us(r.bare)} (${(r.call / r.bare).toFixed(0)}x); bare instantiate + call of a tiny compiled module: ${us(r.fresh)} (${(r.call / r.fresh).toFixed(1)}x)`);
} finally {
  await browser.close();
  await server.close();
}
