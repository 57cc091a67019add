// The www/ playground in headless Chromium (playwright-core, /usr/bin/chromium) against a server
// on 127.0.0.1 that the test starts and stops.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launch, openPlayground } from './chromium.mjs';
import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { serve } from '../scripts/serve.mjs';

const root = join(import.meta.dirname, '..', '..');
const run = promisify(execFile);

let server;
let browser;

before(async () => {
  server = await serve(0);
  browser = await launch();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

async function open(page, db) {
  return openPlayground(page, `${server.url}?db=${db}`);
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

test('a denied write in the log is offered as a policy that allows just it; accepted, the call goes through', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await open(page, `learn-${Date.now()}`);
  await page.evaluate(() => window.jpHost.setPolicy('[access]\nfilesystem = [{ path = ".", allow = ["read"] }]\n'));
  const denied = await page.evaluate(() => window.jpHost.callTool('fs_create_file', { path: 'notes/new.txt', content: 'x' }));
  assert.equal(denied.tag, 'error', JSON.stringify(denied));
  await page.locator('#log li.deny button.learn').last().click();
  const card = page.locator('#log li.proposal').last();
  assert.match(await card.textContent(), /fs_create_file was refused fs\.write notes\/new\.txt.*files: notes\/new\.txt create/s);
  const text = await card.locator('pre').textContent();
  assert.match(text, /path = "notes\/new\.txt"/);
  assert.match(text, /allow = \["read", "create"\]/);
  // Nothing is applied until accepted.
  assert.match(await page.inputValue('#policy'), /^\[access\]\nfilesystem = \[\{ path = "\.", allow = \["read"\] \}\]/);
  await card.locator('button.accept').click();
  assert.equal(await page.inputValue('#policy'), text);
  const made = await page.evaluate(() => window.jpHost.callTool('fs_create_file', { path: 'notes/new.txt', content: 'x' }));
  assert.equal(made.tag, 'success', JSON.stringify(made));
  // Only that path: another write is still refused.
  const other = await page.evaluate(() => window.jpHost.callTool('fs_create_file', { path: 'notes/other.txt', content: 'y' }));
  assert.equal(other.tag, 'error', JSON.stringify(other));
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
  // The form is generated from the schema: `path` is a required text input.
  assert.match(await page.textContent('label[for="arg-path"]'), /path\s*\*/);
  await page.click('#call');
  await page.waitForFunction(() => document.querySelector('#result').textContent.includes("'path' is required"));
  await page.fill('#arg-path', 'notes.md');
  await page.click('#call');
  await page.waitForFunction(() => document.querySelector('#result').textContent.includes('milk'));
  assert.equal(await page.textContent('#result-status'), 'Done');
  assert.match(await page.locator('#log li.allow').last().textContent(), /fs\.read notes\.md/);

  // A list of strings is one item per line, numbers are numbers, nested values are JSON.
  await page.selectOption('#tool', 'fs_grep_files');
  assert.equal(await page.getAttribute('#arg-paths', 'placeholder'), 'one per line');
  await page.fill('#arg-pattern', 'milk');
  await page.fill('#arg-paths', 'notes.md\n');
  await page.click('#call');
  await page.waitForFunction(() => document.querySelector('#result').textContent.includes('notes.md:1:remember the milk'));

  // The raw JSON box is still there, under a toggle.
  await page.selectOption('#tool', 'fs_create_file');
  await page.click('#raw summary');
  await page.fill('#args', '{"path": "new.md", "content": "made from JSON\\n"}');
  await page.click('#call');
  await page.waitForFunction(() => document.querySelector('#result-status').textContent.includes('changed: new.md'));
  await page.waitForSelector('#files li:has-text("new.md")');
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

test("a Worker-hosted session's writes are the page's to decide: kept under its policy, refused once the page narrowed it", async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await open(page, `t-live-write-${Date.now()}`);
  const r = await page.evaluate(async () => {
    const h = window.jpHost.host;
    const base = new URL('./components/faults-stateful/', location.href);
    await h.registerComponent('faults-stateful', new URL('faults-stateful.js', base), base,
      [{ name: 'fault_session', summary: 'faults', parameters: {}, actions: ['spawn', 'fetch', 'apply', 'abort'] }]);
    h.setPolicy('[access]\nfilesystem = [{ path = ".", allow = ["read", "write"] }]\n');
    const spawned = await h.spawn('fault_session', {}, { owner: 'w' });
    const id = spawned.val?.id;
    const workers = h.liveWorkers.size;
    const wrote = await h.applyHandle('fault_session', id, 'write:live.txt', { owner: 'w' });
    const content = await h.readFile('live.txt');
    // The Worker was given the policy of the spawn; the page's, narrowed since, decides.
    h.setPolicy('[access]\nfilesystem = [{ path = ".", allow = ["read"] }]\n');
    const refused = await h.applyHandle('fault_session', id, 'write:late.txt', { owner: 'w' });
    const listed = await h.listFiles();
    await h.closeHandles('w');
    return { spawned, workers, wrote, content, refused, listed, left: h.liveWorkers.size };
  });
  assert.equal(r.spawned.tag, 'handle', JSON.stringify(r.spawned));
  assert.equal(r.workers, 1, 'the handle is a Worker of its own');
  assert.equal(r.wrote.val?.content, 'wrote live.txt', JSON.stringify(r.wrote));
  assert.equal(r.content, 'written by a session');
  // The command failed: its handle stopped, the reason the page's policy.
  assert.equal(r.refused.val?.state, 'stopped', JSON.stringify(r.refused));
  assert.match(r.refused.val.error.message, /^tool 'fault_session' changed files the page's policy refuses: Access denied: create 'late\.txt'/);
  assert.ok(!r.listed.includes('late.txt'), `nothing refused is written: ${r.listed}`);
  assert.equal(r.left, 0, 'no Worker is left after its owner ended');
  await context.close();
});

test("a component's content blocks are shown as what they are: an image, a player, one line for a resource", async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${server.url}?db=t-media-${Date.now()}&media`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 30_000 });
  await page.selectOption('#tool', 'chart');
  await page.fill('#arg-label', 'sales');
  await page.click('#call');
  await page.waitForSelector('#result img.block-image');
  assert.match(await page.textContent('#result'), /sales: a 4x4 red square/);
  // The image is decoded by the browser: a real 4×4 PNG, not text.
  const size = await page.evaluate(async () => {
    const img = document.querySelector('#result img.block-image');
    await img.decode();
    return [img.naturalWidth, img.naturalHeight, img.alt];
  });
  assert.deepEqual(size, [4, 4, '[image/png, 73 B]']);
  await page.selectOption('#tool', 'tone');
  await page.click('#call');
  await page.waitForSelector('#result audio[controls]');

  // The same blocks as the agent gets them, and through the API.
  const r = await page.evaluate(async () => {
    await window.jpHost.writeFile('notes.txt', 'a\nb\n');
    const outcome = await window.jpHost.callTool('report', { path: 'notes.txt' });
    const bad = await window.jpHost.callTool('bad_meta', {});
    const { agentResult } = await import('./jp.js');
    return { outcome, bad, agent: agentResult('report', outcome) };
  });
  assert.equal(r.outcome.tag, 'success', JSON.stringify(r.outcome));
  assert.equal(r.outcome.val, 'notes.txt: 2 lines, 4 bytes\n[resource file:///workspace/notes.txt (text/plain, 4 B)]\n[link file:///workspace/notes.txt (text/plain)]');
  assert.deepEqual(r.outcome.result.structuredContent, { path: 'notes.txt', lines: 2, bytes: 4 });
  assert.deepEqual(r.agent.structuredContent, { path: 'notes.txt', lines: 2, bytes: 4 });
  assert.equal(r.agent.content[2].type, 'resource_link');
  assert.equal(r.agent.isError, false);
  assert.equal(r.bad.tag, 'error');
  // A block's media type is the component's: one that is not a raster image is never loaded.
  await page.selectOption('#tool', 'big');
  await page.fill('#arg-bytes', '16');
  await page.fill('#arg-mime', 'text/html');
  await page.click('#call');
  await page.waitForFunction(() => document.querySelector('#result').textContent.includes('[image text/html, 16 B]'));
  assert.equal(await page.locator('#result img, #result iframe, #result object, #result embed').count(), 0);
  assert.match(r.bad.val.message, /^tool 'bad_meta' returned a result jp cannot use: block 0: meta is not JSON/);
  assert.deepEqual(errors, []);
  await context.close();
});

/**
 * A scripted OpenAI-compatible model on 127.0.0.1 (CORS open, as a local llama.cpp or Ollama is
 * for a page): it answers request N with `replies[N]` and keeps every request it got. A reply's
 * `hold` (a promise) keeps it back until it resolves: the page is then between two rounds.
 */
async function scriptedModel(replies) {
  const { createServer } = await import('node:http');
  const seen = [];
  const server = createServer(async (req, res) => {
    const cors = { 'access-control-allow-origin': '*', 'access-control-allow-headers': '*', 'access-control-allow-methods': 'POST' };
    if (req.method === 'OPTIONS') { res.writeHead(204, cors); res.end(); return; }
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = JSON.parse(Buffer.concat(chunks).toString());
    seen.push({ url: req.url, authorization: req.headers.authorization, body });
    const reply = replies[seen.length - 1] ?? { content: 'no more replies in the script' };
    if (reply.hold) await reply.hold;
    const calls = (reply.calls ?? []).map(([name, args], i) => ({ id: `call_${seen.length}_${i}`, name, arguments: JSON.stringify(args) }));
    const finish = calls.length ? 'tool_calls' : 'stop';
    if (body.stream) {
      // Server-sent events, as the page asks: the text in two deltas, each call's arguments in two.
      res.writeHead(200, { 'content-type': 'text/event-stream', ...cors });
      const send = (delta, finishReason = null) => res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finishReason }] })}\n\n`);
      const text = reply.content ?? '';
      // `gate`: the second half waits for it (the page must show the first half meanwhile).
      const cut = reply.gate ? text.indexOf(' ', 6) : 5;
      if (text) {
        send({ role: 'assistant', content: text.slice(0, cut) });
        if (reply.gate) await reply.gate;
        send({ content: text.slice(cut) });
      }
      calls.forEach((c, index) => {
        const half = Math.floor(c.arguments.length / 2);
        send({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments.slice(0, half) } }] });
        send({ tool_calls: [{ index, function: { arguments: c.arguments.slice(half) } }] });
      });
      send({}, finish);
      res.end('data: [DONE]\n\n');
      return;
    }
    const message = { role: 'assistant', content: reply.content ?? null };
    if (calls.length) message.tool_calls = calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }));
    res.writeHead(200, { 'content-type': 'application/json', ...cors });
    res.end(JSON.stringify({ choices: [{ index: 0, message, finish_reason: finish }] }));
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  return { url: `http://127.0.0.1:${server.address().port}/v1`, seen, close: () => new Promise((ok) => server.close(ok)) };
}

