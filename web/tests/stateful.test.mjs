// Stateful components (RFD 009, wit/tool/stateful.wit) off the page's thread-less engines — the
// same Host the edge runs: the calc example (tools/guests/calc) keeps its bindings across
// commands through the core's handle session (`agentCall`), its question answered by `apply`;
// owners are kept apart; ending an owner aborts its handles; a session that spins or traps is
// stopped alone, with the limit named, and the host keeps serving. Chromium runs the page's
// Worker-per-handle path (playground.test.mjs).
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { Host, loadJp, agentResult, agentTool } from '../../www/jp.js';
import { memoryStorage } from '../edge/common.js';

const component = {};

async function load(name) {
  const dir = new URL(`../../www/components/${name}/`, import.meta.url);
  const cores = {};
  for (const f of JSON.parse(await readFile(new URL('cores.json', dir), 'utf8'))) cores[f] = await WebAssembly.compile(await readFile(new URL(f, dir)));
  component[name] = { module: await import(new URL(`${name}.js`, dir).href), cores };
}

before(async () => {
  await loadJp(
    await WebAssembly.compile(await readFile(new URL('../../www/pkg/jp_web_bg.wasm', import.meta.url))),
    await WebAssembly.compile(await readFile(new URL('../../www/pkg/validate/jp_validate_bg.wasm', import.meta.url))),
  );
  await load('calc');
  await load('faults-stateful');
  await load('fs');
});

async function host({ deadlineMs = 5_000 } = {}) {
  const h = await Host.create({ limits: { deadlineMs } });
  await h.registerComponent('calc', component.calc.module, component.calc.cores);
  return h;
}

const content = (out) => {
  assert.equal(out.tag, 'handle', JSON.stringify(out));
  return out.val;
};

test('calc is listed in the flat stateful form and a session keeps its bindings across commands', async () => {
  const h = await host();
  const calc = h.listTools().find((t) => t.name === 'calc');
  assert.deepEqual(calc.actions, ['spawn', 'fetch', 'apply', 'abort']);
  assert.deepEqual(calc.inputSchema.properties.action.enum, ['spawn', 'fetch', 'apply', 'abort']);
  const listed = agentTool(calc, h.policyHints());
  assert.equal(listed.annotations.idempotentHint, undefined, 'a stateful tool is never idempotent');

  const spawned = content(await h.spawn('calc', {}));
  assert.deepEqual([spawned.id, spawned.state], ['h_1', 'running']);
  assert.match(spawned.content, /^calc: integer expressions/);
  assert.match(content(await h.applyHandle('calc', 'h_1', 'x = 2 * 3')).content ?? '', /x = 6/);
  assert.equal(content(await h.applyHandle('calc', 'h_1', 'x + 1')).content, '= 7');
  // A bad line is an error in the content; the session lives on.
  const bad = content(await h.applyHandle('calc', 'h_1', '1 / 0'));
  assert.equal(bad.state, 'running');
  assert.match(bad.content, /division by zero/);
  // `clear` asks; the answer is routed to the question by the core session.
  const asks = content(await h.applyHandle('calc', 'h_1', 'clear'));
  assert.equal(asks.state, 'waiting', JSON.stringify(asks));
  assert.match(asks.question.text, /Forget all 1 binding/);
  assert.deepEqual(h.handles(), [{ id: 'h_1', tool: 'calc', state: 'waiting', question: asks.question.text }]);
  assert.match(content(await h.applyHandle('calc', 'h_1', true)).content, /forgot 1 binding/);
  assert.match(content(await h.applyHandle('calc', 'h_1', 'vars')).content, /no bindings/);
  // MCP's CallToolResult of a command, as `jp mcp` answers it.
  const mcp = agentResult('calc', await h.fetchHandle('calc', 'h_1'));
  assert.equal(mcp.structuredContent.id, 'h_1');
  assert.equal(mcp.isError, false);
  const quit = content(await h.applyHandle('calc', 'h_1', 'quit'));
  assert.deepEqual([quit.state, quit.result], ['stopped', 'bye: 0 bindings']);
  const gone = await h.fetchHandle('calc', 'h_1');
  assert.equal(gone.tag, 'error');
  assert.equal(gone.val.message, "no live handle 'h_1'; no handles are live");
});

