// The edge handler in-process on Node: a fresh in-memory host per request, the fs component
// under jco, and the policy enforced by the core (run: npm test). The same function on workerd,
// Deno and Node as servers: engines.test.mjs.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { nodeHandler } from '../edge/node.mjs';
import { memoryStorage } from '../edge/common.js';
import { answering, elicitation, replaying, requestStates, STATE_TTL_MS } from '../edge/mrtr.js';

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

/** One JSON-RPC request to `/mcp` of `h`; `version` in `_meta` and the header when given
 * (2026-07-28), `headers` over those. */
async function mcp(h, method, params, { project = 'mcp', version = null, capabilities = { elicitation: { form: {} } }, headers = {} } = {}) {
  const meta = version ? { _meta: { 'io.modelcontextprotocol/protocolVersion': version, 'io.modelcontextprotocol/clientCapabilities': capabilities } } : {};
  const res = await h.fetch(new Request(`http://127.0.0.1/mcp?project=${project}`, {
    method: 'POST',
    headers: { ...AUTH, accept: 'application/json, text/event-stream', ...(version ? { 'mcp-protocol-version': version, 'mcp-method': method } : {}), ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, ...meta } }),
  }));
  return { status: res.status, body: await res.json() };
}

test('/mcp before 2026-07-28 and 2026-07-28 without elicitation: a question is denied at once, saying why; a requestState is not read', async () => {
  const seeded = await call({ tool: 'fs_list_files', project: 'mcp', files: { '.env': 'TOKEN=x\n' } });
  assert.equal(seeded.status, 200, JSON.stringify(seeded.body));
  const read = { name: 'fs_read_file', arguments: { path: '.env' } };
  const legacy = await mcp(handler, 'tools/call', { ...read, requestState: 'anything' }, { headers: { 'mcp-protocol-version': '2025-11-25' } });
  assert.equal(legacy.body.result?.isError, true, JSON.stringify(legacy.body));
  assert.equal(legacy.body.result.resultType, undefined, 'no resultType before 2026-07-28');
  assert.match(legacy.body.result.content[0].text, /touches a sensitive path; confirm to allow; no one can be asked/);
  const blind = await mcp(handler, 'tools/call', read, { version: '2026-07-28', capabilities: {} });
  assert.equal(blind.body.result?.resultType, 'complete', JSON.stringify(blind.body));
  assert.equal(blind.body.result.isError, true);
  assert.match(blind.body.result.content[0].text, /nobody could be asked: the MCP client does not support elicitation/);
  for (const r of [legacy, blind]) assert.doesNotMatch(JSON.stringify(r.body), /TOKEN=x/);
});

