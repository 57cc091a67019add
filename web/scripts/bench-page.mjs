// The playground's first load (`npm run page-bench`, part of ./tests/bench), in headless Chromium
// against www/ served as a static host would (gzip, ETag revalidation: serve.mjs `hosted`).
// Prints medians and `TABLE|…` lines; asserts nothing but that each side did its work.
//
// Ours: a visit to the playground, from the navigation's start to `body[data-ready]` (every
// module fetched, jp-web and the components compiled and instantiated, the project opened in
// IndexedDB, the tools listed: the moment a visitor can act), its time taken by the page itself
// (`data-ready-ms`, from `performance.now()`).
// Baseline: the same files fetched on the same origin by a blank page, all at once, nothing
// compiled or run — what the download alone costs on this machine; ours less it is what the page
// adds (compiling, instantiating, opening the project).
// Cold: a new browser context for each visit (an empty HTTP cache and no compiled code kept);
// warm: a reload in the context of an earlier visit (every file revalidated by its ETag, 304).
// The two sides alternate, each after a warm-up visit of its own.
import { readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { serve } from './serve.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const RUNS = Number(process.env.JP_PAGE_RUNS ?? 9);
const GOAL = { gz: 1.2e6, coldMs: 1000 };

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const mb = (n) => `${(n / 1e6).toFixed(2)} MB`;
const ms = (n) => `${Math.round(n)} ms`;

const server = await serve(0, { hosted: true });
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: ARGS });
let visits = 0;

/** One visit of the playground in `context`; its time to ready and what it fetched. */
async function visit(page, reload = false) {
  if (reload) await page.reload();
  else await page.goto(`${server.url}?db=bench-load-${process.pid}-${++visits}`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 60_000 });
  return page.evaluate(() => ({
    readyMs: Number(document.body.dataset.readyMs),
    files: [performance.getEntriesByType('navigation')[0], ...performance.getEntriesByType('resource')]
      .map((e) => ({ url: e.name, start: e.startTime, status: e.responseStatus, encoded: e.encodedBodySize, decoded: e.decodedBodySize, transfer: e.transferSize })),
  }));
}

/** The baseline: a blank page of the same origin fetches `urls` at once and reads them whole. */
async function fetchAll(page, urls) {
  return page.evaluate(async (list) => {
    const t = performance.now();
    await Promise.all(list.map((u) => fetch(u).then((r) => r.arrayBuffer()).catch((e) => { throw new Error(`${u}: ${e.message}`); })));
    return performance.now() - t;
  }, urls);
}
async function blank(context) {
  const page = await context.newPage();
  await page.route(`${server.url}blank`, (route) => route.fulfill({ contentType: 'text/html', body: '<!doctype html><title>blank</title>' }));
  await page.goto(`${server.url}blank`);
  return page;
}

// The files a first visit fetches, and their sizes as sent (gzip) and as read.
const first = await browser.newContext();
const seen = await visit(await first.newPage());
await first.close();
// The files of the page's first screen: fetched before it was ready (not what it loads after,
// the argument validator; not a missing favicon the browser asks for on its own).
const page = seen.files.filter((f) => f.url.startsWith(server.url) && f.status === 200);
const files = page.filter((f) => f.start < seen.readyMs);
const later = page.filter((f) => f.start >= seen.readyMs);
const urls = files.map((f) => f.url);
const jpWeb = files.find((f) => f.url.endsWith('/pkg/jp_web_bg.wasm'));
if (!jpWeb) throw new Error(`the visit did not fetch jp-web: ${urls.join(', ')}`);
const total = files.reduce((n, f) => n + f.encoded, 0);
const raw = readFileSync(join(root, 'www/pkg/jp_web_bg.wasm'));
if (jpWeb.decoded !== raw.length) throw new Error(`jp-web read ${jpWeb.decoded} B, the file has ${raw.length} B`);
console.log(`a first visit fetches ${files.length} files before it is ready, ${mb(total)} as sent (gzip -9); jp-web ${mb(jpWeb.encoded)} of them (${mb(raw.length)} uncompressed); after: ${later.map((f) => `${f.url.slice(server.url.length - 1)} ${mb(f.encoded)}`).join(', ') || 'nothing'}`);

// Cold: a new context per visit, the two sides alternating.
const cold = { ours: [], base: [] };
for (let i = 0; i <= RUNS; i += 1) {
  for (const side of i % 2 ? ['base', 'ours'] : ['ours', 'base']) {
    const context = await browser.newContext();
    const t = side === 'ours' ? (await visit(await context.newPage())).readyMs : await fetchAll(await blank(context), urls);
    if (i > 0) cold[side].push(t); // the first round warms the server's gzip and the browser up
    await context.close();
  }
}
// Warm: one context per side, visited once, then reloaded.
const warm = { ours: [], base: [] };
const oursContext = await browser.newContext();
const oursPage = await oursContext.newPage();
await visit(oursPage);
const baseContext = await browser.newContext();
const basePage = await blank(baseContext);
await fetchAll(basePage, urls);
for (let i = 0; i < RUNS; i += 1) {
  for (const side of i % 2 ? ['base', 'ours'] : ['ours', 'base']) {
    warm[side].push(side === 'ours' ? (await visit(oursPage, true)).readyMs : await fetchAll(basePage, urls));
  }
}
await oursContext.close();
await baseContext.close();
await browser.close();
await server.close();

const r = { cold: { ours: median(cold.ours), base: median(cold.base) }, warm: { ours: median(warm.ours), base: median(warm.base) } };
console.log(`first load to ready, cold: ${ms(r.cold.ours)} (the same files fetched alone: ${ms(r.cold.base)}); warm: ${ms(r.warm.ours)} (${ms(r.warm.base)}); medians of ${RUNS}`);
const x = (a, b) => `${(a / b).toFixed(2)}x`;
const status = (ok) => (ok ? 'met' : 'open');
console.log(`TABLE|PAGE-load-bytes|the playground's first visit: jp-web as sent (gzip -9) vs every file the visit fetches (${files.length}), as sent|jp-web ${mb(jpWeb.encoded)}|all ${mb(total)}|${x(jpWeb.encoded, total)}|jp-web ≤ 1.2 MB|${status(jpWeb.encoded <= GOAL.gz)}`);
console.log(`TABLE|PAGE-load-cold|the playground's first visit, new context (empty cache), to data-ready vs the same files fetched at once by a blank page|${ms(r.cold.ours)}|${ms(r.cold.base)}|${x(r.cold.ours, r.cold.base)}|≤ 1 s|${status(r.cold.ours <= GOAL.coldMs)}`);
console.log(`TABLE|PAGE-load-warm|a reload after a visit (ETag revalidated, compiled code kept), to data-ready vs the same files fetched again by a blank page|${ms(r.warm.ours)}|${ms(r.warm.base)}|${x(r.warm.ours, r.warm.base)}|report|-`);
// What gzip would make of each file, for a reader comparing builds.
for (const f of files.sort((a, b) => b.encoded - a.encoded).slice(0, 6)) {
  console.log(`  ${f.url.slice(server.url.length - 1)}: ${mb(f.encoded)} sent, ${mb(f.decoded)} read`);
}
