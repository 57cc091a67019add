// The fetch example component (tools/guests/fetch) in headless Chromium, against an HTTP server
// on 127.0.0.1 that the test starts and stops: a tool's request is the page's cross-origin
// fetch, the secret the user entered goes only into the header the host fills in, a refused
// preflight is a tool error that says CORS, and a tool's question mid-call (`.env`) waits for
// the person — through the JS API (on the page's thread and in a Worker) and in the playground
// (the manual tool form and the agent panel).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launch } from './chromium.mjs';
import { serve } from '../scripts/serve.mjs';

const SECRET = 's3cr3t-page-value';
const ENV_FILE = 'TOKEN=hunter2\n';

let site; // the playground
let api; // the test's API server
let browser;

/**
 * An API on 127.0.0.1 that records every request (method, path, headers) before answering.
 * Under `/allowed/` it answers CORS for the playground's origin only: the preflight of a GET
 * with Authorization, and the GET itself, whose body echoes the Authorization it got. Under
 * `/allowed/no-cors/` it refuses the preflight (403, no CORS headers), as most servers that
 * were not written for pages do.
 */
async function apiServer(origin) {
  const received = [];
  const server = createServer((req, res) => {
    received.push({ method: req.method, path: req.url, headers: { ...req.headers } });
    const cors = req.headers.origin === origin && !req.url.startsWith('/allowed/no-cors/')
      ? { 'access-control-allow-origin': origin, 'access-control-allow-headers': 'authorization', 'access-control-allow-methods': 'GET', vary: 'origin' }
      : {};
    if (req.method === 'OPTIONS') {
      res.writeHead(cors['access-control-allow-origin'] ? 204 : 403, cors);
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain', ...cors });
    res.end(`authorization: ${req.headers.authorization ?? '(none)'}\n`);
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  const port = server.address().port;
  return {
    port,
    base: `http://127.0.0.1:${port}`,
    received,
    /** What reached the server since `from` (an index into `received`), the test's probes aside. */
    since: (from) => received.slice(from),
    close: () => new Promise((ok) => { server.closeAllConnections(); server.close(ok); }),
  };
}

before(async () => {
  site = await serve(0);
  api = await apiServer(new URL(site.url).origin);
  browser = await launch();
});
after(async () => {
  await browser?.close();
  await api?.close();
  await site?.close();
});

/**
 * The policy of these tests: the workspace read-only, the API's `/allowed` with API_TOKEN, no
 * commands (so that the agent panel asks before no call: only the host asks, about `.env`).
 */
const policy = () => `[access]
filesystem = [{ path = ".", allow = ["read"] }]
network = { allow = ["${api.base}/allowed"], envs = ["API_TOKEN"] }
commands = {}
`;

async function open(page, query = '') {
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${site.url}?db=t-http-${Date.now()}-${Math.random().toString(36).slice(2)}${query}`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 30_000 }).catch((e) => {
    throw new Error(`the page did not get ready: ${e.message}; page errors: ${errors.join('; ')}`);
  });
  return errors;
}

/**
 * Through the JS API in the page: a Host of its own (in memory), the fetch component, the
 * policy and the secret; `worker`: whether calls run in a Worker. Runs `calls` (a list of
 * `[tool, args, answer]`, `answer` what the inquirer says, or undefined for none) in order and
 * returns the outcomes and the questions asked.
 */
function viaApi(page, { worker, policy: text, calls }) {
  return page.evaluate(async ({ worker, text, calls, secret, envFile }) => {
    const { Host } = await import('/jp.js');
    const host = await Host.create({ policy: text, ...(worker && { worker: new URL('/call-worker.bundle.js', location.href) }) });
    await host.registerComponent('fetch', new URL('/components/fetch/fetch.js', location.href), new URL('/components/fetch/', location.href));
    await host.writeFile('.env', envFile);
    host.setSecrets({ API_TOKEN: secret, OTHER: 'not-listed' });
    const out = [];
    for (const [tool, args, answer] of calls) {
      const asked = [];
      const inquirer = answer === undefined ? null : (q) => {
        asked.push({ tool: q.tool, method: q.method, target: q.target, reason: q.reason, signal: q.signal instanceof AbortSignal });
        return answer;
      };
      const { tag, val } = await host.callTool(tool, args, { inquirer });
      out.push({ tag, text: typeof val === 'string' ? val : val.message, asked });
    }
    return { outcomes: out, names: host.secretNames() };
  }, { worker, text, calls, secret: SECRET, envFile: ENV_FILE });
}

for (const worker of [false, true]) {
  const where = worker ? 'in a Worker' : "on the page's thread";
  test(`JS API ${where}: the secret goes only into the allowed request, other URLs are refused, a refused preflight says CORS, .env waits for the answer`, async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      const errors = await open(page);
      const from = api.received.length;
      const r = await viaApi(page, {
        worker,
        policy: policy(),
        calls: [
          ['api_get', { url: `${api.base}/allowed/items` }],
          ['api_get', { url: `${api.base}/other` }],
          ['api_get', { url: `http://localhost:${api.port}/allowed/items` }],
          ['api_get', { url: `${api.base}/allowed/no-cors/items` }],
          ['read_env', {}, true],
          ['read_env', {}, false],
          ['read_env', {}],
        ],
      });
      const [allowed, otherPath, otherHost, noCors, yes, no, nobody] = r.outcomes;
      assert.deepEqual(r.names, ['API_TOKEN']);

      // The allowed GET: the server got the secret, the tool read it back scrubbed.
      assert.equal(allowed.tag, 'success', JSON.stringify(allowed));
      assert.equal(allowed.text, 'status 200\nauthorization: Bearer [REDACTED]\n');
      const got = api.since(from);
      const gets = got.filter((q) => q.method === 'GET');
      assert.equal(gets[0]?.path, '/allowed/items', JSON.stringify(got));
      assert.equal(gets[0].headers.authorization, `Bearer ${SECRET}`);

      // Another path and another host: refused by the policy before anything is sent.
      for (const refused of [otherPath, otherHost]) {
        assert.equal(refused.tag, 'error', JSON.stringify(refused));
        assert.match(refused.text, /host error -32001/);
        assert.doesNotMatch(refused.text, new RegExp(SECRET));
      }
      assert.ok(!got.some((q) => q.path === '/other'), JSON.stringify(got));

      // The refused preflight: the browser never sent the GET (nor the secret), and the tool's
      // error says why in terms of CORS.
      assert.equal(noCors.tag, 'error', JSON.stringify(noCors));
      assert.match(noCors.text, /the browser refused the request before any answer/);
      assert.match(noCors.text, /CORS/);
      assert.match(noCors.text, /Access-Control-Allow-Origin/);
      const noCorsSeen = got.filter((q) => q.path === '/allowed/no-cors/items');
      assert.deepEqual(noCorsSeen.map((q) => q.method), ['OPTIONS'], JSON.stringify(noCorsSeen));
      assert.equal(noCorsSeen[0].headers['access-control-request-headers'], 'authorization');
      assert.ok(!got.some((q) => q.headers.authorization && q.path !== '/allowed/items'), JSON.stringify(got));

      // .env: asked, with the call's signal; yes gives the content, no an error without it.
      assert.equal(yes.tag, 'success', JSON.stringify(yes));
      assert.equal(yes.text, ENV_FILE);
      assert.equal(yes.asked.length, 1);
      assert.deepEqual({ ...yes.asked[0], reason: undefined }, { tool: 'read_env', method: 'fs.read', target: '.env', reason: undefined, signal: true });
      assert.equal(no.tag, 'error', JSON.stringify(no));
      assert.match(no.text, /the user denied fs\.read \.env/);
      assert.doesNotMatch(no.text, /hunter2/);
      assert.equal(no.asked.length, 1);
      assert.equal(nobody.tag, 'error');
      assert.doesNotMatch(nobody.text, /hunter2/);
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });
}

