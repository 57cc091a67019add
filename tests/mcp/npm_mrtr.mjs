// Drives `jp mcp` over stdio with the official TypeScript SDK v2 client
// (@modelcontextprotocol/client, pinned in package.json) on MCP 2026-07-28 (`server/discover`, no
// `initialize`) — the coverage of tests/mcp/python_mrtr.py, with the SDK's own input-required
// driver (`inputRequired.autoFulfill`, its default): jp's questions arrive as `input_required`
// results (SEP-2322) and the SDK answers them through the registered `elicitation/create`
// handler, then retries the call. Checks:
//   - a `.env` read asks the elicitation handler exactly once, naming the tool and `.env`;
//     "allow once" reads the file, "deny" is `isError: true` without the secret;
//   - a stdio tool's image block and `structuredContent` arrive typed;
//   - a wrong argument type is a tool result with `isError: true` naming the argument (SEP-1303),
//     not a JSON-RPC error.
// Usage: node npm_mrtr.mjs JP WORKSPACE (the workspace: a `.env`, and an approved
// `.jp/config.toml` with the stdio tool `picture`). Prints `ok <check>` lines; exits non-zero with
// `FAILED: <reason>` on the first failed expectation.
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const [JP, WS] = process.argv.slice(2);
if (!JP || !WS) {
  console.error('usage: node npm_mrtr.mjs JP WORKSPACE');
  process.exit(2);
}
const PROTOCOL = '2026-07-28';
const SECRET = 'hunter2';

const ok = (what) => console.log(`ok ${what}`);
const texts = (r) => (r.content ?? []).filter((c) => c.type === 'text').map((c) => c.text);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const withTimeout = (promise, ms, what) =>
  Promise.race([promise, sleep(ms).then(() => Promise.reject(new Error(`${what}: no answer within ${ms} ms`)))]);

// The questions the SDK's driver handed to the application, and the answers queued for them.
const asked = [];
const answers = [];
const sdkErrors = [];

const client = new Client(
  { name: 'jp-npm-mrtr-test', version: '1.0.0' },
  {
    capabilities: { elicitation: { form: {} } },
    versionNegotiation: { mode: { pin: PROTOCOL } },
    // The default, spelled out: the SDK fulfils `input_required` results itself.
    inputRequired: { autoFulfill: true, maxRounds: 4 },
  },
);
client.onerror = (error) => sdkErrors.push(String(error?.stack ?? error));
client.setRequestHandler('elicitation/create', async (request) => {
  asked.push(request.params);
  const decision = answers.shift();
  if (decision === undefined) throw new Error(`unexpected question: ${request.params.message}`);
  return { action: 'accept', content: { decision } };
});

const transport = new StdioClientTransport({ command: JP, args: ['mcp'], cwd: WS, stderr: 'inherit' });
// A tap on the wire, below the SDK: the `input_required` results jp sends, the retries the SDK's
// driver sends back, and any server-to-client request (2026-07-28 has none).
const wire = { sent: [], inputRequired: [], retries: [], serverRequests: [] };
const send = transport.send.bind(transport);
transport.send = (message, options) => {
  if ('method' in message) wire.sent.push(message.method);
  if (message.method === 'tools/call' && (message.params?.inputResponses || message.params?.requestState)) {
    wire.retries.push(message.params);
  }
  return send(message, options);
};
/** After connect (the Client installs its own `onmessage` then). */
function tapReceive() {
  const receive = transport.onmessage;
  transport.onmessage = (message, extra) => {
    if ('method' in message && 'id' in message) wire.serverRequests.push(message.method);
    if (message.result?.resultType === 'input_required') wire.inputRequired.push(message.result);
    receive?.(message, extra);
  };
}

async function readEnv(decision) {
  const before = asked.length;
  const [results, retries] = [wire.inputRequired.length, wire.retries.length];
  answers.push(decision);
  const r = await withTimeout(client.callTool({ name: 'fs_read_file', arguments: { path: '.env' } }), 30_000, `.env read (${decision})`);
  const questions = asked.slice(before);
  assert.equal(questions.length, 1, `${decision}: the handler was asked ${questions.length} times: ${JSON.stringify(questions)}`);
  assert.equal(answers.length, 0, `${decision}: an answer was never asked for`);
  const [q] = questions;
  assert.ok(
    typeof q.message === 'string' && q.message.includes('fs_read_file') && q.message.includes('.env'),
    `${decision}: the question does not name fs_read_file and .env: ${q.message}`,
  );
  assert.ok(q.mode === undefined || q.mode === 'form', `${decision}: not a form elicitation: ${JSON.stringify(q)}`);
  // On the wire: one `input_required` result carrying the elicitation and a requestState, and one
  // retry of the call echoing that state with the answer.
  const shown = wire.inputRequired.slice(results);
  assert.equal(shown.length, 1, `${decision}: input_required results on the wire: ${JSON.stringify(shown)}`);
  const [ir] = shown;
  const requests = Object.values(ir.inputRequests ?? {});
  assert.ok(requests.length === 1 && requests[0].method === 'elicitation/create', `${decision}: inputRequests: ${JSON.stringify(ir)}`);
  const sent = wire.retries.slice(retries);
  assert.equal(sent.length, 1, `${decision}: retries on the wire: ${JSON.stringify(sent)}`);
  assert.equal(sent[0].requestState, ir.requestState, `${decision}: the retry does not echo the requestState`);
  assert.deepEqual(
    Object.values(sent[0].inputResponses ?? {}).map((a) => a.content?.decision ?? a.result?.content?.decision),
    [decision],
    `${decision}: the retry's inputResponses: ${JSON.stringify(sent[0].inputResponses)}`,
  );
  return { r, q };
}