test('owners are kept apart, and ending an owner aborts its handles', async () => {
  const h = await host();
  const mine = content(await h.spawn('calc', { prelude: 'secret = 42' }, { owner: 'alice' }));
  assert.equal(mine.id, 'h_1');
  const theirs = await h.applyHandle('calc', 'h_1', 'secret', { owner: 'mallory' });
  const unknown = await h.applyHandle('calc', 'h_7', 'secret', { owner: 'mallory' });
  assert.equal(theirs.tag, 'error');
  assert.equal(theirs.val.message.replace('h_1', 'h_7'), unknown.val.message, 'no oracle: just unknown');
  assert.equal(content(await h.applyHandle('calc', 'h_1', 'secret', { owner: 'alice' })).content, '= 42');
  assert.deepEqual(h.handles('mallory'), []);
  await h.closeHandles('alice');
  assert.deepEqual(h.handles('alice'), []);
  const after = await h.fetchHandle('calc', 'h_1', { owner: 'alice' });
  assert.equal(after.tag, 'error', 'aborted with its owner');
});

test('without action calc runs to its end; a question nobody answers is the outcome', async () => {
  const h = await host();
  const out = await h.callTool('calc', { prelude: 'n = 6\nn * 7\nquit' });
  assert.equal(out.tag, 'success', JSON.stringify(out));
  assert.match(out.val, /= 42/);
  const asks = await h.callTool('calc', { prelude: 'n = 1\nclear' });
  assert.equal(asks.tag, 'needs-input', JSON.stringify(asks));
  const answered = await h.callTool('calc', { prelude: 'n = 1\nclear\nvars\nquit' }, { answerer: () => false });
  assert.equal(answered.tag, 'success', JSON.stringify(answered));
  assert.match(answered.val, /kept 1 binding/);
  assert.deepEqual(h.handles(), [], 'nothing left live');
});

test('a session that spins or traps is stopped alone, the limit named, and the host serves on', async () => {
  const h = await Host.create({ limits: { deadlineMs: 1_000 } });
  await h.registerComponent('faults-stateful', component['faults-stateful'].module, component['faults-stateful'].cores,
    [{ name: 'fault_session', summary: 'faults', parameters: {}, actions: ['spawn', 'fetch', 'apply', 'abort'] }]);
  await h.registerComponent('calc', component.calc.module, component.calc.cores);
  const a = content(await h.spawn('fault_session', {}));
  const b = content(await h.spawn('fault_session', {}));
  assert.equal(content(await h.applyHandle('fault_session', a.id, 'hello')).state, 'running');
  const spun = content(await h.applyHandle('fault_session', a.id, 'spin'));
  assert.equal(spun.state, 'stopped');
  assert.match(spun.error.message, /ran past its deadline of 1000 ms and was stopped; nothing it did was written; the session has stopped/);
  const trapped = content(await h.applyHandle('fault_session', b.id, 'trap'));
  assert.equal(trapped.state, 'stopped');
  assert.match(trapped.error.message, /trapped/);
  assert.deepEqual(h.handles(), []);
  // The host goes on serving.
  assert.equal(content(await h.spawn('calc', {})).state, 'running');
});

// A host over the embedder's storage (the edge): every command keeps the handle's saved session
// beside the project's files, so a host that lost the instance — a new Host on the same
// storage is what an engine restart or an evicted project leaves — rebuilds it.
async function storedHost(storage) {
  const h = await Host.create({ storage, limits: { deadlineMs: 5_000 } });
  await h.registerComponent('calc', component.calc.module, component.calc.cores);
  await h.registerComponent('fs', component.fs.module, component.fs.cores);
  await h.registerComponent('faults-stateful', component['faults-stateful'].module, component['faults-stateful'].cores,
    [{ name: 'fault_session', summary: 'faults', parameters: {}, actions: ['spawn', 'fetch', 'apply', 'abort'] }]);
  return h;
}

/** memoryStorage's project with every batch recorded. */
function spiedStorage() {
  const storage = memoryStorage()('p');
  const batches = [];
  const batch = storage.batch;
  storage.batch = async (ops, expected) => {
    batches.push(ops.map((o) => `${o.value === null ? '-' : '+'}${o.path}`));
    return batch(ops, expected);
  };
  return { storage, batches };
}