test('the agent panel runs a whole turn: tool calls asked in the page, decisions inline, the edit in the file tree', async () => {
  const KEY = 'sk-test-playground-secret';
  const model = await scriptedModel([
    { content: 'Let me look at the file.', calls: [['fs_read_file', { path: 'todo.txt' }]] },
    { calls: [['fs_modify_file', { path: 'todo.txt', patterns: [{ old: 'TODO: buy milk', new: 'DONE: bought milk' }] }]] },
    { content: 'Done: the TODO in todo.txt is now marked done.' },
  ]);
  const context = await browser.newContext();
  const page = await context.newPage();
  try {
    await open(page, `agent-${Date.now()}`);
    await page.evaluate(() => window.jpHost.writeFile('todo.txt', 'TODO: buy milk\n'));
    await page.selectOption('#agent-kind', 'openai');
    await page.fill('#agent-url', model.url);
    await page.fill('#agent-model', 'scripted');
    await page.fill('#agent-key', KEY);
    await page.fill('#agent-prompt', 'fix the TODO');
    await page.click('#agent-send');

    // The read runs without asking; the policy lets tools write, so the page asks before the
    // edit, and the answer is a click.
    await page.click('#chat li.ask button.allow-once');
    await page.waitForSelector('#chat li.assistant:has-text("Done: the TODO")', { timeout: 20_000 });
    assert.equal(await page.locator('#chat li.ask').count(), 1, 'one question: before fs_modify_file');
    assert.match(await page.textContent('#chat li.ask'), /Allow fs_modify_file/);

    // Each call shows inline with the host decisions it caused, and its result.
    const calls = page.locator('#chat li.tool');
    assert.equal(await calls.count(), 2);
    assert.match(await calls.nth(0).textContent(), /fs_read_file.*fs\.read todo\.txt → allow.*✓ TODO: buy milk/s);
    assert.match(await calls.nth(1).textContent(), /fs_modify_file.*fs\.write todo\.txt → allow.*✓/s);

    // The edit is in the files, and the file tree shows it.
    assert.equal(await page.evaluate(() => window.jpHost.readFile('todo.txt')), 'DONE: bought milk\n');
    await page.click('#files li:has-text("todo.txt")');
    await page.waitForFunction(() => document.querySelector('#file-content').value.includes('DONE: bought milk'));

    // The model got each result, the key went only into the Authorization header.
    assert.equal(model.seen.length, 3);
    assert.equal(model.seen[0].body.stream, true, 'the page asks for a stream');
    const second = model.seen[1].body.messages;
    assert.ok(second.some((m) => m.role === 'tool' && m.content.includes('TODO: buy milk')), JSON.stringify(second));
    assert.equal(model.seen[0].authorization, `Bearer ${KEY}`);
    assert.ok(model.seen[0].body.tools.some((t) => t.function.name === 'fs_modify_file'));
    for (const s of model.seen) assert.doesNotMatch(JSON.stringify(s.body), new RegExp(KEY));
    assert.doesNotMatch(await page.textContent('#chat'), new RegExp(KEY));
    assert.equal(await page.evaluate(() => localStorage.getItem('jp-agent-settings')).then((s) => s.includes(KEY)), false);
    assert.equal(await page.evaluate(() => sessionStorage.getItem('jp-agent-key')), KEY);
  } finally {
    await context.close();
    await model.close();
  }
});

