// The edge function on real edge engines — workerd, `wrangler dev` (the repo's wrangler.jsonc, as
// a user deploying to Cloudflare runs it), Deno and Node — each spawned on 127.0.0.1 by the test
// and killed after: the same suite against each (run: npm test). EDGE_ENGINES=wrangler,node
// picks engines.
//
// Each engine runs under an operator policy (JP_EDGE_POLICY) that lets tools reach
// http://127.0.0.1:PORT/allowed of a recording server the test starts and stops, with the secret
// API_TOKEN (`network.envs`) given to the engine as its environment: issue 34's fetch component
// (api_get, read_env) shows the secret reaching the server but never the tool or the client, the
// refusals, and MCP 2026-07-28's input_required round trip driven by the official TypeScript SDK
// v2 client (@modelcontextprotocol/client).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { promisify } from 'node:util';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { startEdge, MEMORY_CAP_MIB, WRANGLER } from '../scripts/edge.mjs';

const TOKEN = 'edge-test-token-5d1f';
/** A project token that opens project `mine` only. */
const PROJECT_TOKEN = 'project-token-for-mine-0a9f3c';
const TOKENS = JSON.stringify({ [PROJECT_TOKEN]: ['mine'] });
const ALLOWED_ORIGIN = 'https://app.example';

/** The program that serves requests on each engine (a launcher — `wrangler dev`, `deno task` —
 * runs it as a child in its process group). */
const SERVER = { workerd: 'workerd', wrangler: 'workerd', deno: 'deno', node: 'node' };

/** Peak resident memory (MiB, from /proc) of the largest `name` process in `pid`'s process group
 * (or `pid` itself): the engine that read the request, not wrangler's bundler. */
