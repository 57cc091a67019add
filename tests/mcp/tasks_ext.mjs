// Drives `jp mcp` (stdio, MCP 2026-07-28) with the official MCP Tasks client,
// @modelcontextprotocol/ext-tasks (`createTaskSessionFromClient`), on the official TypeScript SDK
// v2 client (@modelcontextprotocol/client), both pinned devDependencies. A 2026-07-28 Tasks server
// needs the host's raw request path (`rawDispatch`, with `v2RequestFraming`): here a thin
// coordinator around the SDK's stdio transport that owns its own request ids. Checks:
//   - a quick call answers inline (no task);
//   - a slow `run` (`sleep 2; echo done`) becomes a task and settles with its output;
//   - cancelling a running task: the outcome is cancelled, jp's task says `cancelled`, and the
//     process is gone;
//   - a `.env` read (the policy asks) surfaces as a task input request, answered through
//     ext-tasks' input routing (`tasks/update`): "allow once" reads it, "deny" is a tool error.
// Usage: node tasks_ext.mjs JP WORKSPACE (the workspace: an approved `.jp/config.toml` letting
// `run` start `sh` and `sleep`, and a `.env`). Prints `ok <check>` lines, then one JSON summary
// line; exits non-zero on the first failed expectation, saying which.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import {
  createApplicationInputHandler,
  createTaskSessionFromClient,
  resultFromTaskOutcome,
} from '@modelcontextprotocol/ext-tasks/client';

const [JP, WS] = process.argv.slice(2);
if (!JP || !WS) {
  console.error('usage: node tasks_ext.mjs JP WORKSPACE');
  process.exit(2);
}
const PROTOCOL = '2026-07-28';
const clientInfo = { name: 'jp-tasks-ext-test', version: '1.0.0' };
// Form elicitation: jp puts its questions in a task's inputRequests only for a client that has it.
const clientCapabilities = { elicitation: { form: {} } };

const summary = { ok: false, protocolVersion: null, checks: [], tasks: {} };
const ok = (what) => {
  summary.checks.push(what);
  console.log(`ok ${what}`);
};
const text = (r) => (r.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const withTimeout = (promise, ms, what) =>
  Promise.race([promise, sleep(ms).then(() => Promise.reject(new Error(`${what}: no answer within ${ms} ms`)))]);

/** The host's request coordinator: the SDK transport, with a raw request path beside the
 * Client's own (string ids of its own, so they never meet the Client's numeric ones). */
class RawCoordinator {
  constructor(inner) {
    this.inner = inner;
    this.pending = new Map();
    this.next = 0;
    inner.onmessage = (message, extra) => {
      const waiter = message && typeof message === 'object' && 'id' in message && !('method' in message)
        ? this.pending.get(message.id)
        : undefined;
      if (waiter) {
        this.pending.delete(message.id);
        waiter(message);
      } else {
        this.onmessage?.(message, extra);
      }
    };
    inner.onerror = (error) => this.onerror?.(error);
    inner.onclose = () => {
      for (const waiter of this.pending.values()) waiter(undefined);
      this.pending.clear();
      this.onclose?.();
    };
    this.dispatch = this.dispatch.bind(this);
  }
  get sessionId() {
    return this.inner.sessionId;
  }
  setProtocolVersion(version) {
    this.inner.setProtocolVersion?.(version);
  }
  start() {
    return this.inner.start();
  }
  send(message, options) {
    return this.inner.send(message, options);
  }
  close() {
    return this.inner.close();
  }
  /** `rawDispatch` for ext-tasks: one JSON-RPC request, its response as `{kind, result|error}`. */
  async dispatch(request, options = {}) {
    const id = `ext-tasks-${++this.next}`;
    const { signal, context } = options;
    signal?.throwIfAborted();
    const answered = new Promise((resolve) => this.pending.set(id, resolve));
    await this.inner.send({ ...request, jsonrpc: '2.0', id });
    const stops = [answered];
    let onAbort;
    if (signal) {
      stops.push(new Promise((_, reject) => {
        onAbort = () => {
          this.pending.delete(id);
          void this.inner.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id } }).catch(() => {});
          reject(signal.reason ?? new Error('aborted'));
        };
        signal.addEventListener('abort', onAbort, { once: true });
      }));
    }
    const timeoutMs = context?.requestTimeoutMs ?? 60_000;
    stops.push(sleep(timeoutMs).then(() => {
      this.pending.delete(id);
      throw new Error(`${request.method}: no response within ${timeoutMs} ms`);
    }));
    try {
      const response = await Promise.race(stops);
      if (response === undefined) throw new Error(`${request.method}: the connection closed`);
      return 'error' in response ? { kind: 'error', error: response.error } : { kind: 'result', result: response.result };
    } finally {
      if (onAbort) signal.removeEventListener('abort', onAbort);
    }
  }
}