test('a call the user declines reaches the model as an error and changes nothing', async () => {
  const model = await scriptedModel([
    { calls: [['fs_create_file', { path: 'unwanted.txt', content: 'x' }]] },
    { content: 'Understood, I will not create it.' },
  ]);
  const context = await browser.newContext();
  const page = await context.newPage();
  try {
    await open(page, `agent-deny-${Date.now()}`);
    await page.selectOption('#agent-kind', 'openai');
    await page.fill('#agent-url', model.url);
    await page.fill('#agent-model', 'scripted');
    await page.fill('#agent-prompt', 'make a file');
    await page.click('#agent-send');
    await page.click('#chat li.ask button.deny');
    await page.waitForSelector('#chat li.assistant:has-text("Understood")', { timeout: 20_000 });
    assert.match(await page.locator('#chat li.tool').textContent(), /✗/);
    const tool = model.seen[1].body.messages.find((m) => m.role === 'tool');
    assert.match(tool.content, /declined/);
    assert.equal((await page.evaluate(() => window.jpHost.listFiles())).includes('unwanted.txt'), false);
  } finally {
    await context.close();
    await model.close();
  }
});

test('the question shows the whole path first and names the long content it cut', async () => {
  const model = await scriptedModel([
    { calls: [['fs_create_file', { content: 'A'.repeat(5000), path: '.jp/config.toml' }]] },
    { content: 'Understood, I will leave it.' },
  ]);
  const context = await browser.newContext();
  const page = await context.newPage();
  try {
    await open(page, `agent-prompt-${Date.now()}`);
    await page.selectOption('#agent-kind', 'openai');
    await page.fill('#agent-url', model.url);
    await page.fill('#agent-model', 'scripted');
    await page.fill('#agent-prompt', 'configure it');
    await page.click('#agent-send');
    await page.waitForSelector('#chat li.ask button.deny');
    assert.match(await page.textContent('#chat li.ask .question'), /Allow fs_create_file\?/);
    const lines = await page.locator('#chat li.ask .granted > div').allTextContents();
    assert.deepEqual(lines, ['path: ".jp/config.toml"', `content: "${'A'.repeat(200)}…`, '(content cut: 5000 characters; shown: first 200)']);
    await page.click('#chat li.ask button.deny');
    await page.waitForSelector('#chat li.assistant:has-text("Understood")', { timeout: 20_000 });
    assert.equal((await page.evaluate(() => window.jpHost.listFiles())).includes('.jp/config.toml'), false);
  } finally {
    await context.close();
    await model.close();
  }
});