async function main() {
  await withTimeout(client.connect(transport), 30_000, 'connect');
  tapReceive();
  assert.equal(client.getProtocolEra(), 'modern', `the SDK did not negotiate the modern era (${client.getNegotiatedProtocolVersion()})`);
  assert.equal(client.getNegotiatedProtocolVersion(), PROTOCOL);
  // (The SDK probes with `server/discover` on a sibling process of its own and then adopts the
  // result: this session's pipe never carries a handshake, and certainly no `initialize`.)
  assert.ok(!wire.sent.includes('initialize'), `the SDK sent initialize: ${wire.sent}`);
  ok(`speaks ${PROTOCOL}`);

  const tools = new Map((await client.listTools()).tools.map((t) => [t.name, t]));
  for (const name of ['fs_read_file', 'picture']) assert.ok(tools.has(name), `${name} not listed: ${[...tools.keys()]}`);
  ok('lists tools');

  // a) The policy asks about `.env`: one question through input_required, answered by the handler.
  {
    const { r, q } = await readEnv('allow once');
    assert.ok(r.isError !== true, `allow once: ${JSON.stringify(r)}`);
    assert.deepEqual(texts(r), [`TOKEN=${SECRET}\n`], `allow once: ${JSON.stringify(r)}`);
    const choices = q.requestedSchema?.properties?.decision?.enum ?? [];
    assert.ok(choices.includes('allow once') && choices.includes('deny'), `the question's choices: ${JSON.stringify(q.requestedSchema)}`);
    ok('asked once through input_required; allow once reads .env');
  }
  {
    const { r } = await readEnv('deny');
    assert.equal(r.isError, true, `deny: ${JSON.stringify(r)}`);
    assert.ok(!JSON.stringify(r).includes(SECRET), `deny leaks the secret: ${JSON.stringify(r)}`);
    ok('deny is a tool error and keeps .env from the model');
  }

  // b) Typed content blocks from a stdio tool's `{"content": [...], "structuredContent": ...}`.
  {
    const r = await withTimeout(client.callTool({ name: 'picture', arguments: {} }), 30_000, 'picture');
    assert.ok(r.isError !== true, `picture: ${JSON.stringify(r)}`);
    assert.deepEqual(r.content.map((c) => c.type), ['text', 'image'], `picture blocks: ${JSON.stringify(r.content)}`);
    assert.equal(r.content[0].text, 'a picture');
    const image = r.content[1];
    assert.equal(image.mimeType, 'image/png', `image: ${JSON.stringify(image)}`);
    assert.ok(typeof image.data === 'string' && image.data.startsWith('iVBORw0KGgo'), `image data: ${JSON.stringify(image)}`);
    assert.ok(Buffer.from(image.data, 'base64').subarray(1, 4).toString() === 'PNG', 'the image data is not a base64 PNG');
    assert.deepEqual(r.structuredContent, { width: 1, height: 1 }, `structuredContent: ${JSON.stringify(r)}`);
    ok('an image block and structuredContent arrive typed');
  }

  // c) A wrong argument type: a tool error naming the argument (SEP-1303), not a JSON-RPC error.
  {
    const before = asked.length;
    let r;
    try {
      r = await withTimeout(client.callTool({ name: 'fs_read_file', arguments: { path: 7 } }), 30_000, 'path: 7');
    } catch (error) {
      throw new Error(`a wrong argument type became a protocol error, not a tool result: ${error?.code ?? ''} ${error?.message ?? error}`);
    }
    assert.equal(r.isError, true, `path: 7: ${JSON.stringify(r)}`);
    assert.ok(texts(r).join('\n').includes('path'), `path: 7: the error does not name the argument: ${JSON.stringify(r)}`);
    assert.equal(asked.length, before, 'path: 7 asked the user');
    ok('a wrong argument type is a tool error that names the argument');
  }

  assert.deepEqual(wire.serverRequests, [], 'jp sent server-to-client requests on 2026-07-28');
  assert.deepEqual(sdkErrors, [], `the SDK reported errors: ${sdkErrors.join('\n')}`);
}

let failure;
try {
  await main();
} catch (error) {
  failure = error;
}
try {
  await client.close();
} catch (error) {
  failure ??= error;
}
if (failure) {
  console.error(String(failure?.stack ?? failure));
  console.log(`FAILED: ${failure?.message ?? failure}`);
  process.exit(1);
}
process.exit(0);