test('the playground: the secrets field follows the policy and stays in session storage, the form calls the API with it, a refused preflight and a question show in the page', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  try {
    const errors = await open(page, '&fetch');
    // The default policy names no secret; this one names API_TOKEN: one field for it.
    assert.equal(await page.locator('#secrets input').count(), 0);
    await page.evaluate((text) => window.jpHost.setPolicy(text), policy());
    assert.deepEqual(await page.locator('#secrets input').evaluateAll((l) => l.map((i) => [i.dataset.secret, i.type])), [['API_TOKEN', 'password']]);
    await page.fill('#secrets input[data-secret="API_TOKEN"]', SECRET);
    assert.match(await page.textContent('#cors-note'), /cross-origin[\s\S]*Access-Control-Allow-Origin/);

    // The form's call: the server got the secret, the page shows it scrubbed.
    const from = api.received.length;
    await page.selectOption('#tool', 'api_get');
    await page.fill('#arg-url', `${api.base}/allowed/form`);
    await page.click('#call');
    await page.waitForFunction(() => document.querySelector('#result').textContent.includes('authorization:'));
    assert.equal(await page.textContent('#result'), 'status 200\nauthorization: Bearer [REDACTED]\n');
    const sent = api.since(from).find((q) => q.method === 'GET');
    assert.equal(sent?.headers.authorization, `Bearer ${SECRET}`, JSON.stringify(api.since(from)));

    // Kept in this tab's session storage only: not in local storage, not in the project.
    assert.deepEqual(await page.evaluate(() => JSON.parse(sessionStorage.getItem('jp-secrets'))), { API_TOKEN: SECRET });
    const kept = await page.evaluate(async () => {
      const local = Object.keys(localStorage).map((k) => localStorage.getItem(k)).join('\n');
      const files = await window.jpHost.listFiles();
      const contents = await Promise.all(files.map((f) => window.jpHost.readFile(f)));
      return `${local}\n${files.join('\n')}\n${contents.join('\n')}`;
    });
    assert.doesNotMatch(kept, new RegExp(SECRET));
    assert.doesNotMatch(await page.textContent('body'), new RegExp(SECRET));

    // A server that refuses the preflight: the tool's error says CORS.
    await page.fill('#arg-url', `${api.base}/allowed/no-cors/form`);
    await page.click('#call');
    await page.waitForFunction(() => document.querySelector('#result').textContent.includes('CORS'));
    assert.equal(await page.textContent('#result-status'), 'Error');
    assert.match(await page.textContent('#result'), /the browser refused the request before any answer/);

    // Reloaded, the tab still has the secret, and the host has it again.
    await page.reload();
    await page.waitForSelector('body[data-ready="true"]');
    assert.equal(await page.inputValue('#secrets input[data-secret="API_TOKEN"]'), SECRET);
    const again = await page.evaluate((url) => window.jpHost.callTool('api_get', { url }), `${api.base}/allowed/reloaded`);
    assert.equal(again.val, 'status 200\nauthorization: Bearer [REDACTED]\n');
    assert.equal(api.received.at(-1).headers.authorization, `Bearer ${SECRET}`);

    // A question of the form's call: jp tool call's three answers; the component waits for one.
    await page.evaluate((text) => window.jpHost.writeFile('.env', text), ENV_FILE);
    await page.selectOption('#tool', 'read_env');
    await page.click('#call');
    const card = page.locator('#tool-questions .inquiry:not(.answered)');
    await card.waitFor();
    assert.match(await card.textContent(), /read_env asks: fs\.read \.env.*sensitive path/);
    assert.deepEqual(await card.locator('button').allTextContents(), ['Allow once', 'Allow for the rest of this call', 'Deny']);
    assert.equal(await page.textContent('#result'), 'status 200\nauthorization: Bearer [REDACTED]\n', 'the call waits for the answer');
    await card.locator('button.allow-once').click();
    await page.waitForFunction((env) => document.querySelector('#result').textContent === env, ENV_FILE);
    await page.click('#call');
    await page.locator('#tool-questions .inquiry:not(.answered) button.deny').click();
    await page.waitForFunction(() => document.querySelector('#result-status').textContent === 'Error');
    assert.match(await page.textContent('#result'), /the user denied fs\.read \.env/);
    assert.doesNotMatch(await page.textContent('#result'), /hunter2/);
    assert.equal(await page.locator('#tool-questions .inquiry').count(), 1, 'the earlier, answered question made way');

    // A policy without envs: no field, and the host drops the secret.
    await page.evaluate(() => window.jpHost.setPolicy(''));
    assert.equal(await page.locator('#secrets input').count(), 0);
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});