test('the demo needs no endpoint: the recorded turn makes, greps, reads and edits a project in the page', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  try {
    await open(page, `agent-demo-${Date.now()}`);
    await page.selectOption('#agent-kind', 'demo');
    await page.check('#agent-unattended');
    const answer = await page.evaluate(() => window.jpHost.agentSend('fix the TODO'));
    assert.match(answer, /now greets the person named on the command line/);
    const names = await page.locator('#chat li.tool .call').allTextContents();
    for (const tool of ['fs_create_file', 'fs_grep_files', 'fs_read_file', 'fs_modify_file']) {
      assert.ok(names.some((n) => n.includes(tool)), `${tool} in ${names}`);
    }
    assert.equal(await page.locator('#chat li.tool .result.error').count(), 0, await page.textContent('#chat'));
    const greet = await page.evaluate(() => window.jpHost.readFile('jp-demo/src/greet.py'));
    assert.match(greet, /name = sys\.argv\[1\]/);
    assert.doesNotMatch(greet, /TODO/);
    await page.waitForSelector('#files li:has-text("jp-demo/src/greet.py")');
  } finally {
    await context.close();
  }
});

test('the reply streams into the chat as the model writes it', async () => {
  let release;
  const gate = new Promise((resolve) => { release = resolve; });
  const model = await scriptedModel([{ content: 'Half of the answer, then the rest.', gate }]);
  const context = await browser.newContext();
  const page = await context.newPage();
  try {
    await open(page, `agent-stream-${Date.now()}`);
    await page.selectOption('#agent-kind', 'openai');
    await page.fill('#agent-url', model.url);
    await page.fill('#agent-model', 'scripted');
    await page.fill('#agent-prompt', 'hi');
    await page.click('#agent-send');
    // The first piece is on the page while the endpoint still holds the rest.
    await page.waitForSelector('#chat li.assistant.streaming:has-text("Half of")');
    assert.doesNotMatch(await page.textContent('#chat'), /the rest/);
    release();
    await page.waitForSelector('#chat li.assistant:not(.streaming):has-text("Half of the answer, then the rest.")');
    assert.equal(await page.locator('#chat li.assistant').count(), 1, 'one reply, not the pieces and the whole');
  } finally {
    release();
    await context.close();
    await model.close();
  }
});