function peakMiB(pid, name) {
  let most = 0;
  for (const p of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const group = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
      // (Node 25 names its main thread, and so the process, `node-MainThread`.)
      if ((comm === name || comm.startsWith(`${name}-`)) && (group === pid || Number(p) === pid)) {
        most = Math.max(most, Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${p}/status`, 'utf8'))?.[1] ?? 0) / 1024);
      }
    } catch { /* gone */ }
  }
  assert.ok(most > 0, `no ${name} process in group ${pid}`);
  return most;
}

/** One raw HTTP/1.1 exchange (for what fetch will not send: a malformed Host); the status line. */
function raw(url, text) {
  const { hostname, port } = new URL(url);
  return new Promise((ok, fail) => {
    const socket = connect(Number(port), hostname, () => socket.write(text));
    let got = '';
    socket.on('data', (d) => { got += d; });
    socket.on('end', () => ok(got.split('\r\n')[0]));
    socket.on('error', fail);
    socket.setTimeout(10_000, () => { socket.destroy(); ok(got.split('\r\n')[0]); });
  });
}
// Sends `mib` MiB as a chunked body while reading the reply, so that a server which answers early
// and closes is seen answering (a fetch client may fail on the write before it reads the reply).
function rawChunked(url, token, mib) {
  const { hostname, port } = new URL(url);
  const chunk = Buffer.concat([Buffer.from('100000\r\n'), Buffer.alloc(1 << 20, 120), Buffer.from('\r\n')]);
  return new Promise((ok) => {
    let got = '';
    let sent = 0;
    let done = false;
    const finish = (why) => {
      if (done) return;
      done = true;
      socket.destroy();
      const line = got.split('\r\n')[0];
      const m = /^HTTP\/1\.1 (\d{3})/.exec(line);
      ok({ status: m ? Number(m[1]) : `connection closed (${why})`, sent });
    };
    const pump = () => {
      while (!done && sent < mib) {
        sent++;
        if (!socket.write(chunk)) return socket.once('drain', pump);
      }
      if (!done && sent >= mib) socket.write('0\r\n\r\n');
    };
    const socket = connect(Number(port), hostname, () => {
      socket.write(`POST / HTTP/1.1\r\nHost: ${hostname}:${port}\r\nauthorization: Bearer ${token}\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n`);
      pump();
    });
    socket.on('data', (d) => {
      got += d;
      if (got.includes('\r\n')) finish('answered');
    });
    socket.on('end', () => finish('end'));
    socket.on('error', (e) => finish(e.code ?? e.message));
    socket.setTimeout(30_000, () => finish('timeout'));
  });
}
/** The secret the operator's policy binds to the recording server (`access.secrets`, the rule
 * syntax of native too), in each engine's environment. */
const SECRET = 's3cr3t-edge-value-81f4';
/** The `.env` of the projects where read_env is asked about. */
const ENV_FILE = 'TOKEN=hunter2\n';

/** The operator's policy: the workspace read-write (the default), and GETs of the recording
 * server's /allowed with `${API_TOKEN}`, a secret bound to that server's origin only. */
const operatorPolicy = (port) => `[access]
filesystem = [{ path = ".", allow = ["read", "write"] }]
network = { allow = ["http://127.0.0.1:${port}/allowed"] }
secrets = { API_TOKEN = ["http://127.0.0.1:${port}"] }
`;

/**
 * An HTTP server on 127.0.0.1 (a free port) that records each request — its target and headers
 * — before answering 200 with the Authorization header it got (`authorization: VALUE`).
 * `probe()` is a request of the test's own: proof that it records, so that an empty record
 * means nothing was sent to it.
 */
async function recordingServer() {
  const received = [];
  const server = createServer((req, res) => {
    received.push({ target: req.url, headers: { ...req.headers } });
    const body = `authorization: ${req.headers.authorization ?? '(none)'}\n`;
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(body), connection: 'close' });
    res.end(body);
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  const url = `http://127.0.0.1:${server.address().port}/`;
  return {
    port: server.address().port,
    url,
    received,
    probe: async () => { const r = await fetch(`${url}probe`); assert.equal(r.status, 200); await r.text(); },
    stop: () => new Promise((ok) => { server.closeAllConnections(); server.close(ok); }),
  };
}

const DEADLINE_MS = 1500;
const persistent = { workerd: true, wrangler: true, deno: true, node: false };
const ENGINES = (process.env.EDGE_ENGINES ?? 'workerd,wrangler,deno,node').split(',').map((e) => e.trim()).filter(Boolean);

const root = join(import.meta.dirname, '..', '..');
const run = promisify(execFile);
/** The PNG the `media` component draws, in base64 as MCP carries it. */
const DOT_PNG = readFileSync(join(root, 'tools/guests/media/src/dot.png')).toString('base64');

describe('deployable as users deploy', () => {
  test('wrangler deploy --dry-run bundles the worker offline (wrangler.jsonc)', { skip: !ENGINES.includes('wrangler') }, async () => {
    const out = mkdtempSync(join(tmpdir(), 'jp-edge-dry-run-'));
    try {
      const { stdout } = await run(WRANGLER[0], [WRANGLER[1], 'deploy', '--dry-run', '--outdir', out], { cwd: root, env: { ...process.env, WRANGLER_SEND_METRICS: 'false', NO_COLOR: '1' } });
      assert.match(stdout, /--dry-run: exiting now/, stdout);
      assert.match(stdout, /env\.PROJECT \(Project\)\s+Durable Object/, stdout);
      const files = readdirSync(out);
      for (const name of ['workerd.js', 'jp_web_bg.wasm', 'fs.core.wasm']) {
        assert.ok(files.some((f) => f === name || f.endsWith(`-${name}`)), `${name} uploaded as a module: ${files}`);
      }
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  test('deno task check resolves the Deno entry with web/edge/deno.json', { skip: !ENGINES.includes('deno') }, async () => {
    const deno = join(root, 'node_modules/.bin/deno');
    await run(deno, ['task', '--config', join(root, 'web/edge/deno.json'), 'check'], { cwd: root, env: { ...process.env, DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' } });
    // Without the import map the shim's bare specifiers do not resolve: the check is not empty.
    await assert.rejects(run(deno, ['check', '--no-config', join(root, 'web/edge/deno.js')], { cwd: root, env: { ...process.env, DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' } }), /preview2-shim/);
  });
});

for (const engine of ENGINES) {
  describe(`edge function on ${engine}`, () => {
    let edge;
    let data;
    // The server the operator's policy allows (its /allowed), and one on another port it does not.
    let api;
    let other;
    const start = async () => {
      edge = await startEdge({ engine, data, token: TOKEN, tokens: TOKENS, allowedOrigins: ALLOWED_ORIGIN, faults: true, deadlineMs: DEADLINE_MS, policy: operatorPolicy(api.port), secrets: { API_TOKEN: SECRET } });
    };
    before(async () => {
      data = mkdtempSync(join(tmpdir(), `jp-edge-${engine}-`));
      api = await recordingServer();
      other = await recordingServer();
      await start();
    });
    after(async () => {
      await edge?.stop();
      await api?.stop();
      await other?.stop();
      rmSync(data, { recursive: true, force: true });
    });

    const post = async (body, raw) => {
      const res = await fetch(edge.url, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: raw ?? JSON.stringify(body) });
      return { status: res.status, body: await res.json() };
    };

    test('grep over the request files', async () => {
      const { status, body } = await post({ tool: 'fs_grep_files', args: { pattern: 'println' }, files: { 'src/main.rs': 'fn main() {\n    println!("hi");\n}\n' } });
      assert.equal(status, 200, JSON.stringify(body));
      assert.equal(body.outcome.tag, 'success', JSON.stringify(body.outcome));
      assert.match(body.outcome.val, /src\/main\.rs:2:.*println/);
      assert.ok(body.events.some((e) => e.method === 'fs.grep' && e.allowed));
    });

    test('a write, then a read in a second request, on the same project', async () => {
      const w = await post({ tool: 'fs_create_file', args: { path: 'notes/a.md', content: 'kept\n' }, project: 'p1', files: { 'seed.txt': 'seeded\n' } });
      assert.equal(w.body.outcome.tag, 'success', JSON.stringify(w.body));
      assert.deepEqual(w.body.changed, ['notes/a.md']);
      const r = await post({ tool: 'fs_read_file', args: { path: 'notes/a.md' }, project: 'p1' });
      assert.equal(r.body.outcome.val, 'kept\n', JSON.stringify(r.body));
      const seeded = await post({ tool: 'fs_read_file', args: { path: 'seed.txt' }, project: 'p1' });
      assert.equal(seeded.body.outcome.val, 'seeded\n');
      const other = await post({ tool: 'fs_read_file', args: { path: 'notes/a.md' }, project: 'p2' });
      assert.equal(other.body.outcome.tag, 'error', 'projects are separate');
    });

    test('a file larger than a storage value (100 KiB) round-trips', async () => {
      const big = 'abcdefghij'.repeat(10 * 1024);
      const w = await post({ tool: 'fs_create_file', args: { path: 'big.txt', content: big }, project: 'p7' });
      assert.equal(w.body.outcome.tag, 'success', JSON.stringify(w.body).slice(0, 300));
      const r = await post({ tool: 'fs_read_file', args: { path: 'big.txt' }, project: 'p7' });
      assert.equal(r.body.outcome.val, big);
    });

    test(persistent[engine] ? 'the project survives a restart of the engine' : 'projects live in memory (no restart test)', async () => {
      if (!persistent[engine]) return;
      const spawned = await post({ tool: 'calc', args: { action: 'spawn', prelude: 'x = 5' }, project: 'p1' });
      assert.equal(spawned.body.outcome.val?.id, 'h_1', JSON.stringify(spawned.body));
      await edge.stop();
      await start();
      const r = await post({ tool: 'fs_read_file', args: { path: 'notes/a.md' }, project: 'p1' });
      assert.equal(r.body.outcome.val, 'kept\n', JSON.stringify(r.body));
      // The live instance did not survive the engine, its saved session did: rebuilt (RFD 009
      // at the edge, web/src/saved.rs), with its binding.
      const kept = await post({ tool: 'calc', args: { action: 'apply', id: 'h_1', input: 'x + 1' }, project: 'p1' });
      assert.equal(kept.body.outcome.val?.content, '= 6', JSON.stringify(kept.body));
      // Another scope gets what an unknown id gets; the ids go on after h_1.
      const other = await post({ tool: 'calc', args: { action: 'fetch', id: 'h_1' }, project: 'p1', scope: 'elsewhere' });
      assert.match(other.body.outcome.val.message, /^no live handle 'h_1': no handle was issued to you/, JSON.stringify(other.body));
      const next = await post({ tool: 'calc', args: { action: 'spawn' }, project: 'p1' });
      assert.equal(next.body.outcome.val?.id, 'h_2', JSON.stringify(next.body));
      for (const id of ['h_1', 'h_2']) await post({ tool: 'calc', args: { action: 'abort', id }, project: 'p1' });
    });

    test('a read-only policy denies the write; nothing of the call is stored', async () => {
      const policy = '[access]\nfilesystem = [{ path = ".", allow = ["read"] }]\n';
      // The request's own files are writes into the project too: refused before the call runs.
      const seeded = await post({ tool: 'fs_create_file', args: { path: 'denied.txt', content: 'x' }, project: 'p1', policy, files: { 'also-not.txt': 'y' } });
      assert.equal(seeded.status, 403, JSON.stringify(seeded.body));
      const { body } = await post({ tool: 'fs_create_file', args: { path: 'denied.txt', content: 'x' }, project: 'p1', policy });
      assert.equal(body.outcome.tag, 'error');
      assert.match(body.outcome.val.message, /denied|not allowed/i);
      assert.ok(body.events.some((e) => e.method === 'fs.write' && !e.allowed));
      for (const path of ['denied.txt', 'also-not.txt']) {
        const r = await post({ tool: 'fs_read_file', args: { path }, project: 'p1' });
        assert.equal(r.body.outcome.tag, 'error', `${path} must not exist: ${JSON.stringify(r.body)}`);
      }
    });

    test('a sensitive path is refused (asking is a denial here)', async () => {
      const { body } = await post({ tool: 'fs_read_file', args: { path: '.env' }, files: { '.env': 'TOKEN=x\n' } });
      assert.equal(body.outcome.tag, 'error');
      assert.doesNotMatch(JSON.stringify(body.outcome), /TOKEN=x/);
    });

    test('a memory bomb ends with an error, stores nothing, and the function keeps serving', async () => {
      const { status, body } = await post({ tool: 'bomb', args: {}, project: 'p3', files: { 'x.txt': 'x' } });
      assert.equal(status, 200, JSON.stringify(body));
      assert.equal(body.outcome.tag, 'error');
      assert.match(body.outcome.val.message, new RegExp(`trapped.*memory.*${MEMORY_CAP_MIB} MiB`, 's'));
      const r = await post({ tool: 'fs_read_file', args: { path: 'x.txt' }, project: 'p3' });
      assert.equal(r.body.outcome.tag, 'error', 'nothing of the failed call was stored');
      assert.equal((await post({ tool: 'ok', args: {} })).body.outcome.val, 'ok');
    });

    test('an endless loop is stopped at the deadline, stores nothing, and the function keeps serving', async () => {
      const [{ body }, other] = await Promise.all([
        post({ tool: 'spin', args: {}, project: 'p5', files: { 'y.txt': 'y' } }),
        // Another project's call is not held up by the loop for longer than the deadline.
        new Promise((r) => setTimeout(r, 100)).then(() => post({ tool: 'ok', args: {}, project: 'p6' })),
      ]);
      assert.equal(body.outcome.tag, 'error', JSON.stringify(body));
      assert.match(body.outcome.val.message, new RegExp(`tool 'spin' ran past its deadline of ${DEADLINE_MS} ms`));
      assert.equal(other.body.outcome.val, 'ok');
      const r = await post({ tool: 'fs_read_file', args: { path: 'y.txt' }, project: 'p5' });
      assert.equal(r.body.outcome.tag, 'error', 'nothing of the stopped call was stored');
      // The stopped instance is not reused: the project's next calls work.
      assert.equal((await post({ tool: 'ok', args: {}, project: 'p5' })).body.outcome.val, 'ok');
    });

    test("a component's exit, a day's sleep and a read of stdin end its call, never the function or its event loop", async () => {
      const exited = (await post({ tool: 'exit', args: {}, project: 'p7', files: { 'z.txt': 'z' } })).body;
      assert.equal(exited.outcome.tag, 'error', JSON.stringify(exited));
      assert.match(exited.outcome.val.message, /tool 'exit' trapped: .*exited/);
      // The sleep does not block the engine: another project is served meanwhile, and the sleep
      // ends by its deadline.
      const [slept, other] = await Promise.all([
        post({ tool: 'sleep', args: {}, project: 'p7' }),
        new Promise((r) => setTimeout(r, 100)).then(() => post({ tool: 'ok', args: {}, project: 'p8' })),
      ]);
      assert.equal(other.body.outcome.val, 'ok');
      // (The browser WASI shim cannot block: the sleep ends early, or at the deadline.)
      assert.ok(['success', 'error'].includes(slept.body.outcome?.tag), JSON.stringify(slept.body));
      const read = (await post({ tool: 'stdin', args: {}, project: 'p7' })).body;
      // stdin is closed: the read ends at once (nothing to read), it does not wait.
      assert.deepEqual([read.outcome.tag, read.outcome.val], ['success', 'read 0 bytes'], JSON.stringify(read));
      assert.equal((await post({ tool: 'fs_read_file', args: { path: 'z.txt' }, project: 'p7' })).body.outcome.tag, 'error', 'nothing of the exited call was stored');
      assert.equal((await post({ tool: 'ok', args: {}, project: 'p7' })).body.outcome.val, 'ok', 'the function keeps serving');
    });

    test('bad input: a clear 4xx, nothing stored', async () => {
      const cases = [
        [await post(null, 'not json'), 400, /must be JSON/],
        [await post({ args: {} }), 400, /missing "tool"/],
        [await post({ tool: 'nope' }), 404, /fs_read_file/],
        [await post({ tool: 'fs_read_file', args: { path: 'a' }, policy: '[access]\nfilesystem = 3' }), 400, /policy/],
        [await post({ tool: 'fs_read_file', args: [] }), 400, /"args" must be an object/],
        [await post({ tool: 'fs_read_file', args: {}, project: '../etc' }), 400, /"project" must be an id/],
        [await post({ tool: 'fs_create_file', args: { path: 'b', content: 'b' }, project: 'p4', files: { 'a': 1 } }), 400, /"files" must be/],
        [await post(null, JSON.stringify({ tool: 'fs_create_file', args: { path: 'big', content: 'x'.repeat(9 << 20) }, project: 'p4' })), 413, /larger than/],
      ];
      for (const [{ status, body }, want, message] of cases) {
        assert.equal(status, want, JSON.stringify(body).slice(0, 300));
        assert.match(body.error, message);
      }
      for (const path of ['a', 'b', 'big']) {
        const r = await post({ tool: 'fs_read_file', args: { path }, project: 'p4' });
        assert.equal(r.body.outcome.tag, 'error', `nothing stored for p4, but ${path}: ${JSON.stringify(r.body)}`);
      }
    });

    const as = (token, extra = {}) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json', ...extra });
    const read = async (project, path) => (await post({ tool: 'fs_read_file', args: { path }, project })).body.outcome;

    test('every route needs a token; a project token opens only its projects', async () => {
      const call = JSON.stringify({ tool: 'fs_create_file', args: { path: 'x.txt', content: 'x' }, project: 'p9' });
      for (const [path, method, body] of [['', 'POST', call], ['', 'GET', undefined], ['mcp?project=p9', 'POST', '{"jsonrpc":"2.0","id":1,"method":"tools/list"}']]) {
        for (const headers of [{ 'content-type': 'application/json' }, as('wrong-token'), as(`${TOKEN}x`)]) {
          const res = await fetch(new URL(path, edge.url), { method, headers, body });
          assert.equal(res.status, 401, `${method} /${path} with ${headers.authorization}`);
          assert.match(res.headers.get('www-authenticate') ?? '', /Bearer/);
        }
      }
      assert.equal((await read('p9', 'x.txt')).tag, 'error', 'nothing was stored');
      const mine = await fetch(edge.url, { method: 'POST', headers: as(PROJECT_TOKEN), body: JSON.stringify({ tool: 'fs_create_file', args: { path: 'm.txt', content: 'm' }, project: 'mine' }) });
      assert.equal(mine.status, 200);
      for (const project of ['p1', undefined]) {
        const other = await fetch(edge.url, { method: 'POST', headers: as(PROJECT_TOKEN), body: JSON.stringify({ tool: 'fs_read_file', args: { path: 'notes/a.md' }, project }) });
        assert.equal(other.status, 403, `project ${project}`);
      }
      const mcpOther = await fetch(new URL('mcp?project=p1', edge.url), { method: 'POST', headers: as(PROJECT_TOKEN), body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' });
      assert.equal(mcpOther.status, 403);
      assert.equal((await read('mine', 'm.txt')).val, 'm');
    });

    test("a client's policy may only narrow the operator's: wider is refused, nothing stored", async () => {
      const wider = '[access]\nfilesystem = [{ path = ".", allow = ["read", "write", "execute"] }]\nnetwork = { allow = ["https://example.com/"] }\n';
      const { status, body } = await post({ tool: 'fs_create_file', args: { path: 'w.txt', content: 'w' }, project: 'p9', policy: wider, files: { 'seeded.txt': 's' } });
      assert.equal(status, 403, JSON.stringify(body));
      assert.deepEqual(body.refused, ["filesystem: execute on '.'", 'network: https://example.com/']);
      for (const path of ['w.txt', 'seeded.txt']) assert.equal((await read('p9', path)).tag, 'error', `${path} stored`);
      const narrower = '[access]\nfilesystem = [{ path = ".", allow = ["read"] }]\n';
      const denied = await post({ tool: 'fs_create_file', args: { path: 'w.txt', content: 'w' }, project: 'p9', policy: narrower });
      assert.equal(denied.status, 200);
      assert.equal(denied.body.outcome.tag, 'error', 'the narrower policy holds');
    });

    test("the request's files are writes too: refused where the policy refuses, nothing stored", async () => {
      const readOnly = '[access]\nfilesystem = [{ path = ".", allow = ["read"] }]\n';
      for (const files of [{ 'planted.txt': 'PLANTED' }, { '.jp/config.toml': 'evil = 1' }]) {
        for (const policy of [readOnly, '']) {
          if (policy === '' && !Object.keys(files)[0].startsWith('.jp')) continue;
          const { status, body } = await post({ tool: 'fs_list_files', args: {}, project: 'p10', policy, files });
          assert.equal(status, 403, `${JSON.stringify(files)} under ${JSON.stringify(policy)}: ${JSON.stringify(body)}`);
          assert.match(body.error, /may not be written/);
        }
        const path = Object.keys(files)[0];
        assert.equal((await read('p10', path)).tag, 'error', `${path} was stored`);
      }
    });

    test('a browser cannot drive it by accident: JSON only, foreign origins refused, allowed ones get CORS', async () => {
      const call = JSON.stringify({ tool: 'fs_create_file', args: { path: 'b.txt', content: 'b' }, project: 'p9' });
      const plain = await fetch(edge.url, { method: 'POST', headers: as(TOKEN, { 'content-type': 'text/plain' }), body: call });
      assert.equal(plain.status, 415);
      const foreign = await fetch(edge.url, { method: 'POST', headers: as(TOKEN, { origin: 'https://evil.example' }), body: call });
      assert.equal(foreign.status, 403);
      assert.match((await foreign.json()).error, /evil\.example.*JP_EDGE_ALLOWED_ORIGINS/);
      assert.equal((await read('p9', 'b.txt')).tag, 'error', 'nothing was stored');
      const preflight = await fetch(edge.url, { method: 'OPTIONS', headers: { origin: ALLOWED_ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' } });
      assert.equal(preflight.status, 204);
      assert.equal(preflight.headers.get('access-control-allow-origin'), ALLOWED_ORIGIN);
      assert.match(preflight.headers.get('access-control-allow-headers'), /authorization/);
      const allowed = await fetch(edge.url, { method: 'POST', headers: as(TOKEN, { origin: ALLOWED_ORIGIN }), body: call });
      assert.equal(allowed.status, 200);
      assert.equal(allowed.headers.get('access-control-allow-origin'), ALLOWED_ORIGIN);
      const badPreflight = await fetch(edge.url, { method: 'OPTIONS', headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' } });
      assert.equal(badPreflight.status, 403);
    });

    test('a malformed or foreign Host gets 400 and the next request is served', async () => {
      const body = '{}';
      for (const host of ['evil.example', 'a b']) {
        const status = await raw(edge.url, `POST / HTTP/1.1\r\nHost: ${host}\r\nauthorization: Bearer ${TOKEN}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`);
        // wrangler dev's own local proxy answers a Host that is no host name with 500 before the
        // function sees it (not our code; the deployed worker sits behind Cloudflare's front).
        const want = engine === 'wrangler' && host === 'a b' ? /^HTTP\/1\.1 [45]\d\d/ : /^HTTP\/1\.1 400/;
        assert.match(status, want, `Host: ${host} → ${status}`);
      }
      assert.equal((await post({ tool: 'ok', args: {} })).body.outcome.val, 'ok');
    });

    test('a 200 MB chunked body ends in 413 without the server holding it', async () => {
      const { status, sent } = await rawChunked(edge.url, TOKEN, 200);
      const peak = peakMiB(edge.child.pid, SERVER[engine]);
      console.log(`${engine}: ${status} after ${sent} MiB sent; peak ${peak.toFixed(0)} MiB`);
      // An engine closes a connection whose body it stopped reading right after writing the
      // 413; the unread bytes make the kernel send a reset, which can drop the 413 before the
      // client reads it (a race the machine's speed decides: seen on workerd about one run in
      // three, and on Deno). The function refused it either way: the body was not read whole and
      // the memory stayed low. wrangler dev's proxy (on the pinned Node 25), cut off by workerd
      // while it still streams the body up, can answer that as its own 500 instead.
      const proxied = engine === 'wrangler' && status === 500;
      assert.ok(status === 413 || proxied || String(status).startsWith('connection closed'), `the client got ${status} after sending ${sent} MiB`);
      assert.ok(sent < 200, 'the body was not read whole');
      assert.ok(peak < 600, `the ${engine} process reached ${peak.toFixed(0)} MiB`);
      assert.equal((await post({ tool: 'ok', args: {} })).body.outcome.val, 'ok', 'it keeps serving');
    });

    test("learn (seed 002) is served; a project's knowledge base (.jp/kb) is none of a request's to write", async () => {
      const none = await post({ tool: 'learn', args: {} });
      assert.equal(none.status, 200, JSON.stringify(none.body));
      assert.equal(none.body.outcome.tag, 'error', JSON.stringify(none.body));
      assert.match(none.body.outcome.val.message, /^learn has no knowledge base: \.jp\/kb\/ does not exist; create \.jp\/kb\/<topic>\/<subject>\.md/);
      // .jp/ is jp's own (the core refuses every write there): the operator fills a project's
      // knowledge base in its storage (edge.test.mjs reads one), a request cannot.
      const seeded = await post({ tool: 'learn', args: {}, project: 'kb', files: { '.jp/kb/rust/errors.md': '# Errors\n' } });
      assert.equal(seeded.status, 403, JSON.stringify(seeded.body));
      assert.match(seeded.body.error, /\.jp\/kb\/rust\/errors\.md: Access denied: create '\.jp\/kb\/rust\/errors\.md' is in jp's own directory \.jp\//);
    });

    test('MCP over /mcp with the npm SDK client; 401 without the token', async () => {
      const mcp = new URL('mcp?project=p1', edge.url);
      const bare = await fetch(mcp, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' });
      assert.equal(bare.status, 401);
      const client = new Client({ name: 'engines-test', version: '0' });
      await client.connect(new StreamableHTTPClientTransport(mcp, { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } }));
      const { tools } = await client.listTools();
      const read = tools.find((t) => t.name === 'fs_read_file');
      assert.ok(read, JSON.stringify(tools.map((t) => t.name)));
      assert.equal(read.inputSchema.type, 'object');
      assert.ok(read.inputSchema.required.includes('path'), JSON.stringify(read.inputSchema));
      const r = await client.callTool({ name: 'fs_read_file', arguments: { path: 'notes/a.md' } });
      assert.equal(r.isError, false, JSON.stringify(r));
      assert.equal(r.content[0].text, 'kept\n');
      const missing = await client.callTool({ name: 'fs_read_file', arguments: { path: 'nope.txt' } });
      assert.equal(missing.isError, true);
      await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }), /no tool 'no_such_tool'/);
      // A component's content blocks (jp:tool/content) reach the client typed.
      const chart = await client.callTool({ name: 'chart', arguments: { label: 'edge' } });
      assert.equal(chart.isError, false, JSON.stringify(chart));
      assert.deepEqual(chart.content[0], { type: 'text', text: 'edge: a 4x4 red square' });
      assert.equal(chart.content[1].type, 'image');
      assert.equal(chart.content[1].mimeType, 'image/png');
      assert.equal(chart.content[1].data, DOT_PNG);
      assert.deepEqual(chart.content[1]._meta, { 'example.com/label': 'edge' });
      const report = await client.callTool({ name: 'report', arguments: { path: 'notes/a.md' } });
      assert.deepEqual(report.structuredContent, { path: 'notes/a.md', lines: 1, bytes: 5 }, JSON.stringify(report));
      assert.equal(report.content[1].resource.text, 'kept\n');
      await client.close();
    });

    test('POST / api_get: the server gets Bearer <API_TOKEN from the environment>, the outcome shows [REDACTED], never the secret', async () => {
      const before = api.received.length;
      const { status, body } = await post({ tool: 'api_get', args: { url: `${api.url}allowed/items` } });
      assert.equal(status, 200, JSON.stringify(body));
      assert.equal(body.outcome.tag, 'success', JSON.stringify(body.outcome));
      // The server echoed the token; the component read it back scrubbed.
      assert.equal(body.outcome.val, 'status 200\nauthorization: Bearer [REDACTED]\n');
      const got = api.received.slice(before);
      assert.equal(got.length, 1, JSON.stringify(got));
      assert.equal(got[0].target, '/allowed/items');
      assert.equal(got[0].headers.authorization, `Bearer ${SECRET}`);
      assert.ok(!JSON.stringify(body).includes(SECRET), 'the secret is in the response');
      assert.ok(!edge.stderr().includes(SECRET), 'the engine logged the secret');
    });

    test('POST / api_get of another path of the allowed origin: refused, nothing sent', async () => {
      const before = api.received.length;
      const url = `${api.url}other`;
      const { status, body } = await post({ tool: 'api_get', args: { url } });
      assert.equal(status, 200, JSON.stringify(body));
      assert.equal(body.outcome.tag, 'error', JSON.stringify(body.outcome));
      assert.match(body.outcome.val.message, /^http\.get failed \(host error -32001\): /);
      assert.ok(body.outcome.val.message.includes(`Access denied: no network rule allows GET ${url}`), body.outcome.val.message);
      assert.equal(api.received.length, before, JSON.stringify(api.received.slice(before)));
      await api.probe();
      assert.equal(api.received.length, before + 1, 'the server records what reaches it');
    });

    test('POST / api_get of another port: refused, nothing sent', async () => {
      const url = `${other.url}allowed`;
      const { status, body } = await post({ tool: 'api_get', args: { url } });
      assert.equal(status, 200, JSON.stringify(body));
      assert.equal(body.outcome.tag, 'error', JSON.stringify(body.outcome));
      assert.ok(body.outcome.val.message.includes(`(host error -32001): Access denied: no network rule allows GET ${url}`), body.outcome.val.message);
      assert.deepEqual(other.received, []);
      await other.probe();
      assert.equal(other.received.length, 1, 'the server records what reaches it');
    });

    test('POST / read_env: .env asks, and with nobody to ask it is denied with the reason', async () => {
      const { status, body } = await post({ tool: 'read_env', args: {}, files: { '.env': ENV_FILE } });
      assert.equal(status, 200, JSON.stringify(body));
      assert.equal(body.outcome.tag, 'error', JSON.stringify(body.outcome));
      assert.ok(body.outcome.val.message.startsWith("filesystem.read .env failed (host error -32001): Access denied: read '.env' touches a sensitive path; confirm to allow; no one can be asked"), body.outcome.val.message);
      assert.ok(!JSON.stringify(body.outcome).includes('hunter2'));
      assert.ok(body.events.some((e) => e.method === 'fs.read' && e.target === '.env' && e.decision === 'ask' && !e.allowed), JSON.stringify(body.events));
    });

    test('MCP 2026-07-28 with the SDK v2 client: read_env asks by input_required; allow once reads .env, deny is isError without it', async () => {
      // The project's .env (the caller's own files are written without asking).
      const seeded = await post({ tool: 'fs_list_files', args: {}, project: 'envs', files: { '.env': ENV_FILE } });
      assert.equal(seeded.status, 200, JSON.stringify(seeded.body));
      const answers = [];
      const asked = [];
      const client = new ModernClient({ name: 'engines-test-2026', version: '0' }, {
        capabilities: { elicitation: { form: {} } },
        versionNegotiation: { mode: { pin: '2026-07-28' } },
        inputRequired: { autoFulfill: true, maxRounds: 4 },
      });
      client.setRequestHandler('elicitation/create', async (request) => {
        asked.push(request.params);
        const decision = answers.shift();
        if (decision === undefined) throw new Error(`unexpected question: ${request.params.message}`);
        return { action: 'accept', content: { decision } };
      });
      const transport = new ModernTransport(new URL('mcp?project=envs', edge.url), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } });
      // A tap on the wire, below the SDK: what the function sends and what the SDK retries.
      const wire = { sent: [], inputRequired: [], retries: [] };
      const send = transport.send.bind(transport);
      transport.send = (message, options) => {
        if ('method' in message) wire.sent.push(message.method);
        if (message.params?.requestState !== undefined) wire.retries.push(message.params);
        return send(message, options);
      };
      await client.connect(transport);
      const receive = transport.onmessage;
      transport.onmessage = (message, extra) => {
        if (message.result?.resultType === 'input_required') wire.inputRequired.push(message.result);
        receive?.(message, extra);
      };
      try {
        assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
        assert.ok(wire.sent.includes('server/discover') && !wire.sent.includes('initialize'), JSON.stringify(wire.sent));
        const names = (await client.listTools()).tools.map((t) => t.name);
        assert.ok(names.includes('read_env') && names.includes('fs_read_file'), JSON.stringify(names));

        const readEnv = async (decision) => {
          const [questions, results, retries] = [asked.length, wire.inputRequired.length, wire.retries.length];
          answers.push(decision);
          const r = await client.callTool({ name: 'read_env', arguments: {} });
          assert.equal(asked.length - questions, 1, `${decision}: asked ${JSON.stringify(asked.slice(questions))}`);
          const q = asked.at(-1);
          assert.equal(q.message, "Tool read_env asks for fs.read .env. Policy: read '.env' touches a sensitive path; confirm to allow");
          assert.deepEqual(q.requestedSchema.properties.decision.enum, ['allow once', 'allow for the rest of this call', 'deny']);
          const [ir] = wire.inputRequired.slice(results);
          assert.equal(wire.inputRequired.length - results, 1, JSON.stringify(wire.inputRequired.slice(results)));
          assert.deepEqual(Object.keys(ir.inputRequests), ['decision']);
          assert.equal(ir.inputRequests.decision.method, 'elicitation/create');
          const sent = wire.retries.slice(retries);
          assert.equal(sent.length, 1, JSON.stringify(sent));
          assert.equal(sent[0].requestState, ir.requestState);
          assert.equal(sent[0].inputResponses.decision.content.decision, decision);
          return r;
        };
        const allowed = await readEnv('allow once');
        assert.equal(allowed.isError, false, JSON.stringify(allowed));
        assert.deepEqual(allowed.content, [{ type: 'text', text: ENV_FILE }]);
        const denied = await readEnv('deny');
        assert.equal(denied.isError, true, JSON.stringify(denied));
        assert.ok(!JSON.stringify(denied).includes('hunter2'), JSON.stringify(denied));
        assert.match(denied.content[0].text, /touches a sensitive path; confirm to allow; .*denied by the user/);

        // Two questions in one call (read, then write .env): each answered in its round; the
        // second round re-runs the call with the first answer, and the write is committed.
        answers.push('allow once', 'allow once');
        const before = asked.length;
        const modified = await client.callTool({ name: 'fs_modify_file', arguments: { path: '.env', patterns: [{ old: 'hunter2', new: 'rotated' }] } });
        assert.equal(modified.isError, false, JSON.stringify(modified));
        assert.deepEqual(asked.slice(before).map((q) => q.message.split('. Policy')[0]), ['Tool fs_modify_file asks for fs.read .env', 'Tool fs_modify_file asks for fs.write .env']);
        answers.push('allow once');
        assert.deepEqual((await client.callTool({ name: 'read_env', arguments: {} })).content, [{ type: 'text', text: 'TOKEN=rotated\n' }]);

        // The secret of `${API_TOKEN}` over MCP too: sent, never shown.
        const got = await client.callTool({ name: 'api_get', arguments: { url: `${api.url}allowed/mcp` } });
        assert.deepEqual(got.content, [{ type: 'text', text: 'status 200\nauthorization: Bearer [REDACTED]\n' }]);
        assert.equal(api.received.at(-1).headers.authorization, `Bearer ${SECRET}`);
        assert.deepEqual(answers, []);
      } finally {
        await client.close();
      }
    });

    test('a calc session (RFD 009) is driven across separate /mcp requests by the npm SDK; another token or scope does not see it', async () => {
      const connectAs = async (token) => {
        const client = new Client({ name: 'engines-calc', version: '0' });
        await client.connect(new StreamableHTTPClientTransport(new URL('mcp?project=mine', edge.url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
        return client;
      };
      const handle = (r) => { assert.ok(r.structuredContent, JSON.stringify(r)); return r.structuredContent; };
      const scoped = (scope, args) => ({ name: 'calc', arguments: args, _meta: { 'jp-host/scope': scope } });
      let mine = await connectAs(PROJECT_TOKEN);
      const calc = (await mine.listTools()).tools.find((t) => t.name === 'calc');
      assert.deepEqual(calc.inputSchema.properties.action.enum, ['spawn', 'fetch', 'apply', 'abort'], JSON.stringify(calc));
      const h = handle(await mine.callTool(scoped('agent-1', { action: 'spawn', prelude: 'x = 20' })));
      assert.equal(h.state, 'running', JSON.stringify(h));
      await mine.close();
      // A later request on a new connection: the same live session.
      mine = await connectAs(PROJECT_TOKEN);
      const fed = handle(await mine.callTool(scoped('agent-1', { action: 'apply', id: h.id, input: 'x * 2 + 2' })));
      assert.equal(fed.content, '= 42', JSON.stringify(fed));
      // Another token (the operator's, which opens every project), another scope: unknown, as an
      // id that never was.
      const operator = await connectAs(TOKEN);
      for (const [client, scope] of [[operator, 'agent-1'], [mine, 'agent-2'], [mine, '']]) {
        const unknown = await client.callTool(scoped(scope, { action: 'fetch', id: 'h_999' }));
        const r = await client.callTool(scoped(scope, { action: 'apply', id: h.id, input: 'x' }));
        assert.equal(r.isError, true, JSON.stringify(r));
        assert.equal(r.content[0].text.replace(h.id, 'h_999'), unknown.content[0].text, `scope '${scope}'`);
        assert.equal(unknown.content[0].text, "no live handle 'h_999': no handle was issued to you since this host started (a handle from before it restarted is gone: spawn the tool again); no handles are live");
      }
      await operator.close();
      // The question travels as a state, its answer as apply — never as input_required.
      const asks = handle(await mine.callTool(scoped('agent-1', { action: 'apply', id: h.id, input: 'clear' })));
      assert.equal(asks.state, 'waiting', JSON.stringify(asks));
      assert.match(handle(await mine.callTool(scoped('agent-1', { action: 'apply', id: h.id, input: false }))).content, /kept 1 binding/);
      const aborted = handle(await mine.callTool(scoped('agent-1', { action: 'abort', id: h.id })));
      assert.equal(aborted.state, 'stopped');
      const gone = await mine.callTool(scoped('agent-1', { action: 'fetch', id: h.id }));
      assert.equal(gone.isError, true);
      // Without a project nothing outlives the request: a handle is refused, saying why.
      const loose = await fetch(new URL('mcp', edge.url), { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'calc', arguments: { action: 'spawn' } } }) });
      assert.match((await loose.json()).result.content[0].text, /handles are kept only for a project; call \/mcp\?project=ID/);
      await mine.close();
    });

    test('MCP 2026-07-28: a requestState that is altered, made up, or another token\'s, project\'s, tool\'s or arguments\' is -32602; its own retry still reads .env', async () => {
      const seeded = await fetch(edge.url, { method: 'POST', headers: as(PROJECT_TOKEN), body: JSON.stringify({ tool: 'fs_list_files', args: {}, project: 'mine', files: { '.env': ENV_FILE } }) });
      assert.equal(seeded.status, 200);
      const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } } };
      let id = 0;
      const call = async (token, project, params) => {
        const res = await fetch(new URL(`mcp?project=${project}`, edge.url), {
          method: 'POST',
          headers: as(token, { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': params.name }),
          body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method: 'tools/call', params: { ...params, _meta: meta } }),
        });
        assert.equal(res.status, 200);
        return res.json();
      };
      const allowOnce = { decision: { action: 'accept', content: { decision: 'allow once' } } };
      const retry = (state, extra = {}) => ({ name: 'read_env', arguments: {}, requestState: state, inputResponses: allowOnce, ...extra });
      const first = await call(PROJECT_TOKEN, 'mine', { name: 'read_env', arguments: {} });
      assert.equal(first.result?.resultType, 'input_required', JSON.stringify(first));
      const state = first.result.requestState;
      const [head, payload, mac] = state.split('.');
      const flipped = `${payload.slice(0, 10)}${payload[10] === 'A' ? 'B' : 'A'}${payload.slice(11)}`;
      const refusals = [
        [PROJECT_TOKEN, 'mine', retry(`${head}.${flipped}.${mac}`), /not issued by this server, or it was altered; call the tool again without requestState/],
        [PROJECT_TOKEN, 'mine', retry('0'.repeat(32)), /not issued by this server, or it was altered; call the tool again without requestState/],
        [TOKEN, 'mine', retry(state), /issued to another client \(another bearer token\); call the tool again without requestState/],
        [PROJECT_TOKEN, 'mine', retry(state, { name: 'fs_read_file', arguments: { path: '.env' } }), /belongs to a call of 'read_env', not 'fs_read_file'/],
        [PROJECT_TOKEN, 'mine', retry(state, { arguments: { extra: 1 } }), /the arguments differ from the call that asked under this requestState/],
      ];
      for (const [token, project, params, message] of refusals) {
        const r = await call(token, project, params);
        assert.equal(r.error?.code, -32602, JSON.stringify(r));
        assert.match(r.error.message, message);
        assert.ok(!JSON.stringify(r).includes('hunter2'));
      }
      // The operator's state on another project.
      const mineByOperator = await call(TOKEN, 'mine', { name: 'read_env', arguments: {} });
      const elsewhere = await call(TOKEN, 'envs', retry(mineByOperator.result.requestState));
      assert.equal(elsewhere.error?.code, -32602, JSON.stringify(elsewhere));
      assert.match(elsewhere.error.message, /belongs to a call on another project/);
      // The state itself was sound: its own retry reads the file.
      const done = await call(PROJECT_TOKEN, 'mine', retry(state));
      assert.deepEqual(done.result, { resultType: 'complete', content: [{ type: 'text', text: ENV_FILE }], isError: false });
    });
  });
}

// The user's own components (`npm run build -- --component PATH.wasm`), served by every engine
// beside the builtin ones: issue 34's fetch component copied under a name of its own, `mine`,
// built into a registry of its own (`build.mjs --served-out DIR`, under the repository, where
// Deno may read) so that the rest of the suite sees the plain build; each engine is pointed at it
// (JP_EDGE_SERVED), without the test components (JP_EDGE_FAULTS), so its tools are mine's.
// wrangler serves only www/components's registry (its bundle is wrangler.jsonc's).
const SERVED_ENGINES = ENGINES.filter((e) => ['workerd', 'deno', 'node'].includes(e));
describe("a user's component built with --component", { skip: SERVED_ENGINES.length === 0 }, () => {
  let served;
  let source;
  before(async () => {
    source = mkdtempSync(join(tmpdir(), 'jp-component-'));
    copyFileSync(join(root, 'www/components/fetch.wasm'), join(source, 'fetch-copy.wasm'));
    mkdirSync(join(root, '.jp-edge'), { recursive: true });
    served = mkdtempSync(join(root, '.jp-edge', 'served-test-'));
    await run(process.execPath, [join(root, 'web/scripts/build.mjs'), '--served-out', served, '--component', `mine=${join(source, 'fetch-copy.wasm')}`], { cwd: root });
  });
  after(() => {
    rmSync(source, { recursive: true, force: true });
    rmSync(served, { recursive: true, force: true });
  });

  test('the registry names it; its directory is transpiled like a builtin (cores.json, cores.js)', () => {
    assert.deepEqual(JSON.parse(readFileSync(join(served, 'served.json'), 'utf8')), ['mine']);
    assert.match(readFileSync(join(served, 'served.js'), 'utf8'), /import \* as module0 from '\.\/mine\/mine\.js';/);
    const cores = JSON.parse(readFileSync(join(served, 'mine/cores.json'), 'utf8'));
    assert.ok(cores.length > 0 && cores.every((f) => readdirSync(join(served, 'mine')).includes(f)), JSON.stringify(cores));
    assert.ok(readFileSync(join(served, 'mine/cores.js'), 'utf8').includes(`'${cores[0]}'`));
  });

  for (const engine of SERVED_ENGINES) {
    describe(`served on ${engine}`, () => {
      let edge;
      let data;
      let api;
      before(async () => {
        data = mkdtempSync(join(tmpdir(), `jp-edge-served-${engine}-`));
        api = await recordingServer();
        edge = await startEdge({ engine, data, token: TOKEN, served, policy: operatorPolicy(api.port), secrets: { API_TOKEN: SECRET } });
      });
      after(async () => {
        await edge?.stop();
        await api?.stop();
        rmSync(data, { recursive: true, force: true });
      });

      test("mine's tools are listed beside fs's (MCP tools/list) and callable (POST /, MCP)", async () => {
        const client = new Client({ name: 'engines-test-served', version: '0' });
        await client.connect(new StreamableHTTPClientTransport(new URL('mcp', edge.url), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } }));
        try {
          const names = (await client.listTools()).tools.map((t) => t.name);
          for (const name of ['fs_read_file', 'api_get', 'read_env']) assert.ok(names.includes(name), JSON.stringify(names));
          // Without JP_EDGE_FAULTS the test components are not served: these are mine's.
          assert.ok(!names.includes('spin') && !names.includes('chart'), JSON.stringify(names));
          const got = await client.callTool({ name: 'api_get', arguments: { url: `${api.url}allowed/mine` } });
          assert.deepEqual(got.content, [{ type: 'text', text: 'status 200\nauthorization: Bearer [REDACTED]\n' }], JSON.stringify(got));
          assert.equal(api.received.at(-1).headers.authorization, `Bearer ${SECRET}`);
        } finally {
          await client.close();
        }
        const res = await fetch(edge.url, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ tool: 'read_env', args: {}, files: { '.env': ENV_FILE } }) });
        const body = await res.json();
        assert.equal(res.status, 200, JSON.stringify(body));
        assert.match(body.outcome.val.message, /^filesystem\.read \.env failed \(host error -32001\): Access denied: read '\.env' touches a sensitive path/);
      });
    });
  }
});
