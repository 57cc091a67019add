// The edge function on real edge engines — workerd, `wrangler dev` (the repo's wrangler.jsonc, as
// a user deploying to Cloudflare runs it), Deno and Node — each spawned on 127.0.0.1 by the test
// and killed after: the same suite against each (run: npm test). EDGE_ENGINES=wrangler,node
// picks engines.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { promisify } from 'node:util';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startEdge, MEMORY_CAP_MIB, WRANGLER } from '../scripts/edge.mjs';

const TOKEN = 'edge-test-token-5d1f';
const DEADLINE_MS = 1500;
const persistent = { workerd: true, wrangler: true, deno: true, node: false };
const ENGINES = (process.env.EDGE_ENGINES ?? 'workerd,wrangler,deno,node').split(',').map((e) => e.trim()).filter(Boolean);

const root = join(import.meta.dirname, '..', '..');
const run = promisify(execFile);

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
    const start = async () => { edge = await startEdge({ engine, data, token: TOKEN, faults: true, deadlineMs: DEADLINE_MS }); };
    before(async () => {
      data = mkdtempSync(join(tmpdir(), `jp-edge-${engine}-`));
      await start();
    });
    after(async () => {
      await edge?.stop();
      rmSync(data, { recursive: true, force: true });
    });

    const post = async (body, raw) => {
      const res = await fetch(edge.url, { method: 'POST', body: raw ?? JSON.stringify(body) });
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
      await edge.stop();
      await start();
      const r = await post({ tool: 'fs_read_file', args: { path: 'notes/a.md' }, project: 'p1' });
      assert.equal(r.body.outcome.val, 'kept\n', JSON.stringify(r.body));
    });

    test('a read-only policy denies the write; nothing of the call is stored', async () => {
      const policy = '[access]\nfilesystem = [{ path = ".", allow = ["read"] }]\n';
      const { body } = await post({ tool: 'fs_create_file', args: { path: 'denied.txt', content: 'x' }, project: 'p1', policy, files: { 'also-not.txt': 'y' } });
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
      await client.close();
    });
  });
}
