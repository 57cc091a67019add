// The edge handler in-process on Node: a fresh in-memory host per request, the fs component
// under jco, and the policy enforced by the core (run: npm test). The same function on workerd,
// Deno and Node as servers: engines.test.mjs.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { nodeHandler } from '../edge/node.mjs';
import { memoryStorage } from '../edge/common.js';

const TOKEN = 'edge-unit-test-token-9c2e';
const AUTH = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };

let handler;
before(async () => { handler = await nodeHandler({ token: TOKEN }); });
const handle = (request) => handler.fetch(request);

const call = async (body) => {
  const res = await handle(new Request('http://127.0.0.1/', { method: 'POST', headers: AUTH, body: JSON.stringify(body) }));
  return { status: res.status, body: await res.json() };
};

const files = { 'src/main.rs': 'fn main() {\n    println!("hi");\n}\n', 'README.md': '# demo\n', '.env': 'TOKEN=x\n' };

test('fs_grep_files finds a match in the request files', async () => {
  const { status, body } = await call({ tool: 'fs_grep_files', args: { pattern: 'println' }, files });
  assert.equal(status, 200);
  assert.equal(body.outcome.tag, 'success', JSON.stringify(body.outcome));
  assert.match(body.outcome.val, /src\/main\.rs:2:.*println/);
  assert.ok(body.events.some((e) => e.method === 'fs.grep' && e.allowed));
});

test('a write allowed by the default policy changes the files', async () => {
  const { body } = await call({ tool: 'fs_create_file', args: { path: 'notes/todo.md', content: 'x\n' }, files });
  assert.equal(body.outcome.tag, 'success', JSON.stringify(body.outcome));
  assert.deepEqual(body.changed, ['notes/todo.md']);
  assert.equal(body.files['notes/todo.md'], 'x\n');
});

test('a read-only policy denies the write and leaves the files as they were', async () => {
  const policy = '[access]\nfilesystem = [{ path = ".", allow = ["read"] }]\n';
  const { body } = await call({ tool: 'fs_create_file', args: { path: 'x.txt', content: 'x' }, files, policy });
  assert.equal(body.outcome.tag, 'error');
  assert.match(body.outcome.val.message, /denied|not allowed/i);
  assert.deepEqual(body.changed, []);
  assert.equal(body.files['x.txt'], undefined);
  assert.ok(body.events.some((e) => e.method === 'fs.write' && !e.allowed));
});

test('sensitive files ask, and asking is a denial here', async () => {
  const { body } = await call({ tool: 'fs_read_file', args: { path: '.env' }, files });
  assert.equal(body.outcome.tag, 'error');
  assert.doesNotMatch(JSON.stringify(body.outcome), /TOKEN=x/);
});

test('bad requests get a clear 4xx', async () => {
  const res = await handle(new Request('http://127.0.0.1/', { method: 'POST', headers: AUTH, body: 'not json' }));
  assert.equal(res.status, 400);
  assert.match((await res.json()).error, /must be JSON/);
  assert.equal((await call({ args: {} })).status, 400);
  const unknown = await call({ tool: 'nope', files });
  assert.equal(unknown.status, 404);
  assert.match(unknown.body.error, /fs_read_file/);
  const badPolicy = await call({ tool: 'fs_read_file', policy: '[access]\nfilesystem = 3', files });
  assert.equal(badPolicy.status, 400);
  assert.match(badPolicy.body.error, /policy/);
});

test('arguments that do not fit the schema: an error outcome naming the fix, and isError over /mcp (SEP-1303)', async () => {
  const wrong = await call({ tool: 'fs_read_file', args: { path: 3 }, files });
  assert.equal(wrong.status, 200);
  assert.equal(wrong.body.outcome.tag, 'error');
  assert.equal(wrong.body.outcome.val.message, "tool 'fs_read_file': argument 'path' must be a string, got 3; see the tool's schema");
  assert.ok(!wrong.body.events.length, 'the tool did not run');
  const rpc = async (id, name, args) => {
    const res = await handle(new Request('http://127.0.0.1/mcp?project=args', {
      method: 'POST',
      headers: { ...AUTH, accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } }),
    }));
    return res.json();
  };
  const missing = await rpc(1, 'fs_read_file', {});
  assert.equal(missing.result?.isError, true, JSON.stringify(missing));
  assert.match(missing.result.content[0].text, /argument 'path' is required but missing; see the tool's schema/);
  const typed = await rpc(2, 'fs_create_file', { path: 'a.txt', content: 5 });
  assert.equal(typed.result?.isError, true, JSON.stringify(typed));
  assert.match(typed.result.content[0].text, /argument 'content' must be a string, got 5/);
  const unknown = await rpc(3, 'no_such_tool', {});
  assert.equal(unknown.error?.code, -32602, JSON.stringify(unknown));
});

test('the kept copy of a project follows the storage version', async () => {
  const inner = memoryStorage();
  let lists = 0;
  let beforeBatch = null; // a write by somebody else, landing between a call's read and its commit
  const storage = (id) => {
    const s = inner(id);
    return {
      ...s,
      list: async () => { lists++; return s.list(); },
      batch: async (ops, expected) => {
        const other = beforeBatch;
        beforeBatch = null;
        if (other) await other(s);
        return s.batch(ops, expected);
      },
    };
  };
  const h = await nodeHandler({ token: TOKEN, storage });
  const call = async (body) => {
    const res = await h.fetch(new Request('http://127.0.0.1/', { method: 'POST', headers: AUTH, body: JSON.stringify({ project: 'kept', ...body }) }));
    return { status: res.status, body: await res.json() };
  };
  const read = async (path) => (await call({ tool: 'fs_read_file', args: { path } })).body.outcome;
  const text = (s) => new TextEncoder().encode(s);

  assert.equal((await call({ tool: 'fs_create_file', args: { path: 'a.txt', content: 'one\n' } })).body.outcome.tag, 'success');
  lists = 0;
  for (let i = 0; i < 3; i++) assert.equal((await read('a.txt')).val, 'one\n');
  assert.equal(lists, 1, 'three reads of an unchanged project list the storage once');

  // Another writer's put and delete are seen by the next call.
  await inner('kept').put('b.txt', text('two\n'));
  assert.equal((await read('b.txt')).val, 'two\n');
  await inner('kept').delete('b.txt');
  assert.equal((await read('b.txt')).tag, 'error');

  // A write landing between the call's read and its commit: 409, nothing of the call stored.
  beforeBatch = (s) => s.put('c.txt', text('other\n'));
  const stale = await call({ tool: 'fs_create_file', args: { path: 'd.txt', content: 'mine\n' } });
  assert.equal(stale.status, 409, JSON.stringify(stale.body));
  assert.match(stale.body.error, /changed while the call ran.*call again/);
  const stored = new Map(await inner('kept').list());
  assert.ok(stored.has('c.txt') && stored.has('a.txt'));
  assert.ok(!stored.has('d.txt'), 'the refused call stored nothing');
  assert.equal((await read('d.txt')).tag, 'error');

  // A failed call keeps the copy too.
  await inner('kept').put('e.txt', text('five\n'));
  lists = 0;
  assert.equal((await read('missing.txt')).tag, 'error');
  assert.equal((await read('e.txt')).val, 'five\n');
  assert.equal((await read('c.txt')).val, 'other\n');
  assert.equal(lists, 1, 'a failed read lists the moved storage once and leaves its copy to the next calls');
});