// What the application answers to each question, per call (its applicationContext), and what it
// was asked.
const asked = [];
const onInputRequest = createApplicationInputHandler({
  elicitation: async (request, context) => {
    asked.push({ message: request.params.message, scope: context.scope, delivery: context.delivery, taskId: context.taskId, inputId: context.inputId });
    return { action: 'accept', content: { decision: context.applicationContext.decision } };
  },
  sampling: async () => {
    throw new Error('jp asked for sampling: not expected');
  },
  roots: async () => {
    throw new Error('jp asked for roots: not expected');
  },
});
const backgroundErrors = [];

const transport = new RawCoordinator(
  new StdioClientTransport({ command: JP, args: ['mcp'], cwd: WS, stderr: 'inherit' }),
);
const client = new Client(clientInfo, {
  capabilities: clientCapabilities,
  versionNegotiation: { mode: { pin: PROTOCOL } },
});
let session;

function gone(pid) {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ');
  } catch {
    return true;
  }
}

async function pidIn(file) {
  for (let i = 0; i < 200; i++) {
    if (existsSync(join(WS, file))) {
      const pid = Number.parseInt(readFileSync(join(WS, file), 'utf8').trim(), 10);
      if (Number.isInteger(pid) && pid > 0) return pid;
    }
    await sleep(50);
  }
  throw new Error(`no pid in ${file}: the tool never started`);
}