test('at the edge a session outlives its instance: rebuilt from its saved state, its question still routed', async () => {
  const { storage, batches } = spiedStorage();
  const before = await storedHost(storage);
  assert.equal(content(await before.spawn('calc', { prelude: 'x = 5' }, { owner: 'alice' })).id, 'h_1');
  const asks = content(await before.applyHandle('calc', 'h_1', 'clear', { owner: 'alice' }));
  assert.equal(asks.state, 'waiting');
  // The spawn's batch kept the record and the owner's count of ids; each command's its record.
  assert.deepEqual(batches[0], ['+/jp/handle/h_1/alice', '+/jp/issued/alice']);
  assert.deepEqual(batches.at(-1), ['+/jp/handle/h_1/alice']);
  // The records are not files: not listed, not readable by a tool.
  assert.deepEqual(await before.listFiles(), []);
  const read = await before.callTool('fs_read_file', { path: '/jp/handle/h_1/alice' });
  assert.equal(read.tag, 'error');

  const after = await storedHost(storage); // the old instance is gone with its host
  // Another owner gets what an unknown id gets, here too.
  const theirs = await after.applyHandle('calc', 'h_1', true, { owner: 'mallory' });
  assert.match(theirs.val.message, /^no live handle 'h_1': no handle was issued to you/);
  // The owner's answer reaches the question its session was waiting on before the restart.
  const answered = content(await after.applyHandle('calc', 'h_1', true, { owner: 'alice' }));
  assert.match(answered.content, /forgot 1 binding/, JSON.stringify(answered));
  assert.equal(content(await after.applyHandle('calc', 'h_1', 'y = 2', { owner: 'alice' })).state, 'running');
  assert.deepEqual(after.handles('alice').map((x) => x.id), ['h_1']);
  // Ids go on after those issued before the restart.
  assert.equal(content(await after.spawn('calc', {}, { owner: 'alice' })).id, 'h_2');
  // Lost again: the latest state comes back (y, not x).
  const third = await storedHost(storage);
  assert.match(content(await third.applyHandle('calc', 'h_1', 'vars', { owner: 'alice' })).content, /y = 2/);
  assert.doesNotMatch(content(await third.applyHandle('calc', 'h_1', 'vars', { owner: 'alice' })).content, /x =/);
  // Abort of a handle this host never held: stopped, its record gone.
  const aborted = content(await (await storedHost(storage)).abortHandle('calc', 'h_2', { owner: 'alice' }));
  assert.deepEqual([aborted.state, aborted.error.message], ['stopped', 'aborted']);
  assert.equal(await storage.get('/jp/handle/h_2/alice'), undefined);
  // A stop ends it for good: the record goes in the command's batch.
  assert.equal(content(await third.applyHandle('calc', 'h_1', 'quit', { owner: 'alice' })).state, 'stopped');
  assert.deepEqual(batches.at(-1), ['-/jp/handle/h_1/alice']);
  const gone = await (await storedHost(storage)).fetchHandle('calc', 'h_1', { owner: 'alice' });
  assert.match(gone.val.message, /^no live handle 'h_1'/);
});

test('at the edge a session that cannot be saved is reported stopped, transient, once', async () => {
  const { storage } = spiedStorage();
  const before = await storedHost(storage);
  const id = content(await before.spawn('fault_session', {}, { owner: 'bob' })).id;
  assert.equal(content(await before.fetchHandle('fault_session', id, { owner: 'bob' })).content, 'commands: 2');
  const after = await storedHost(storage);
  const lost = content(await after.fetchHandle('fault_session', id, { owner: 'bob' }));
  assert.equal(lost.state, 'stopped');
  assert.equal(lost.error.transient, true);
  assert.match(lost.error.message, /^handle 'h_1' of tool 'fault_session' was lost: the live instance behind it ended with this host \(the engine restarted, or evicted the project\), and tool 'fault_session' does not save its sessions; spawn the tool again$/);
  // Said once: then it is an id like any other gone one.
  assert.equal((await after.fetchHandle('fault_session', id, { owner: 'bob' })).tag, 'error');
  // A spawn works again, under a new id.
  assert.equal(content(await after.spawn('fault_session', {}, { owner: 'bob' })).id, 'h_2');
});

