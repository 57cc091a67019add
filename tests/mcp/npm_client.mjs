// Drives `jp mcp` with the official npm MCP SDK (@modelcontextprotocol/sdk, a pinned
// devDependency): over stdio (list, calls, a denial, elicitation accepted and declined, a stateful
// tool) and over Streamable HTTP (the token, 401 without it, a foreign Origin refused).
// Usage: node npm_client.mjs JP WORKSPACE. Prints `ok <check>` lines; exits non-zero on failure.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const [JP, WS] = process.argv.slice(2);
const ok = (what) => console.log(`ok ${what}`);
const text = (r) => r.content.filter((c) => c.type === 'text').map((c) => c.text).join('');

// --- stdio -----------------------------------------------------------------------------------
{
  const answers = [];
  const client = new Client({ name: 'jp-test', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, async () => {
    const a = answers.shift();
    return a === null ? { action: 'decline' } : { action: 'accept', content: a };
  });
  await client.connect(new StdioClientTransport({ command: JP, args: ['mcp'], cwd: WS, stderr: 'inherit' }));
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  for (const n of ['fs_read_file', 'fs_grep_files', 'fs_create_file', 'run', 'stager']) assert.ok(names.includes(n), n);
  assert.ok(tools.every((t) => t.inputSchema.type === 'object' && !t.inputSchema.oneOf));
  ok('stdio: tools/list');

  let r = await client.callTool({ name: 'fs_read_file', arguments: { path: 'notes.txt' } });
  assert.equal(text(r), 'one\ntwo\nthree\n');
  r = await client.callTool({ name: 'fs_create_file', arguments: { path: 'from-npm.txt', content: 'hi' } });
  assert.ok(!r.isError, text(r));
  ok('stdio: calls');

  answers.push(null);
  r = await client.callTool({ name: 'fs_read_file', arguments: { path: '.env' } });
  assert.ok(r.isError && text(r).includes('Access denied'), text(r));
  answers.push({ decision: 'allow for the rest of this call' });
  r = await client.callTool({ name: 'fs_read_file', arguments: { path: '.env' } });
  assert.equal(text(r), 'TOKEN=hunter2\n');
  ok('stdio: elicitation declined and accepted');

  r = await client.callTool({ name: 'stager', arguments: { action: 'spawn', path: 'notes.txt' } });
  const id = r.structuredContent.id;
  assert.equal(r.structuredContent.state, 'waiting');
  for (const input of [true, true]) await client.callTool({ name: 'stager', arguments: { action: 'apply', id, input } });
  r = await client.callTool({ name: 'stager', arguments: { action: 'apply', id, input: false } });
  assert.deepEqual(r.structuredContent, { id, state: 'stopped', result: 'Staged 2 of 3 changes.' });
  ok('stdio: a stateful tool across calls');
  await client.close();
}

// --- Streamable HTTP -------------------------------------------------------------------------
{
  const token = 'test-token-' + Math.random().toString(16).slice(2);
  const server = spawn(JP, ['mcp', '--http', '127.0.0.1:0', '--token-env', 'JP_TEST_TOKEN'], {
    cwd: WS,
    env: { ...process.env, JP_TEST_TOKEN: token },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const url = await new Promise((resolve, reject) => {
    let err = '';
    server.stderr.on('data', (d) => {
      err += d;
      const m = err.match(/at (http:\/\/127\.0\.0\.1:\d+\/mcp)/);
      if (m) resolve(m[1]);
    });
    server.on('exit', (code) => reject(new Error(`jp mcp --http exited (${code}): ${err}`)));
  });
  try {
    const client = new Client({ name: 'jp-test-http', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }));
    let r = await client.callTool({ name: 'fs_read_file', arguments: { path: 'notes.txt' } });
    assert.equal(text(r), 'one\ntwo\nthree\n');
    // This client declared no elicitation: a request that asks is denied at once, with the reason.
    r = await client.callTool({ name: 'fs_read_file', arguments: { path: '.env' } });
    assert.ok(r.isError && text(r).includes('does not support elicitation') && !text(r).includes('hunter2'), text(r));
    await client.close();
    ok('http: the npm client with the token lists and calls; without elicitation an inquiry is denied at once');

    // One that declared it is asked over HTTP, on the call's own stream.
    const asking = new Client({ name: 'jp-test-http-ask', version: '1.0.0' }, { capabilities: { elicitation: {} } });
    let asked = 0;
    asking.setRequestHandler(ElicitRequestSchema, async () => {
      asked += 1;
      return { action: 'accept', content: { decision: 'allow once' } };
    });
    await asking.connect(new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }));
    r = await asking.callTool({ name: 'fs_read_file', arguments: { path: '.env' } });
    assert.equal(text(r), 'TOKEN=hunter2\n');
    assert.equal(asked, 1);
    await asking.close();
    ok('http: elicitation over Streamable HTTP');

    const init = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '0' } } });
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    let res = await fetch(url, { method: 'POST', headers, body: init });
    assert.equal(res.status, 401);
    res = await fetch(url, { method: 'POST', headers: { ...headers, authorization: 'Bearer wrong' }, body: init });
    assert.equal(res.status, 401);
    ok('http: 401 without the token or with a wrong one');
    res = await fetch(url, { method: 'POST', headers: { ...headers, authorization: `Bearer ${token}`, origin: 'http://evil.example' }, body: init });
    assert.equal(res.status, 403);
    res = await fetch(url, { method: 'POST', headers: { ...headers, authorization: `Bearer ${token}`, origin: new URL(url).origin }, body: init });
    assert.equal(res.status, 200);
    ok('http: a foreign Origin is refused, its own accepted');
  } finally {
    server.kill('SIGTERM');
  }
}