async function main() {
  await withTimeout(client.connect(transport), 30_000, 'connect');
  summary.protocolVersion = client.getNegotiatedProtocolVersion();
  assert.equal(client.getProtocolEra(), 'modern', `the SDK did not negotiate the modern era (${summary.protocolVersion})`);
  assert.equal(summary.protocolVersion, PROTOCOL);
  const extensions = client.getServerCapabilities()?.extensions ?? {};
  assert.ok('io.modelcontextprotocol/tasks' in extensions, `jp does not declare the tasks extension: ${JSON.stringify(client.getServerCapabilities())}`);
  ok(`speaks ${PROTOCOL} and declares io.modelcontextprotocol/tasks`);

  session = createTaskSessionFromClient(client, {
    endpointId: `jp-mcp-stdio:${WS}`,
    rawDispatch: transport.dispatch,
    v2RequestFraming: { protocolVersion: PROTOCOL, clientInfo, clientCapabilities },
    onInputRequest,
    onError: (error) => backgroundErrors.push(String(error?.stack ?? error)),
  });
  assert.equal(session.capabilities.execution, true, `ext-tasks sees no task execution: ${JSON.stringify(session.capabilities)}`);
  summary.capabilities = session.capabilities;
  ok('ext-tasks session on the V2 (2026-07-28) tasks extension');

  // A quick call: answered inline, no task.
  {
    const execution = await session.callTool('fs_read_file', { path: 'notes.txt' });
    assert.equal(execution.kind, 'immediate', 'a quick call became a task');
    const r = resultFromTaskOutcome((await execution.settle()).outcome);
    assert.ok(!r.isError && text(r) === 'hello\n', `quick call: ${JSON.stringify(r)}`);
    ok('a quick call answers inline');
  }

  // a) A slow call becomes a task that settles with its result.
  {
    const started = Date.now();
    const execution = await session.callTool(
      'run',
      { program: 'sh', args: ['-c', 'sleep 2; echo done'] },
      { task: { preference: 'require' } },
    );
    assert.equal(execution.kind, 'task', 'a 2 s call did not become a task');
    const taskId = execution.handle.taskId;
    assert.match(taskId, /^[0-9a-f]{32}$/, `task id ${taskId}`);
    const statuses = [];
    const { outcome } = await withTimeout(
      execution.settle({ onEvent: (e) => e.type === 'task' && statuses.push(e.task.status) }),
      30_000,
      'the slow task',
    );
    assert.equal(outcome.status, 'completed', `slow task outcome: ${JSON.stringify(outcome)}`);
    const r = resultFromTaskOutcome(outcome);
    assert.ok(!r.isError && text(r).includes('done'), `slow task result: ${JSON.stringify(r)}`);
    assert.ok(Date.now() - started >= 1900, 'the slow task ended too early');
    summary.tasks.slow = { taskId, statuses, text: text(r) };
    ok('a slow run becomes a task and settles with its output');
  }

  // b) Cancelling a running task stops its process.
  {
    rmSync(join(WS, 'sleeper.pid'), { force: true });
    const execution = await session.callTool(
      'run',
      { program: 'sh', args: ['-c', 'echo $$ > sleeper.pid; exec sleep 300'] },
      { task: { preference: 'require' } },
    );
    assert.equal(execution.kind, 'task', 'a 300 s call did not become a task');
    const taskId = execution.handle.taskId;
    const pid = await pidIn('sleeper.pid');
    assert.ok(!gone(pid), `sleep ${pid} is not running before the cancel`);
    await withTimeout(execution.cancel(), 30_000, 'tasks/cancel');
    const { outcome } = await withTimeout(execution.settle(), 30_000, 'the cancelled task');
    assert.equal(outcome.status, 'cancelled', `cancelled task outcome: ${JSON.stringify(outcome)}`);
    // jp's own view of the task: `cancelled` once its processes are gone.
    const controller = session.task(taskId);
    let view;
    for (let i = 0; i < 200; i++) {
      view = await controller.snapshot();
      if (view.status !== 'working') break;
      await sleep(50);
    }
    assert.equal(view.status, 'cancelled', `jp's task after tasks/cancel: ${JSON.stringify(view.raw)}`);
    assert.ok(gone(pid), `sleep ${pid} outlived its cancelled task`);
    summary.tasks.cancelled = { taskId, outcome: outcome.status, server: view.status, pid, gone: true };
    ok('cancelling a running task stops its process; the outcome and jp say cancelled');
  }

  // c) A policy inquiry in a task: an input request answered through ext-tasks' input routing.
  for (const [decision, expect] of [['allow once', 'read'], ['deny', 'tool error']]) {
    const before = asked.length;
    const execution = await session.callTool('fs_read_file', { path: '.env' }, { applicationContext: { decision } });
    assert.equal(execution.kind, 'task', `a .env read (${decision}) did not become a task`);
    const taskId = execution.handle.taskId;
    const { outcome } = await withTimeout(execution.settle(), 30_000, `the .env task (${decision})`);
    assert.equal(outcome.status, 'completed', `.env task (${decision}) outcome: ${JSON.stringify(outcome)}`);
    const r = outcome.result;
    const questions = asked.slice(before);
    assert.equal(questions.length, 1, `questions for ${decision}: ${JSON.stringify(questions)}`);
    const [q] = questions;
    assert.ok(q.message.includes('fs.read') && q.message.includes('.env'), `question: ${q.message}`);
    assert.equal(q.scope, 'task', `the question was not routed to the task: ${JSON.stringify(q)}`);
    assert.equal(q.delivery, 'task-update', `the answer was not a tasks/update: ${JSON.stringify(q)}`);
    assert.equal(q.taskId, taskId);
    if (expect === 'read') {
      assert.ok(!r.isError && text(r) === 'TOKEN=hunter2\n', `allow once: ${JSON.stringify(r)}`);
    } else {
      assert.ok(r.isError === true && !JSON.stringify(r).includes('hunter2'), `deny: ${JSON.stringify(r)}`);
    }
    summary.tasks[decision] = { taskId, inputId: q.inputId, isError: r.isError === true, text: text(r) };
    ok(`a .env read asks through the task's inputRequests; ${decision} gives a ${expect}`);
  }

  assert.deepEqual(backgroundErrors, [], 'ext-tasks reported errors');
  summary.ok = true;
}

let failure;
try {
  await main();
} catch (error) {
  failure = error;
  summary.error = String(error?.stack ?? error);
  summary.backgroundErrors = backgroundErrors;
}
try {
  await session?.close();
  await client.close();
} catch (error) {
  summary.closeError = String(error);
}
console.log(JSON.stringify(summary));
if (failure) {
  console.error(`FAILED: ${failure?.message ?? failure}`);
  process.exit(1);
}
process.exit(0);