test('/mcp 2026-07-28: server/discover, list hints, headers that contradict the body, versions not served', async () => {
  const discover = await mcp(handler, 'server/discover', {}, { version: '2026-07-28' });
  assert.equal(discover.status, 200);
  assert.deepEqual(discover.body.result.supportedVersions, ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25', '2026-07-28']);
  assert.equal(discover.body.result.resultType, 'complete');
  assert.deepEqual(discover.body.result._meta, { 'io.modelcontextprotocol/serverInfo': { name: 'jp-edge', version: '0.1.0' } });
  const list = await mcp(handler, 'tools/list', {}, { version: '2026-07-28' });
  assert.equal(list.body.result.ttlMs, 60000);
  assert.equal(list.body.result.cacheScope, 'private');
  assert.ok(list.body.result.tools.some((t) => t.name === 'fs_read_file'));
  const mismatch = await mcp(handler, 'tools/list', {}, { version: '2026-07-28', headers: { 'mcp-protocol-version': '2025-11-25' } });
  assert.equal(mismatch.status, 400);
  assert.equal(mismatch.body.error.code, -32020);
  const method = await mcp(handler, 'tools/list', {}, { version: '2026-07-28', headers: { 'mcp-method': 'tools/call' } });
  assert.equal(method.status, 400);
  assert.match(method.body.error.message, /Mcp-Method header \(tools\/call\) does not match/);
  const future = await mcp(handler, 'tools/list', {}, { version: '2099-01-01' });
  assert.equal(future.status, 400);
  assert.equal(future.body.error.code, -32022);
  assert.deepEqual(future.body.error.data, { supported: ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25', '2026-07-28'], requested: '2099-01-01' });
});

test('a requestState opens only for its caller, project, tool and arguments, and only until it expires', async () => {
  let now = 1_000_000;
  const states = requestStates({ secret: 'operator-token', now: () => now });
  const call = { tool: 'read_env', args: { b: [1, { c: 2 }], a: 1 }, bearer: 'tok', project: 'p' };
  const answers = [{ method: 'fs.read', target: 'a', answer: 'once' }];
  const state = await states.seal({ ...call, answers, asking: { method: 'fs.write', target: '.env', tool: 'x', reason: 'r' } });
  // The same arguments in another key order are the same call.
  const opened = await states.open(state, { ...call, args: { a: 1, b: [1, { c: 2 }] } });
  assert.deepEqual(opened, { answers, asking: { method: 'fs.write', target: '.env' } });
  const refused = async (text, other, message) => assert.rejects(states.open(text, { ...call, ...other }), message);
  await refused(state, { bearer: 'tok2' }, /another client/);
  await refused(state, { project: null }, /another project/);
  await refused(state, { tool: 'api_get' }, /belongs to a call of 'read_env', not 'api_get'/);
  await refused(state, { args: { a: 2, b: [1, { c: 2 }] } }, /the arguments differ/);
  await assert.rejects(requestStates({ secret: 'another-key', now: () => now }).open(state, call), /not issued by this server, or it was altered/);
  now += STATE_TTL_MS - 1;
  await states.open(state, call);
  now += 1;
  await refused(state, {}, /expired .*call the tool again without requestState/);
});

test("the question's text escapes what the tool controls, by the core's own rules (core/src/display.rs's vectors)", () => {
  // The question is the core's (`inquiryElicitation`, the words `jp mcp` uses): the reason is
  // escaped, the tool and the target shown as one word or quoted.
  const message = (q) => elicitation({ tool: 't', method: 'fs.read', target: 'p', reason: 'r', ...q }).params.message;
  const escape = (reason) => message({ reason }).slice('Tool t asks for fs.read p. Policy: '.length);
  const shown = (target) => message({ target }).slice('Tool t asks for fs.read '.length, -'. Policy: r'.length);
  const cases = [
    ['\n', '\\n'], ['\r', '\\r'], ['\t', '\\t'], ['\u001b[2J', '\\x1b[2J'], ['\u0008', '\\x08'], ['\u0007', '\\x07'], ['\u0000', '\\x00'],
    ['\u007f', '\\x7f'], ['\u009b31m', '\\u{9b}31m'], ['\u0085', '\\u{85}'], ['\\x1b', '\\\\x1b'], ['\u00ad', '\\u{ad}'], ['\u061c', '\\u{61c}'],
    ['\u200b\u200c\u200d', '\\u{200b}\\u{200c}\\u{200d}'], ['\u2060\ufeff', '\\u{2060}\\u{feff}'], ['\u2028\u2029', '\\u{2028}\\u{2029}'],
    ['\u3164\u115f', '\\u{3164}\\u{115f}'], ['\ufe0f\u{e0041}', '\\u{fe0f}\\u{e0041}'], ['\u00a0', '\\u{a0}'], ['\ue000', '\\u{e000}'],
  ];
  for (const [raw, want] of cases) assert.equal(escape(raw), want, JSON.stringify(raw));
  for (const plain of ['src/main.rs', 'it\'s "quoted"', 'café', 'cafe\u0301', '日本語/ファイル', 'emoji 🦀']) assert.equal(escape(plain), plain);
  assert.equal(shown('README.md'), 'README.md');
  assert.equal(shown('a b'), '"a b"');
  assert.equal(shown(''), '""');
  assert.equal(shown('say "hi"'), '"say \\"hi\\""');
  assert.equal(shown('x\u001b]0;t\u0007'), '"x\\x1b]0;t\\x07"');
  assert.equal(shown('a\u202etxt.exe'), '"a\\u{202e}txt.exe"');
  const { requestedSchema } = elicitation({ tool: 't', method: 'fs.read', target: 'p', reason: 'r' }).params;
  assert.deepEqual(requestedSchema.properties.decision.enum, ['allow once', 'allow for the rest of this call', 'deny']);
});

test("learn (seed 002) reads a topic of a project's knowledge base (.jp/kb, filled in its storage) at /subjects", async () => {
  // What an operator puts in a project's storage: a request may not write jp's own .jp/.
  const storage = memoryStorage();
  const project = storage('kb');
  const bytes = (text) => new TextEncoder().encode(text);
  await project.put('.jp/kb/rust/errors.md', bytes('# Errors\nUse thiserror.\n'));
  await project.put('.jp/kb/rust/async/tokio.rs', bytes('fn main() {}\n'));
  await project.put('.jp/kb/rust/.draft.md', bytes('hidden\n'));
  await project.put('.jp/kb/go/intro.md', bytes('go\n'));
  const kb = await nodeHandler({ token: TOKEN, storage });
  const learn = async (args) => {
    const res = await kb.fetch(new Request('http://127.0.0.1/', { method: 'POST', headers: AUTH, body: JSON.stringify({ tool: 'learn', args, project: 'kb' }) }));
    assert.equal(res.status, 200);
    return (await res.json()).outcome;
  };
  assert.deepEqual(await learn({}), { tag: 'error', val: { message: 'learn needs a `topic`; topics in .jp/kb/: go, rust', trace: [], transient: false } });
  assert.deepEqual(await learn({ topic: 'rust' }), { tag: 'success', val: '# rust\n\nSubjects (load them with `subjects`):\n- async/tokio\n- errors\n' });
  assert.deepEqual(await learn({ topic: 'rust', subjects: ['errors', 'async/*'] }), { tag: 'success', val: '## Subject: errors\n\n# Errors\nUse thiserror.\n\n\n## Subject: async/tokio\n\n```rust\nfn main() {}\n```' });
  assert.match((await learn({ topic: 'rust', subjects: ['nope'] })).val.message, /no subject matches "nope"; subjects: async\/tokio, errors/);
  assert.match((await learn({ topic: 'java' })).val.message, /learn: no topic 'java' in \.jp\/kb\/; topics: go, rust/);
  // Nothing else of the project is in /subjects, and nothing there can be written.
  assert.equal((await learn({ topic: 'go', subjects: ['**'] })).val, '## Subject: intro\n\ngo\n');
});

test('an answer given through input_required is used once: the same request asked again in the run asks again', () => {
  const post = { method: 'http.post', target: 'https://x.example/transfer' };
  const answer = answering([{ ...post, answer: 'once' }, { method: 'fs.read', target: '.env', answer: 'denied by the user' }]);
  assert.equal(answer(post), 'once');
  assert.equal(answer(post), undefined, 'a second identical request is not covered by the first answer');
  assert.equal(answer({ method: 'fs.read', target: '.env' }), 'denied by the user');
  const run = replaying([{ ...post, answer: 'once' }]);
  assert.equal(run.inquirer({ tool: 't', ...post, reason: 'r' }), 'once');
  assert.notEqual(run.inquirer({ tool: 't', ...post, reason: 'r' }), 'once');
  assert.deepEqual(run.asked(), { tool: 't', ...post, reason: 'r' });
  assert.ok(run.signal.aborted, 'the run stops at the question it has no answer for');
});
