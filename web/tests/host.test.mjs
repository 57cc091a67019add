// JpHost's asynchronous request path in Node (the edge): http through fetch against a server the
// test starts on 127.0.0.1, checked by the policy; inquiries through a JS callback; process.run
// refused with a clear message.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { Host, loadJp } from '../../www/jp.js';

let server;
let base;
before(async () => {
  // Node may compile wasm itself; the module is injected (no environment sniffing in jp.js).
  await loadJp(
    await WebAssembly.compile(await readFile(new URL('../../www/pkg/jp_web_bg.wasm', import.meta.url))),
    await WebAssembly.compile(await readFile(new URL('../../www/pkg/validate/jp_validate_bg.wasm', import.meta.url))),
  );
  server = createServer((req, res) => {
    if (req.url.endsWith('/redirect')) {
      res.writeHead(302, { location: 'http://example.invalid/elsewhere' });
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain', 'x-test': 'yes' });
    res.end(`hello from ${req.method} ${req.url}`);
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  base = `http://127.0.0.1:${server.address().port}`;
});
after(() => new Promise((ok) => server.close(ok)));

const policy = () => `[access]
filesystem = [{ path = ".", allow = ["read"] }]
network = { allow = ["${base}/api/"] }
commands = { ls = {} }
`;

test('http.get through fetch: allowed prefix served, others denied, redirects re-checked', async () => {
  const host = await Host.create({ policy: policy() });
  const events = [];
  host.onEvent((e) => events.push(e));
  const ok = await host.request('t', 'http.get', { url: `${base}/api/v1` });
  assert.equal(ok.result?.status, 200, JSON.stringify(ok));
  assert.equal(ok.result.body, 'hello from GET /api/v1');
  const post = await host.request('t', 'http.post', { url: `${base}/api/p`, body: 'x' });
  assert.equal(post.result?.body, 'hello from POST /api/p');
  const denied = await host.request('t', 'http.get', { url: `${base}/other` });
  assert.equal(denied.error?.code, -32001, JSON.stringify(denied));
  assert.ok(events.some((e) => e.method === 'http.get' && e.target.endsWith('/other') && !e.allowed));
  const redirected = await host.request('t', 'http.get', { url: `${base}/api/redirect` });
  assert.equal(redirected.error?.code, -32001, JSON.stringify(redirected));
  assert.match(redirected.error.message, /example\.invalid/);
});

test('inquiries go to the JS callback; without one they are denied', async () => {
  const host = await Host.create({ policy: '' });
  await host.writeFile('.env', 'TOKEN=abc\n');
  const refused = await host.request('t', 'fs.read', { path: '.env' });
  assert.equal(refused.error?.code, -32001, JSON.stringify(refused));
  const asked = [];
  host.setInquirer(async (q) => { asked.push(q); return false; });
  assert.ok((await host.request('t', 'fs.read', { path: '.env' })).error);
  assert.equal(asked[0].target, '.env');
  host.setInquirer(() => true);
  const allowed = await host.request('t', 'fs.read', { path: '.env' });
  assert.equal(allowed.result?.content, 'TOKEN=abc\n', JSON.stringify(allowed));
});

test('process.run is not available in the browser or at the edge', async () => {
  const host = await Host.create({ policy: policy() });
  const r = await host.request('t', 'process.run', { program: 'ls', args: [] });
  assert.match(r.error?.message ?? '', /not available in the browser/, JSON.stringify(r));
});

test('bad input gets clear errors', async () => {
  const host = await Host.create({ policy: '' });
  await assert.rejects(host.request('t', 'fs.read', undefined).then(() => host.inner.request('t', 'fs.read', '{')), /not valid JSON/);
  const unknown = await host.request('t', 'fs.nope', {});
  assert.equal(unknown.error?.code, -32601);
  await assert.rejects(Host.create({ policy: '[access]\nfilesystem = "x"' }), /policy/);
});

test('hosts given the same tools list share one registration; it cannot be changed or take a name', async () => {
  const dir = new URL('../../www/components/fs/', import.meta.url);
  const module = await import(new URL('fs.js', dir).href);
  const cores = {};
  for (const f of JSON.parse(await readFile(new URL('cores.json', dir), 'utf8'))) cores[f] = await WebAssembly.compile(await readFile(new URL(f, dir)));
  const first = await Host.create({ policy: policy() });
  await first.registerComponent('fs', module, cores);
  // As an edge function does: the first host's listing given to every later one.
  const described = first.listTools();
  const a = await Host.create({ policy: policy() });
  await a.registerComponent('fs', module, cores, described);
  const b = await Host.create({ policy: policy() });
  await b.registerComponent('fs', module, cores, described);
  assert.deepEqual(b.listTools().map((t) => t.name), a.listTools().map((t) => t.name));
  // b's registration is a's, shared: frozen, so one host's caller cannot change another's.
  const shared = b.listTools().find((t) => t.name === 'fs_read_file');
  assert.ok(Object.isFrozen(shared) && Object.isFrozen(shared.inputSchema), 'the shared listing is read-only');
  assert.throws(() => { 'use strict'; shared.inputSchema.properties = {}; }, TypeError);
  // Still checked and run as registered: a bad argument refused, a good one served.
  assert.match((await b.callTool('fs_read_file', { path: 3 })).val.message, /argument 'path' must be a string, got 3/);
  assert.equal((await b.callTool('fs_read_file', { path: 'x.txt' }, { files: { 'x.txt': 'hello' } })).val, 'hello');
  // Another component cannot take the shared tools' names on a host that has them.
  const c = await Host.create({ policy: policy() });
  await c.registerComponent('fs', module, cores, described);
  await assert.rejects(c.registerComponent('other', module, cores, described), /tool 'fs_\w+' of component 'other' is served already by component 'fs'/);
});

test('a pooling host\'s first call takes the spare instance made in quiet; an instance one host ran is never another\'s', async () => {
  const dir = new URL('../../www/components/fs/', import.meta.url);
  const module = await import(new URL('fs.js', dir).href);
  const cores = {};
  for (const f of JSON.parse(await readFile(new URL('cores.json', dir), 'utf8'))) cores[f] = await WebAssembly.compile(await readFile(new URL(f, dir)));
  const quiet = () => new Promise((done) => setTimeout(done, 20));
  // Hosts as an edge function makes them, one per project, each pooling its own instances.
  const open = async () => {
    const h = await Host.create({ policy: policy(), instances: new Map() });
    await h.registerComponent('fs', module, cores);
    return h;
  };
  // Every core instantiation, counted (a component's instance is one or more of them).
  const real = WebAssembly.instantiate;
  let made = 0;
  WebAssembly.instantiate = (...args) => { made++; return real.apply(WebAssembly, args); };
  try {
    const a = await open();
    const read = async (h, text) => (await h.callTool('fs_read_file', { path: 'x.txt' }, { files: { 'x.txt': text } })).val;
    assert.equal(await read(a, 'from a'), 'from a');
    const ranForA = a.instances.get('fs');
    assert.ok(ranForA, 'the host pools the instance its call ran on');
    await quiet(); // the spare is made now, after the call
    const b = await open();
    const before = made;
    assert.equal(await read(b, 'from b'), 'from b');
    assert.equal(made, before, 'the first call of a new host instantiated nothing: it took the spare');
    const ranForB = b.instances.get('fs');
    assert.ok(ranForB && ranForB !== ranForA, 'b runs on an instance of its own, never the one a ran on');
    // a's next call runs on a's own instance again, and the next new host gets a new spare.
    assert.equal(await read(a, 'again a'), 'again a');
    assert.equal(a.instances.get('fs'), ranForA);
    await quiet();
    assert.ok(made > before, 'the spare b took was made again in the quiet after its call');
    const c = await open();
    assert.equal(await read(c, 'from c'), 'from c');
    assert.ok(![ranForA, ranForB].includes(c.instances.get('fs')));
    // A host that does not pool its instances neither takes nor leaves a spare.
    const plain = await Host.create({ policy: policy() });
    await plain.registerComponent('fs', module, cores);
    const counted = made;
    assert.equal(await read(plain, 'plain'), 'plain');
    assert.ok(made > counted, 'a host without a pool instantiates for its call');
  } finally {
    WebAssembly.instantiate = real;
  }
});
