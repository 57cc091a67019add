// The core's agent surface in Node (what the page's agent and the edge's /mcp use): a tool is
// described, gated and answered as `jp mcp` and `jp query` do it — a tool that only reads is
// never asked about, whatever the policy allows; a failure or an unanswered question is a result
// the model can read.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { agentTool, askBeforeCall, agentResult, loadJp } from '../../www/jp.js';

before(async () => {
  await loadJp(
    await WebAssembly.compile(await readFile(new URL('../../www/pkg/jp_web_bg.wasm', import.meta.url))),
    await WebAssembly.compile(await readFile(new URL('../../www/pkg/validate/jp_validate_bg.wasm', import.meta.url))),
  );
});

const WRITES = { writes: true, destructive: true, network: false, commands: false };
const READS = { writes: false, destructive: false, network: false, commands: false };
const schema = { type: 'object', properties: { path: { type: 'string' } } };

test('a tool that only reads is annotated read-only and run without asking, even under a policy that writes', () => {
  const read = { name: 'fs_read_file', summary: 'Read a file.', description: '', inputSchema: schema };
  assert.deepEqual(agentTool(read, WRITES), {
    name: 'fs_read_file',
    description: 'Read a file.',
    inputSchema: schema,
    annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  });
  assert.equal(askBeforeCall(read, WRITES, { path: 'a' }), false);
});

test('a tool that may write is annotated so and asked about; under a read-only policy it is not', () => {
  const create = { name: 'fs_create_file', summary: 'Create a file.', description: 'At length.', inputSchema: schema };
  const tool = agentTool(create, WRITES);
  assert.equal(tool.description, 'Create a file.\n\nAt length.');
  assert.deepEqual(tool.annotations, { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false });
  assert.equal(askBeforeCall(create, WRITES, { path: 'a' }), true);
  assert.equal(askBeforeCall(create, READS, { path: 'a' }), false, 'the policy refuses its writes anyway');
  assert.equal(askBeforeCall(create, { ...READS, commands: true }, {}), true, 'running programs is asked about');
});

test('outcomes become MCP results: text, failures and unanswered questions as isError', () => {
  assert.deepEqual(agentResult('t', { tag: 'success', val: 'done' }), { content: [{ type: 'text', text: 'done' }], isError: false });
  assert.deepEqual(agentResult('t', { tag: 'error', val: { message: 'no such file', trace: [], transient: false } }), {
    content: [{ type: 'text', text: 'no such file' }],
    isError: true,
  });
  const asked = agentResult('t', { tag: 'needs-input', val: { id: 'q', text: 'which one?' } });
  assert.equal(asked.isError, true);
  assert.match(asked.content[0].text, /^tool 't' asks: which one\? — nobody answered/);
  assert.throws(() => agentResult('t', { tag: 'bogus', val: 1 }), /success, error, needs-input or handle/);
});