test("a user's component built with --component is registered at start and its tools listed and callable", async () => {
  // Built into a registry of its own (build.mjs --served-out) and served in place of
  // www/components's: the rest of the suite sees the plain build.
  const dir = mkdtempSync(join(tmpdir(), 'jp-playground-served-'));
  let own;
  const context = await browser.newContext();
  try {
    copyFileSync(join(root, 'www/components/fetch.wasm'), join(dir, 'copy.wasm'));
    await run(process.execPath, [join(root, 'web/scripts/build.mjs'), '--served-out', join(dir, 'served'), '--component', `mine=${join(dir, 'copy.wasm')}`], { cwd: root });
    own = await serve(0, { served: join(dir, 'served') });
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${own.url}?db=served-${Date.now()}`);
    await page.waitForSelector('body[data-ready="true"]', { timeout: 30_000 });
    const names = (await page.evaluate(() => window.jpHost.listTools())).map((t) => t.name);
    for (const name of ['fs_read_file', 'api_get', 'read_env']) assert.ok(names.includes(name), JSON.stringify(names));
    assert.ok(await page.locator('#tool option[value="api_get"]').count() === 1, 'in the tool list of the page');
    // It runs (in the page's Worker, from the served files): the empty policy allows no URL,
    // which the host says (the URL is decided before its secret) before anything is sent.
    const denied = await page.evaluate(() => window.jpHost.callTool('api_get', { url: 'https://example.com/x' }));
    assert.equal(denied.tag, 'error', JSON.stringify(denied));
    assert.match(denied.val.message, /^http\.get failed \(host error -32001\): Access denied: no network rule allows GET https:\/\/example\.com\/x/);
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
    await own?.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("learn (seed 002) lists and loads the subjects of the project's knowledge base (.jp/kb), in the Worker", async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await open(page, `learn-${Date.now()}`);
  const tools = await page.evaluate(() => window.jpHost.listTools());
  assert.ok(tools.some((t) => t.name === 'learn'), JSON.stringify(tools.map((t) => t.name)));
  const none = await page.evaluate(() => window.jpHost.callTool('learn', {}));
  assert.match(none.val.message, /^learn has no knowledge base: \.jp\/kb\/ does not exist; create \.jp\/kb\/<topic>\/<subject>\.md/);
  // The user's own files (the page's file tree): jp's .jp/ is theirs to edit, as natively.
  await page.evaluate(async () => {
    await window.jpHost.writeFile('.jp/kb/rust/errors.md', '# Errors\nUse thiserror.\n');
    await window.jpHost.writeFile('.jp/kb/rust/async/tokio.rs', 'fn main() {}\n');
  });
  const listed = await page.evaluate(() => window.jpHost.callTool('learn', {}));
  assert.equal(listed.val, '# rust\n\nSubjects (load them with `subjects`):\n- async/tokio\n- errors\n', JSON.stringify(listed));
  const loaded = await page.evaluate(() => window.jpHost.callTool('learn', { topic: 'rust', subjects: ['async/*'] }));
  assert.equal(loaded.val, '## Subject: async/tokio\n\n```rust\nfn main() {}\n```', JSON.stringify(loaded));
  assert.match(await page.textContent('#result'), /fn main/);
  await context.close();
});

/** A promise and the function that resolves it. */
function gate() {
  let open;
  const promise = new Promise((resolve) => { open = resolve; });
  return { promise, open };
}

test('a stateful tool in the agent panel: calc spawned (asked first), its question answered by apply, a handle aborted, nothing left after the turn', async () => {
  // Each hold keeps the model's next reply back until the test has looked at the page.
  const afterSpawn = gate();
  const afterClear = gate();
  const afterSecond = gate();
  const afterAborted = gate();
  const model = await scriptedModel([
    { content: 'A calculator.', calls: [['calc', { action: 'spawn' }]] },
    { hold: afterSpawn.promise, calls: [['calc', { action: 'apply', id: 'h_1', input: 'x = 6 * 7' }]] },
    { calls: [['calc', { action: 'apply', id: 'h_1', input: 'clear' }]] },
    { hold: afterClear.promise, calls: [['calc', { action: 'apply', id: 'h_1', input: true }]] },
    { calls: [['calc', { action: 'fetch', id: 'h_1' }]] },
    { calls: [['calc', { action: 'spawn', prelude: 'y = 1' }]] },
    { hold: afterSecond.promise, content: 'Two sessions.', calls: [['calc', { action: 'fetch', id: 'h_1' }]] },
    { hold: afterAborted.promise, calls: [['calc', { action: 'fetch', id: 'h_2' }]] },
    { content: 'Done with the calculator.' },
  ]);
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  const handles = () => page.locator('#handles li').evaluateAll((lis) => lis.map((li) => li.textContent));
  try {
    await page.goto(`${server.url}?db=agent-calc-${Date.now()}&calc`);
    await page.waitForSelector('body[data-ready="true"]', { timeout: 30_000 });
    const workers = await page.evaluate(() => window.jpHost.liveWorkers());
    assert.equal(await page.isVisible('#agent-handles'), false, 'no handles, no list');
    await page.selectOption('#agent-kind', 'openai');
    await page.fill('#agent-url', model.url);
    await page.fill('#agent-model', 'scripted');
    await page.fill('#agent-prompt', 'compute something');
    await page.click('#agent-send');

    // RFD 009: a spawn is asked first (the question card); commands on the handle are not.
    await page.waitForSelector('#chat li.ask button.allow-once');
    assert.match(await page.textContent('#chat li.ask .question'), /Allow calc\?/);
    assert.equal(await page.evaluate(() => window.jpHost.liveWorkers()), workers, 'nothing runs before the answer');
    await page.click('#chat li.ask button.allow-once');

    // The handle is listed as soon as the spawn returned, with its state, in a Worker of its own.
    await page.waitForSelector('#handles li[data-id="h_1"][data-state="running"]', { timeout: 20_000 });
    assert.equal(await page.isVisible('#agent-handles'), true);
    assert.deepEqual(await handles(), ['h_1 calc — running Abort']);
    assert.equal(await page.getAttribute('#handles li[data-id="h_1"] button.abort', 'aria-label'), 'Abort h_1 (calc)');
    assert.equal(await page.evaluate(() => window.jpHost.liveWorkers()), workers + 1);
    assert.deepEqual(await page.evaluate(() => window.jpHost.handles('turn-1')), [{ id: 'h_1', tool: 'calc', state: 'running' }]);
    afterSpawn.open();

    // `clear` asks its own question: the handle waits, and the list shows the question.
    await page.waitForSelector('#handles li[data-id="h_1"][data-state="waiting"]', { timeout: 20_000 });
    assert.deepEqual(await handles(), ['h_1 calc — waiting: Forget all 1 binding? Abort']);
    assert.match(await page.textContent('#chat li.tool:nth-last-child(1) .result'), /waiting/);
    afterClear.open();

    // The answer (`true`, by apply) runs the handle on; a second spawn is asked again.
    await page.waitForFunction(() => document.querySelectorAll('#chat li.ask').length === 2, null, { timeout: 20_000 });
    // The question is listed just before the call it asks about, which waits for the answer.
    assert.match(await page.textContent('#chat li.ask:nth-last-child(2) .question'), /Allow calc\?/);
    assert.equal(await page.getAttribute('#chat li.ask:nth-last-child(2) + li.tool', 'data-tool'), 'calc');
    await page.click('#chat li.ask:nth-last-child(2) button.allow-once');
    await page.waitForSelector('#handles li[data-id="h_2"]', { timeout: 20_000 });
    assert.deepEqual(await handles(), ['h_1 calc — running Abort', 'h_2 calc — running Abort']);
    assert.equal(await page.evaluate(() => window.jpHost.liveWorkers()), workers + 2);

    // Abort, in the panel: the handle ends and its Worker is terminated; h_1 lives on.
    await page.click('#handles li[data-id="h_2"] button.abort');
    await page.waitForFunction(() => !document.querySelector('#handles li[data-id="h_2"]'));
    assert.deepEqual(await handles(), ['h_1 calc — running Abort']);
    assert.equal(await page.evaluate(() => window.jpHost.liveWorkers()), workers + 1);
    assert.match(await page.textContent('#chat li.note:nth-last-child(1)'), /h_2 \(calc\) aborted/);
    afterSecond.open();
    // The model's next command reaches h_1; then it learns h_2 is gone.
    await page.waitForFunction(() => document.querySelectorAll('#chat li.tool').length === 7, null, { timeout: 20_000 });
    afterAborted.open();

    await page.waitForSelector('#chat li.assistant:has-text("Done with the calculator.")', { timeout: 20_000 });
    // Only the spawns were asked.
    assert.equal(await page.locator('#chat li.ask').count(), 2, await page.textContent('#chat'));

    // What the model got back, command by command (MCP's CallToolResult, as `jp mcp` answers).
    const results = model.seen.slice(1).map((s) => s.body.messages.at(-1));
    assert.ok(results.every((m) => m.role === 'tool'), JSON.stringify(results));
    const got = results.slice(0, 7).map((m) => JSON.parse(m.content));
    assert.deepEqual(got.map((r) => [r.id, r.state]), [['h_1', 'running'], ['h_1', 'running'], ['h_1', 'waiting'], ['h_1', 'running'], ['h_1', 'running'], ['h_2', 'running'], ['h_1', 'running']]);
    assert.match(got[0].content, /^calc: integer expressions/);
    assert.equal(got[1].content, 'x = 42');
    assert.deepEqual([got[2].question.id, got[2].question.text], ['clear', 'Forget all 1 binding?']);
    assert.equal(got[3].content, 'forgot 1 binding', 'the answer, by apply');
    assert.match(results[7].content, /^no live handle 'h_2'.*live handles: h_1$/, 'aborted in the panel: unknown to the model now');
    const calls = await page.locator('#chat li.tool .result').allTextContents();
    assert.equal(calls.length, 8);
    assert.match(calls[7], /^✗/);

    // The turn ended: no handle and no Worker outlives it.
    await page.waitForFunction(() => document.querySelector('#agent-send').disabled === false);
    assert.deepEqual(await page.evaluate(() => window.jpHost.handles('turn-1')), []);
    assert.equal(await page.locator('#handles li').count(), 0);
    assert.equal(await page.isVisible('#agent-handles'), false);
    assert.equal(await page.evaluate(() => window.jpHost.liveWorkers()), workers);
    assert.deepEqual(errors, []);
  } finally {
    for (const g of [afterSpawn, afterClear, afterSecond, afterAborted]) g.open();
    await context.close();
    await model.close();
  }
});

test('Stop ends the turn and its handles: the live Worker of a spawned tool is terminated', async () => {
  const held = gate();
  const model = await scriptedModel([
    { calls: [['calc', { action: 'spawn', prelude: 'n = 1' }]] },
    { hold: held.promise, content: 'The calculator is ready.' },
  ]);
  const context = await browser.newContext();
  const page = await context.newPage();
  try {
    await page.goto(`${server.url}?db=agent-calc-stop-${Date.now()}&calc`);
    await page.waitForSelector('body[data-ready="true"]', { timeout: 30_000 });
    const workers = await page.evaluate(() => window.jpHost.liveWorkers());
    await page.selectOption('#agent-kind', 'openai');
    await page.fill('#agent-url', model.url);
    await page.fill('#agent-model', 'scripted');
    await page.check('#agent-unattended');
    await page.fill('#agent-prompt', 'start a calculator');
    await page.click('#agent-send');
    await page.waitForSelector('#handles li[data-id="h_1"]', { timeout: 20_000 });
    assert.equal(await page.locator('#chat li.ask').count(), 0, 'unattended: nobody is asked');
    assert.equal(await page.evaluate(() => window.jpHost.liveWorkers()), workers + 1);
    // Stop ends the handles at once, while the turn still waits for the model's reply.
    await page.click('#agent-stop');
    await page.waitForFunction((n) => window.jpHost.liveWorkers() === n, workers, { timeout: 20_000 });
    await page.waitForFunction(() => !document.querySelector('#handles li'));
    assert.equal(await page.isVisible('#agent-handles'), false);
    assert.deepEqual(await page.evaluate(() => window.jpHost.handles('turn-1')), []);
    held.open();
    await page.waitForFunction(() => document.querySelector('#agent-send').disabled === false, null, { timeout: 20_000 });
    assert.equal(await page.evaluate(() => window.jpHost.liveWorkers()), workers);
    assert.deepEqual(await page.evaluate(() => window.jpHost.handles('turn-1')), []);
  } finally {
    held.open();
    await context.close();
    await model.close();
  }
});
