// The www/ playground in headless Chromium (playwright-core, /usr/bin/chromium) against a server
// on 127.0.0.1 that the test starts and stops.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { serve } from '../scripts/serve.mjs';

const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
let server;
let browser;

before(async () => {
  server = await serve(0);
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: ARGS });
});
after(async () => {
  await browser?.close();
  await server?.close();
});

async function open(page, db) {
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${server.url}?db=${db}`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 30_000 }).catch((e) => {
    throw new Error(`the page did not get ready: ${e.message}; page errors: ${errors.join('; ')}`);
  });
}

test('write a file, grep it with the fs component, see a denied write in the log, reload', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const db = `t-${Date.now()}`;
  await open(page, db);

  const tools = await page.evaluate(() => window.jpHost.listTools());
  assert.ok(tools.some((t) => t.name === 'fs_grep_files'), JSON.stringify(tools));

  await page.evaluate(() => window.jpHost.writeFile('src/lib.rs', 'pub fn hello() {}\n'));
  const grep = await page.evaluate(() => window.jpHost.callTool('fs_grep_files', { pattern: 'fn hello' }));
  assert.equal(grep.tag, 'success', JSON.stringify(grep));
  assert.match(grep.val, /src\/lib\.rs:1:pub fn hello/);
  assert.match(await page.textContent('#result'), /fn hello/);

  await page.evaluate(() => window.jpHost.setPolicy('[access]\nfilesystem = [{ path = ".", allow = ["read"] }]\n'));
  const denied = await page.evaluate(() => window.jpHost.callTool('fs_create_file', { path: 'new.txt', content: 'x' }));
  assert.equal(denied.tag, 'error');
  assert.match(denied.val.message, /Access denied/);
  const deny = await page.locator('#log li.deny').last().textContent();
  assert.match(deny, /fs_create_file fs\.write new\.txt/);
  assert.equal(await page.evaluate(() => window.jpHost.listFiles()).then((f) => f.includes('new.txt')), false);

  await page.reload();
  await page.waitForSelector('body[data-ready="true"]');
  assert.equal(await page.evaluate(() => window.jpHost.readFile('src/lib.rs')), 'pub fn hello() {}\n');
  assert.match(await page.textContent('#files'), /src\/lib\.rs/);
  await context.close();
});

test('the playground UI drives a tool call end to end', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await open(page, `ui-${Date.now()}`);
  await page.fill('#file-path', 'notes.md');
  await page.fill('#file-content', 'remember the milk\n');
  await page.click('#file-form button[type=submit]');
  await page.waitForSelector('#files li:has-text("notes.md")');
  await page.selectOption('#tool', 'fs_read_file');
  await page.fill('#args', '{"path": "notes.md"}');
  await page.click('#call');
  await page.waitForFunction(() => document.querySelector('#result').textContent.includes('milk'));
  assert.match(await page.locator('#log li.allow').last().textContent(), /fs\.read notes\.md/);
  await context.close();
});

test('an endless loop in a component ends at the deadline while the page stays responsive', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${server.url}?db=t-spin-${Date.now()}&faults&deadline=1500`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 30_000 });
  const r = await page.evaluate(async () => {
    // Timer ticks while the call runs: none would fire if the loop ran on the page's thread.
    let ticks = 0;
    const interval = setInterval(() => { ticks += 1; }, 50);
    const outcome = await window.jpHost.callTool('spin', {});
    clearInterval(interval);
    const after = await window.jpHost.callTool('ok', {});
    return { outcome, ticks, after };
  });
  assert.equal(r.outcome.tag, 'error', JSON.stringify(r.outcome));
  assert.match(r.outcome.val.message, /tool 'spin' ran past its deadline of 1500 ms/);
  assert.ok(r.ticks > 0, `the page's timers must keep running during the call (ticks: ${r.ticks})`);
  assert.equal(r.after.tag, 'success', 'the page keeps calling tools afterwards');
  assert.deepEqual(errors, []);
  await context.close();
});
