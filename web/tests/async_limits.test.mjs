// A component that waits for the host (JSPI) is still held to every limit, in Node as at the edge
// (the page runs the same Host; page_http.test.mjs covers it there): the fetch example
// (tools/guests/fetch) against a server on 127.0.0.1 that the test starts — requests in a loop,
// an endless response, one over the size cap, a redirect loop, a flood of questions, a call
// cancelled while its request or its question waits. Each is a clear tool error, nothing of the
// call is written, and the host keeps serving meanwhile.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { Host, loadJp } from '../../www/jp.js';

const dir = new URL('../../www/components/fetch/', import.meta.url);
let server;
let base;
const seen = [];
let fetchModule;
const cores = {};

before(async () => {
  await loadJp(
    await WebAssembly.compile(await readFile(new URL('../../www/pkg/jp_web_bg.wasm', import.meta.url))),
    await WebAssembly.compile(await readFile(new URL('../../www/pkg/validate/jp_validate_bg.wasm', import.meta.url))),
  );
  fetchModule = await import(new URL('fetch.js', dir).href);
  for (const f of JSON.parse(await readFile(new URL('cores.json', dir), 'utf8'))) cores[f] = await WebAssembly.compile(await readFile(new URL(f, dir)));
  server = createServer((req, res) => {
    seen.push(req.url);
    if (req.url.startsWith('/ok')) return res.end('fine');
    if (req.url === '/loop') { res.writeHead(302, { location: '/loop' }); return res.end(); }
    if (req.url === '/big') { res.writeHead(200); return res.end(Buffer.alloc(11 << 20, 97)); }
    if (req.url === '/endless') {
      // A body that never ends: a chunk every 50 ms until the client goes away.
      res.writeHead(200);
      const timer = setInterval(() => res.write('more '), 50);
      req.on('close', () => { clearInterval(timer); seen.push('/endless closed'); });
      return undefined;
    }
    if (req.url === '/silent') { req.on('close', () => seen.push('/silent closed')); return undefined; } // never answers
    res.writeHead(404);
    return res.end();
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  base = `http://127.0.0.1:${server.address().port}`;
});
after(() => { server.closeAllConnections(); return new Promise((ok) => server.close(ok)); });

async function host({ deadlineMs = 5_000 } = {}) {
  const h = await Host.create({ policy: `[access]\nfilesystem = [{ path = ".", allow = ["read", "write"] }]\nnetwork = { allow = ["${base}"] }\n`, limits: { deadlineMs } });
  await h.writeFile('.env', 'TOKEN=hunter2\n');
  await h.registerComponent('fetch', fetchModule, cores);
  return h;
}

const since = (n) => seen.slice(n);

test('a component requesting in a loop is stopped after 64 requests, each refusal saying why', async () => {
  const h = await host();
  const from = seen.length;
  const out = await h.callTool('get', { url: `${base}/ok`, times: 200 });
  assert.equal(out.tag, 'success', JSON.stringify(out));
  assert.match(out.val, /^64 of 200 answered; the last refusal: http\.get failed \(host error -32602\): .*already made 64 HTTP requests, the most one call may make here/);
  assert.equal(since(from).length, 64, 'the server got exactly 64');
  // The next call has its own 64.
  assert.equal((await h.callTool('get', { url: `${base}/ok` })).val, 'status 200\nfine');
});

test('an endless response ends at the deadline: the fetch is aborted, nothing is written, the host keeps serving', async () => {
  const h = await host({ deadlineMs: 1_000 });
  const from = seen.length;
  const call = h.callTool('get', { url: `${base}/endless` });
  // Meanwhile the host answers other requests.
  const other = await h.request('other', 'fs.read', { path: '.env' });
  assert.ok(other.error || other.result, JSON.stringify(other));
  const out = await call;
  assert.equal(out.tag, 'error', JSON.stringify(out));
  assert.match(out.val.message, /ran past its deadline of 1000 ms|ran out of time/);
  assert.deepEqual(out.changed, []);
  for (let i = 0; i < 100 && !since(from).includes('/endless closed'); i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(since(from).includes('/endless closed'), `the request was not aborted: ${since(from)}`);
});

test('a response over the size cap is refused with the cap named', async () => {
  const h = await host();
  const out = await h.callTool('get', { url: `${base}/big` });
  assert.equal(out.tag, 'error', JSON.stringify(out).slice(0, 300));
  assert.match(out.val.message, /over the \d+-byte limit/);
});

test('a redirect loop ends with an error naming it', async () => {
  const h = await host();
  const from = seen.length;
  const out = await h.callTool('get', { url: `${base}/loop` });
  assert.equal(out.tag, 'error', JSON.stringify(out));
  assert.match(out.val.message, /more than \d+ redirects starting at/);
  assert.ok(since(from).length <= 11, `requests sent: ${since(from).length}`);
});

test('a flood of questions: 16 are asked, the rest denied saying why', async () => {
  const h = await host();
  let asked = 0;
  h.setInquirer(() => { asked += 1; return 'once'; });
  const out = await h.callTool('read_env', { times: 30 });
  assert.equal(asked, 16);
  assert.match(out.val, /^16 of 30 answered; the last refusal: .*already asked 16 questions, the most one call may ask/);
});

test('a call cancelled while its request or its question waits ends at once, nothing written', async () => {
  const h = await host({ deadlineMs: 60_000 });
  // While the request waits for a server that never answers.
  let stop = new AbortController();
  const from = seen.length;
  let call = h.callTool('get', { url: `${base}/silent` }, { signal: stop.signal });
  while (!since(from).includes('/silent')) await new Promise((r) => setTimeout(r, 10));
  stop.abort();
  let out = await call;
  assert.equal(out.tag, 'error');
  assert.match(out.val.message, /was cancelled; nothing it did was written/);
  for (let i = 0; i < 100 && !since(from).includes('/silent closed'); i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(since(from).includes('/silent closed'), 'the request was aborted');
  // While its question waits for an answer that never comes; the inquirer is told.
  stop = new AbortController();
  let told = null;
  const asked = new Promise((resolve) => h.setInquirer((q) => { q.signal.addEventListener('abort', () => { told = 'aborted'; }); resolve(); return new Promise(() => {}); }));
  call = h.callTool('read_env', {}, { signal: stop.signal });
  await asked;
  stop.abort();
  out = await call;
  assert.match(out.val.message, /was cancelled; nothing it did was written/);
  assert.equal(told, 'aborted');
});

test('time spent waiting for the person does not count against the deadline', async () => {
  const h = await host({ deadlineMs: 2_000 });
  h.setInquirer(() => new Promise((resolve) => setTimeout(() => resolve('once'), 2_500)));
  const out = await h.callTool('read_env', {});
  assert.equal(out.tag, 'success', JSON.stringify(out));
  assert.equal(out.val, 'TOKEN=hunter2\n');
});

test('an engine without JSPI is refused at start, naming the engine and version, never run with every request denied', async () => {
  const { execFileSync } = await import('node:child_process');
  const script = `import('${new URL('../../www/jp.js', import.meta.url).href}').then(async ({ Host }) => {
    try { await Host.create({}); console.log('created'); } catch (e) { console.log(e.message); }
  });`;
  // The pinned Node 25 with its JSPI switched off stands for an engine that lacks it.
  const out = execFileSync(process.execPath, ['--no-experimental-wasm-jspi', '--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.match(out, /^jp-host cannot host components here: Node v\d+\.\d+\.\d+ \(V8 [^)]+\) lacks WebAssembly JSPI/);
  assert.match(out, /use Chromium 137 or later, Node 25 or later/);
});