test('at the edge a saved session idle past the limit is gone, and swept from storage', async () => {
  const storage = memoryStorage()('p');
  const old = { tool: 'calc', state: { type: 'running' }, saved: '{"vars":{"x":1}}', at: 0 };
  const bytes = (v) => new TextEncoder().encode(JSON.stringify(v));
  await storage.put('/jp/handle/h_1/carol', bytes(old));
  await storage.put('/jp/handle/h_2/dave', bytes(old));
  const h = await storedHost(storage);
  const e = await h.applyHandle('calc', 'h_1', 'x', { owner: 'carol' });
  assert.equal(e.tag, 'error');
  assert.match(e.val.message, /^handle 'h_1' is gone: stopped after 30 min idle/);
  assert.equal(await storage.get('/jp/handle/h_1/carol'), undefined);
  // Dave never comes back: his record goes with the project's next commit.
  await h.callTool('fs_create_file', { path: 'a.txt', content: 'a' });
  assert.equal(await storage.get('/jp/handle/h_2/dave'), undefined);
  assert.deepEqual(await h.listFiles(), ['a.txt']);
});

test("a session's writes are the host's policy's: written where it allows, refused where it does not", async () => {
  const h = await storedHost(memoryStorage()('p'));
  h.setPolicy('[access]\nfilesystem = [{ path = ".", allow = ["read", "write"] }, { path = "locked", allow = ["read"] }]\n');
  const id = content(await h.spawn('fault_session', {})).id;
  assert.equal(content(await h.applyHandle('fault_session', id, 'write:live.txt')).content, 'wrote live.txt');
  assert.equal(await h.readFile('live.txt'), 'written by a session');
  const refused = content(await h.applyHandle('fault_session', id, 'write:locked/x.txt'));
  assert.match(refused.content, /^not written: /, JSON.stringify(refused));
  assert.deepEqual(await h.listFiles(), ['live.txt']);
});

test('a signal stops a stateful tool run to its end, its instance with it', async () => {
  const h = await storedHost(memoryStorage()('p'));
  const stop = new AbortController();
  // Without `action` the session is fetched until it stops; this one never does.
  const running = h.callTool('fault_session', {}, { signal: stop.signal });
  setTimeout(() => stop.abort(), 100);
  const out = await running;
  assert.equal(out.tag, 'error', JSON.stringify(out));
  assert.match(out.val.message, /cancel/i);
  assert.doesNotMatch(out.val.message, /deadline/);
  assert.deepEqual(h.handles(), []);
});

test('a stateful tool that never stops, run to its end, ends at the deadline on a one-threaded host', async () => {
  const h = await Host.create({ limits: { deadlineMs: 300 } });
  await h.registerComponent('faults-stateful', component['faults-stateful'].module, component['faults-stateful'].cores,
    [{ name: 'fault_session', summary: 'faults', parameters: {}, actions: ['spawn', 'fetch', 'apply', 'abort'] }]);
  // It answers `running` at once, forever: the fetches pause on the host's timer, so it fires.
  const out = await h.callTool('fault_session', {});
  assert.equal(out.tag, 'error', JSON.stringify(out));
  assert.match(out.val.message, /timed out|deadline/i);
  assert.deepEqual(h.handles(), []);
});

test("an ended session's resource is dropped by the host, never left to the garbage collector", async () => {
  // jco drops a resource the program forgot when the collector finalizes it: the component's
  // destructor would then run outside any command, past its deadline, and its loop check's
  // throw be an uncaught exception (which ends a Node process). The host drops each session
  // itself when its handle ends: no session resource is left registered for finalization.
  const Real = globalThis.FinalizationRegistry;
  const registered = new Set();
  globalThis.FinalizationRegistry = class extends Real {
    register(target, held, token) {
      if (target?.constructor?.name === 'Session') registered.add(token);
      return super.register(target, held, token);
    }
    unregister(token) {
      registered.delete(token);
      return super.unregister(token);
    }
  };
  try {
    const h = await Host.create({ limits: { deadlineMs: 300 } });
    await h.registerComponent('faults-stateful', component['faults-stateful'].module, component['faults-stateful'].cores,
      [{ name: 'fault_session', summary: 'faults', parameters: {}, actions: ['spawn', 'fetch', 'apply', 'abort'] }]);
    for (const input of ['spin', 'trap']) {
      const a = content(await h.spawn('fault_session', {}));
      assert.equal(content(await h.applyHandle('fault_session', a.id, input)).state, 'stopped');
    }
    const b = content(await h.spawn('fault_session', {}));
    assert.equal(registered.size, 1, 'the live session is registered');
    assert.equal(content(await h.abortHandle('fault_session', b.id)).state, 'stopped');
    assert.deepEqual(h.handles(), []);
    assert.equal(registered.size, 0, 'every ended session was dropped by the host');
  } finally {
    globalThis.FinalizationRegistry = Real;
  }
});
