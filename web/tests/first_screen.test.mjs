// The playground's first minute, as a visitor meets it in headless Chromium: the first screen
// (a sample project, the chat first with the demo ready to send) and a finished demo turn (every
// question before the call it asked about, every decision worded for what ran it). Each test
// takes a screenshot of what it checks, checks that the chat's part of the image shows text,
// and keeps the image in $JP_SCREENS (default: the system's temporary folder) for a person to look at.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, openPlayground } from './chromium.mjs';
import { serve } from '../scripts/serve.mjs';

const VIEWPORT = { width: 1280, height: 800 };
const SCREENS = process.env.JP_SCREENS ?? join(tmpdir(), 'jp-screens');
let server;
let browser;

before(async () => {
  mkdirSync(SCREENS, { recursive: true });
  server = await serve(0);
  browser = await launch();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

/** A fresh visitor: a new context (no storage) and a database never opened before. */
async function visit(name) {
  const context = await browser.newContext({ viewport: VIEWPORT });
  const page = await context.newPage();
  const errors = await openPlayground(page, `${server.url}?db=${name}-${Date.now()}`);
  return { context, page, errors };
}

/** The element's box in the viewport. */
const box = (page, selector) => page.locator(selector).evaluate((e) => {
  const r = e.getBoundingClientRect();
  return { x: r.x, y: r.y, width: r.width, height: r.height, bottom: r.bottom, right: r.right };
});

/**
 * Take a screenshot, keep it as `name`.png, and say what share of the pixels in `region` (a box
 * of the viewport) differ clearly from that region's most common colour: text and controls, as
 * the image shows them (decoded by the page's own canvas, not read from the DOM).
 */
async function screenshot(t, page, name, region) {
  const path = join(SCREENS, `${name}.png`);
  const png = await page.screenshot({ path });
  t.diagnostic(`screenshot: ${path}`);
  return page.evaluate(async ({ b64, r }) => {
    const bitmap = await createImageBitmap(await (await fetch(`data:image/png;base64,${b64}`)).blob());
    const canvas = new OffscreenCanvas(bitmap.width, bitmap.height);
    const ctx = canvas.getContext('2d');
    ctx.drawImage(bitmap, 0, 0);
    const { data } = ctx.getImageData(Math.round(r.x), Math.round(r.y), Math.round(r.width), Math.round(r.height));
    const counts = new Map();
    for (let i = 0; i < data.length; i += 4) {
      const key = (data[i] << 16) | (data[i + 1] << 8) | data[i + 2];
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    const [background] = [...counts].sort((a, b) => b[1] - a[1])[0];
    const [br, bg, bb] = [background >> 16, (background >> 8) & 255, background & 255];
    let ink = 0;
    for (let i = 0; i < data.length; i += 4) {
      if (Math.abs(data[i] - br) + Math.abs(data[i + 1] - bg) + Math.abs(data[i + 2] - bb) > 96) ink += 1;
    }
    return ink / (data.length / 4);
  }, { b64: png.toString('base64'), r: region });
}

test('the first screen: a sample project beside the chat, the demo ready to send, all in view', async (t) => {
  const { context, page, errors } = await visit('first');
  try {
    // The sample project, listed, not an empty tree.
    const files = await page.locator('#files li').allTextContents();
    assert.deepEqual(files.sort(), ['README.md', 'docs/notes.md', 'src/inventory.py']);
    assert.match(await page.evaluate(() => window.jpHost.readFile('README.md')), /fix the TODO/);
    // The chat comes first: above the tool form, its prompt filled in, Send in view.
    const chat = await box(page, '#agent-pane');
    const tools = await box(page, '#tools-pane');
    assert.ok(chat.y < tools.y, `the chat (y ${chat.y}) is above the tool form (y ${tools.y})`);
    assert.equal(await page.inputValue('#agent-kind'), 'demo');
    assert.equal(await page.inputValue('#agent-prompt'), 'fix the TODO');
    const send = await box(page, '#agent-send');
    assert.ok(send.bottom <= VIEWPORT.height && send.right <= VIEWPORT.width, `Send is in view: ${JSON.stringify(send)}`);
    assert.match(await page.textContent('#chat li.intro'), /press Send.*asks you first/s);
    for (const pane of ['#agent-pane', '#files-pane', '#side-pane']) {
      const b = await box(page, pane);
      assert.ok(b.y < VIEWPORT.height && b.right <= VIEWPORT.width, `${pane} starts in view: ${JSON.stringify(b)}`);
    }
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= innerWidth), 'nothing wider than the window');
    // The policy's text says what it is without a number to look up.
    assert.doesNotMatch(await page.inputValue('#policy'), /RFD/);
    const ink = await screenshot(t, page, 'first-screen', await box(page, '#chat'));
    assert.ok(ink > 0.01, `the chat's part of the screenshot shows text (${(ink * 100).toFixed(2)}% of its pixels)`);
    // The argument validator is not part of the first screen: fetched once the page is ready,
    // and the first call checks its arguments with it, in the core's words.
    const loads = await page.evaluate(() => performance.getEntriesByType('resource').map((e) => ({ url: e.name, start: e.startTime })));
    const readyMs = Number(await page.getAttribute('body', 'data-ready-ms'));
    const validator = loads.filter((e) => e.url.endsWith('/pkg/validate/jp_validate_bg.wasm'));
    assert.ok(validator.length <= 1 && validator.every((e) => e.start >= readyMs), JSON.stringify({ readyMs, validator }));
    const typo = await page.evaluate(() => window.jpHost.callTool('fs_read_file', { pth: 'README.md' }));
    assert.equal(typo.tag, 'error', JSON.stringify(typo));
    assert.match(typo.val.message, /argument 'pth' is not one of this tool's arguments; did you mean 'path'\?/);
    // A second open of the same database does not write the sample again.
    await page.evaluate(() => window.jpHost.host.deleteFile('docs/notes.md'));
    await page.reload();
    await page.waitForSelector('body[data-ready="true"]');
    assert.deepEqual((await page.locator('#files li').allTextContents()).sort(), ['README.md', 'src/inventory.py']);
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});

test('a finished demo turn reads in the order things happened, each decision worded for what ran it', async (t) => {
  const { context, page, errors } = await visit('demo-turn');
  try {
    await page.click('#agent-send');
    // The first question, in jp query's words; "for the rest of this turn" allows the second
    // create of the same reply unasked. The edit later is asked about, and allowed once.
    const first = page.locator('#chat li.ask').first();
    await first.locator('button').first().waitFor({ timeout: 30_000 });
    assert.deepEqual(await first.locator('button').allTextContents(),
      ['Allow once', 'Allow fs_create_file for the rest of this turn', 'Deny']);
    await first.locator('button.allow-turn').click();
    const ended = page.locator('#chat li.note:has-text("turn ended")');
    while (!(await ended.count())) {
      const allow = page.locator('#chat li.ask button.allow-once:not([disabled])');
      await Promise.race([allow.first().waitFor({ timeout: 30_000 }), ended.waitFor({ timeout: 30_000 })]);
      if (await allow.count()) await allow.first().click();
    }
    assert.match(await page.locator('#chat li.assistant').last().textContent(), /now greets the person named on the command line/);
    // Every question sits just before the call it asked about, and that call ran after it.
    const order = await page.locator('#chat > li').evaluateAll((items) => items.map((li) => ({
      kind: li.className.split(' ')[0], tool: li.dataset.tool ?? null, text: li.textContent,
    })));
    const asks = order.map((e, i) => [e, i]).filter(([e]) => e.kind === 'ask');
    assert.deepEqual(asks.map(([e]) => e.text.match(/^Allow (\w+)\?/)?.[1]), ['fs_create_file', 'fs_modify_file']);
    assert.match(asks[0][0].text, /— allowed for the rest of this turn$/);
    assert.match(asks[1][0].text, /— allowed once$/);
    for (const [ask, i] of asks) {
      const next = order[i + 1];
      assert.equal(next?.kind, 'tool', JSON.stringify(order.slice(i, i + 2)));
      assert.match(ask.text, new RegExp(`^Allow ${next.tool}\\?`), ask.text);
      assert.match(next.text, /✓/, 'the call ran, and its result is in its entry');
    }
    assert.equal(order.filter((e) => e.kind === 'tool' && e.tool === 'fs_create_file').length, 2);
    // The order of the conversation: the user, the intro before it, the final answer last.
    assert.equal(order.findIndex((e) => e.kind === 'user'), 1, JSON.stringify(order.map((e) => e.kind)));
    assert.equal(order.at(-1).kind, 'note');
    assert.equal(order.at(-2).kind, 'assistant');
    // The page's decisions are the page's: its default policy, not a stdio tool's.
    const log = await page.locator('#log li').allTextContents();
    assert.ok(log.length >= 8, log.join('\n'));
    for (const line of log) {
      assert.match(line, /allowed by the host's default policy \(workspace read-write\)$/, line);
      assert.doesNotMatch(line, /stdio/, line);
    }
    assert.match(await page.evaluate(() => window.jpHost.readFile('jp-demo/src/greet.py')), /name = sys\.argv\[1\]/);
    await page.waitForSelector('#files li:has-text("jp-demo/src/greet.py")');
    const ink = await screenshot(t, page, 'demo-turn', await box(page, '#chat'));
    assert.ok(ink > 0.01, `the chat's part of the screenshot shows text (${(ink * 100).toFixed(2)}% of its pixels)`);
    // "The rest of this turn" ends with it: the next turn asks again.
    await page.fill('#agent-prompt', 'fix the TODO');
    await page.click('#agent-send');
    await page.waitForFunction(() => document.querySelectorAll('#chat li.ask').length === 3, null, { timeout: 30_000 });
    assert.match(await page.locator('#chat li.ask').last().textContent(), /^Allow fs_create_file\?/);
    await page.click('#agent-stop');
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});