test('under a sandbox table, a URL no rule covers is asked about in the page (deny sends nothing, allow once sends it) — unless the request carries a secret: then it is refused unasked', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  try {
    const errors = await open(page, '&fetch');
    await page.evaluate((base) => window.jpHost.setPolicy(`[sandbox]\nnetwork = { allow = ["${base}/allowed"], envs = ["API_TOKEN"] }\n`), api.base);
    await page.fill('#secrets input[data-secret="API_TOKEN"]', SECRET);
    const url = `${api.base}/unlisted/${Date.now()}`;
    const path = new URL(url).pathname;
    // With the secret: refused without a question, nothing sent.
    await page.selectOption('#tool', 'api_get');
    await page.fill('#arg-url', url);
    await page.click('#call');
    await page.waitForFunction(() => document.querySelector('#result-status').textContent === 'Error');
    assert.match(await page.textContent('#result'), /carries a host secret .* goes only to a URL a network rule allows/);
    assert.equal(await page.locator('#tool-questions .inquiry:not(.answered)').count(), 0, 'nobody was asked');
    assert.equal(api.received.filter((q) => q.path === path).length, 0, 'nothing was sent');
    // Without credentials: asked.
    await page.selectOption('#tool', 'get');
    await page.fill('#arg-url', url);
    await page.click('#call');
    const card = page.locator('#tool-questions .inquiry:not(.answered)');
    await card.waitFor();
    assert.match(await card.locator('.request').textContent(), new RegExp(`^http\\.get ${url}$`));
    assert.match(await card.locator('.reason').textContent(), /not covered by the tool's sandbox configuration/);
    await card.locator('button.deny').click();
    await page.waitForFunction(() => document.querySelector('#result-status').textContent === 'Error');
    assert.match(await page.textContent('#result'), /denied/);
    assert.equal(api.received.filter((q) => q.path === path).length, 0, 'nothing was sent');
    await page.click('#call');
    await card.locator('button.allow-once').click();
    await page.waitForFunction(() => document.querySelector('#result').textContent.startsWith('status 200'));
    assert.deepEqual(api.received.filter((q) => q.path === path).map((q) => q.method), ['GET']);
    assert.equal(api.received.filter((q) => q.path === path)[0].headers.authorization, undefined, 'no credentials');
    assert.match(await page.locator('#log li').last().textContent(), /get http\.get .*unlisted/);
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});

/**
 * A scripted OpenAI-compatible model on 127.0.0.1 (CORS open, streaming as the page asks): it
 * answers request N with `replies[N]` (`{ content, calls: [[name, args]] }`) and keeps every
 * request it got.
 */
async function scriptedModel(replies) {
  const seen = [];
  const server = createServer(async (req, res) => {
    const cors = { 'access-control-allow-origin': '*', 'access-control-allow-headers': '*', 'access-control-allow-methods': 'POST' };
    if (req.method === 'OPTIONS') { res.writeHead(204, cors); res.end(); return; }
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = JSON.parse(Buffer.concat(chunks).toString());
    seen.push(body);
    const reply = replies[seen.length - 1] ?? { content: 'no more replies in the script' };
    const calls = (reply.calls ?? []).map(([name, args], i) => ({ id: `call_${seen.length}_${i}`, name, arguments: JSON.stringify(args) }));
    res.writeHead(200, { 'content-type': 'text/event-stream', ...cors });
    const send = (delta, finish = null) => res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`);
    if (reply.content) send({ role: 'assistant', content: reply.content });
    calls.forEach((c, index) => send({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }] }));
    send({}, calls.length ? 'tool_calls' : 'stop');
    res.end('data: [DONE]\n\n');
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  return { url: `http://127.0.0.1:${server.address().port}/v1`, seen, close: () => new Promise((ok) => server.close(ok)) };
}

/** The tool results the model got in request `n`, in order. */
const toolResults = (model, n) => model.seen[n].messages.filter((m) => m.role === 'tool').map((m) => m.content);

/** The playground with the fetch component, the policy, `.env`, and the agent on `model`. */
async function agentPage(context, model, text) {
  const page = await context.newPage();
  const errors = await open(page, '&fetch');
  await page.evaluate(async ({ text, env }) => { await window.jpHost.setPolicy(text); await window.jpHost.writeFile('.env', env); }, { text, env: ENV_FILE });
  await page.selectOption('#agent-kind', 'openai');
  await page.fill('#agent-url', model.url);
  await page.fill('#agent-model', 'scripted');
  return { page, errors };
}

async function say(page, text) {
  await page.fill('#agent-prompt', text);
  await page.click('#agent-send');
}

test("the agent panel asks a tool's question in the chat: once gives the model .env, deny an error, the rest of this turn the same request until the turn ends", async () => {
  const model = await scriptedModel([
    // Turn 1: allowed once, then asked again and denied.
    { calls: [['read_env', {}]] },
    { calls: [['read_env', {}]] },
    { content: 'First turn done.' },
    // Turn 2: allowed for the rest of the turn: the second read is not asked.
    { calls: [['read_env', {}]] },
    { calls: [['read_env', {}]] },
    { content: 'Second turn done.' },
    // Turn 3: a new turn asks again.
    { calls: [['read_env', {}]] },
    { content: 'Third turn done.' },
  ]);
  const context = await browser.newContext();
  try {
    const { page, errors } = await agentPage(context, model, policy());
    const open = page.locator('#chat .inquiry:not(.answered)');
    await say(page, 'read the env');
    await open.waitFor();
    assert.match(await open.textContent(), /read_env asks: fs\.read \.env/);
    assert.deepEqual(await open.locator('button').allTextContents(), ['Allow once', 'Allow for the rest of this turn', 'Deny']);
    // The policy lets no tool write: nobody was asked before the call, only by the host.
    assert.equal(await page.locator('#chat li.ask').count(), 0);
    assert.equal(model.seen.length, 1, 'the turn waits for the answer');
    await open.locator('button.allow-once').click();
    await open.locator('button.deny').click();
    await page.waitForSelector('#chat li.assistant:has-text("First turn done.")');
    assert.deepEqual(toolResults(model, 1), [ENV_FILE]);
    const denied = toolResults(model, 2)[1];
    assert.match(denied, /the user denied fs\.read \.env/);
    assert.doesNotMatch(denied, /hunter2/);
    assert.equal(await page.locator('#chat .inquiry').count(), 2);
    // Each question is in its call's entry, before the result it led to.
    assert.equal(await page.locator('#chat li.tool .decisions .inquiry').count(), 2, await page.textContent('#chat'));
    const results = await page.locator('#chat li.tool .result').allTextContents();
    assert.match(results[0], /^✓ TOKEN=hunter2/);
    assert.match(results[1], /^✗ .*denied/);
    assert.match(await page.locator('#chat li.tool').nth(0).textContent(), /fs\.read \.env → allow/);

    await say(page, 'read it twice');
    await open.locator('button.allow-turn').click();
    await page.waitForSelector('#chat li.assistant:has-text("Second turn done.")');
    assert.equal(await page.locator('#chat .inquiry').count(), 3, 'one question in the second turn');
    assert.deepEqual(toolResults(model, 5).slice(-2), [ENV_FILE, ENV_FILE]);

    await say(page, 'once more');
    await open.locator('button.deny').click();
    await page.waitForSelector('#chat li.assistant:has-text("Third turn done.")');
    assert.equal(await page.locator('#chat .inquiry').count(), 4, 'a new turn asks again');
    assert.match(toolResults(model, 7).at(-1), /denied/);
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
    await model.close();
  }
});

test('Stop while a question waits ends the call and its question, the model gets nothing more, and nothing the tool did is written', async () => {
  const model = await scriptedModel([
    { calls: [['read_env', {}]] },
    { content: 'not reached: the turn was stopped' },
  ]);
  const context = await browser.newContext();
  try {
    // Writes allowed (the modify below could write .env), asked before no call.
    const { page, errors } = await agentPage(context, model, '[access]\nfilesystem = [{ path = ".", allow = ["read", "write"] }]\ncommands = {}\n');
    await page.check('#agent-unattended');
    const open = page.locator('#chat .inquiry:not(.answered)');
    await say(page, 'read the env');
    await open.waitFor();
    await page.click('#agent-stop');
    await page.waitForSelector('#chat li.error:has-text("cancelled")');
    const card = page.locator('#chat .inquiry').last();
    assert.match(await card.textContent(), /not answered: the call ended first/);
    assert.equal(await card.locator('button').count(), 0);
    assert.match(await page.locator('#chat li.tool .result').last().textContent(), /^✗ tool 'read_env' was cancelled; nothing it did was written/);
    assert.equal(model.seen.length, 1, 'the stopped turn sends the model nothing more');

    // A tool that would write what it read: stopped at its question, it writes nothing.
    model.seen.length = 0;
    const again = await scriptedModel([
      { calls: [['fs_modify_file', { path: '.env', patterns: [{ old: 'hunter2', new: 'changed' }] }]] },
      { content: 'not reached either' },
    ]);
    try {
      await page.fill('#agent-url', again.url);
      await say(page, 'change the env');
      await open.waitFor();
      assert.match(await open.textContent(), /fs_modify_file asks: fs\.\w+ \.env/);
      await page.click('#agent-stop');
      await page.waitForSelector('#chat li.error >> nth=1');
      assert.match(await page.locator('#chat li.tool .result').last().textContent(), /cancelled; nothing it did was written/);
      assert.equal(await page.evaluate(() => window.jpHost.readFile('.env')), ENV_FILE);
      assert.equal(again.seen.length, 1);
    } finally {
      await again.close();
    }
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
    await model.close();
  }
});

/** A guest component as the build compiled it (`npm run build`, the same CARGO_TARGET_DIR). */
/** A component as the build left it beside its transpiled directory (www/components/NAME.wasm). */
function guest(name) {
  const path = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'www/components', `${name}.wasm`);
  assert.ok(existsSync(path), `${path} is missing: run npm run build first`);
  return path;
}

test("a component of the user's own, loaded from a .wasm file, runs in the page with its policy, secrets and questions", async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  try {
    const errors = await open(page); // no ?fetch: the tools come from the file
    assert.equal(await page.locator('#tool option[value="api_get"]').count(), 0);
    await page.evaluate(async ({ text, env }) => { await window.jpHost.setPolicy(text); await window.jpHost.writeFile('.env', env); }, { text: policy(), env: ENV_FILE });
    await page.fill('#secrets input[data-secret="API_TOKEN"]', SECRET);
    await page.setInputFiles('#component-file', guest('fetch'));
    await page.waitForSelector('#component-status.ok');
    assert.equal(await page.textContent('#component-status'), 'fetch.wasm: api_get, get, read_env');
    assert.equal(await page.inputValue('#tool'), 'api_get');

    const from = api.received.length;
    await page.fill('#arg-url', `${api.base}/allowed/loaded`);
    await page.click('#call');
    await page.waitForFunction(() => document.querySelector('#result').textContent.startsWith('status'));
    assert.equal(await page.textContent('#result'), 'status 200\nauthorization: Bearer [REDACTED]\n');
    assert.equal(api.since(from).find((q) => q.method === 'GET')?.headers.authorization, `Bearer ${SECRET}`);

    await page.selectOption('#tool', 'read_env');
    await page.click('#call');
    await page.locator('#tool-questions .inquiry:not(.answered) button.allow-once').click();
    await page.waitForFunction((env) => document.querySelector('#result').textContent === env, ENV_FILE);

    // What cannot be loaded says why, and the tools stay as they were.
    await page.setInputFiles('#component-file', guest('faults'));
    await page.waitForSelector('#component-status.error');
    assert.match(await page.textContent('#component-status'), /^faults\.wasm: component faults does not describe itself/);
    await page.setInputFiles('#component-file', { name: 'notes.wasm', mimeType: 'application/wasm', buffer: Buffer.from('not a component') });
    await page.waitForSelector('#component-status.error:has-text("notes.wasm")');
    assert.match(await page.textContent('#component-status'), /could not be transpiled/);
    assert.equal(await page.locator('#tool option[value="spin"]').count(), 0);
    assert.equal(await page.inputValue('#tool'), 'read_env');
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});
