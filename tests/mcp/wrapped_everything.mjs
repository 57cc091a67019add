// Drives `jp mcp` wrapping the reference server `@modelcontextprotocol/server-everything`
// (pinned; started by jp under the OS sandbox) with the official npm MCP SDK, over stdio, and
// checks that the server comes through jp as it is: an image block, its progress during a long
// call, its log messages after logging/setLevel, a prompt listed and got, a resource read, a
// template listed, a completion, and an elicitation forwarded (and said to come from it).
// Usage: node wrapped_everything.mjs JP WORKSPACE. Prints `ok <check>` lines; exits non-zero on
// failure.
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

const [JP, WS] = process.argv.slice(2);
const ok = (what) => console.log(`ok ${what}`);
const P = 'everything.';

const elicited = [];
const logs = [];
let sampled = 0;
const client = new Client(
  { name: 'jp-test', version: '1.0.0' },
  { capabilities: { elicitation: {}, sampling: {} } },
);
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  elicited.push(request.params.message);
  return { action: 'accept', content: { name: 'Ada', check: true, email: 'ada@example.com' } };
});
// Declared, so that a sampling request that reached us would be seen: none may (not in `forward`).
client.setRequestHandler(CreateMessageRequestSchema, async () => {
  sampled += 1;
  return { role: 'assistant', content: { type: 'text', text: 'sampled' }, model: 'test' };
});
let logged;
const gotLog = new Promise((resolve) => (logged = resolve));
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
  logs.push(n.params);
  logged();
});
await client.connect(new StdioClientTransport({ command: JP, args: ['mcp'], cwd: WS, stderr: 'inherit' }));

const caps = client.getServerCapabilities();
for (const c of ['tools', 'prompts', 'resources', 'logging', 'completions']) assert.ok(caps[c], `capability ${c}`);
ok('capabilities: tools, prompts, resources, logging, completions');

const { tools } = await client.listTools();
const names = tools.map((t) => t.name);
for (const n of ['get-tiny-image', 'trigger-long-running-operation', 'toggle-simulated-logging', 'trigger-elicitation-request']) {
  assert.ok(names.includes(P + n), `${P + n} in ${names}`);
}
assert.ok(!names.includes(P + 'trigger-sampling-request'), 'sampling is not declared to the server by default');
ok('tools/list: the server\'s tools under its prefix');

// An image block, as the server sent it.
let r = await client.callTool({ name: P + 'get-tiny-image', arguments: {} });
const image = r.content.find((c) => c.type === 'image');
assert.ok(image && image.mimeType === 'image/png' && image.data.length > 100, JSON.stringify(r.content).slice(0, 300));
ok('an image block');

// Its progress, as this call's: increasing, then the result.
const progress = [];
r = await client.callTool(
  { name: P + 'trigger-long-running-operation', arguments: { duration: 2, steps: 4 } },
  undefined,
  { onprogress: (p) => progress.push(p), timeout: 60000 },
);
assert.ok(!r.isError && r.content[0].text.includes('Long running operation completed'), JSON.stringify(r));
assert.ok(progress.length >= 3, `progress: ${JSON.stringify(progress)}`);
for (let i = 1; i < progress.length; i++) assert.ok(progress[i].progress > progress[i - 1].progress, JSON.stringify(progress));
const last = progress[progress.length - 1];
assert.ok(last.total !== undefined && last.progress <= last.total, JSON.stringify(progress));
assert.ok(progress.some((p) => !(p.message || '').startsWith('running for')), `the server's own progress: ${JSON.stringify(progress)}`);
ok(`progress: ${progress.map((p) => `${p.progress}/${p.total ?? '-'}`).join(' ')}`);

// Its log messages, after logging/setLevel, under its name.
await client.setLoggingLevel('debug');
r = await client.callTool({ name: P + 'toggle-simulated-logging', arguments: {} });
assert.ok(!r.isError, JSON.stringify(r));
await Promise.race([gotLog, new Promise((_, no) => setTimeout(() => no(new Error('no log message within 30 s')), 30000).unref())]);
assert.equal(logs[0].logger, 'everything', JSON.stringify(logs[0]));
assert.match(String(logs[0].data), /level.message/i, 'one of the server\'s simulated messages');
await client.callTool({ name: P + 'toggle-simulated-logging', arguments: {} });
ok(`logging: ${logs[0].level} from ${logs[0].logger}`);

// A prompt, listed and got.
const { prompts } = await client.listPrompts();
assert.ok(prompts.some((p) => p.name === P + 'simple-prompt'), JSON.stringify(prompts.map((p) => p.name)));
const prompt = await client.getPrompt({ name: P + 'args-prompt', arguments: { city: 'Lyon' } });
assert.match(JSON.stringify(prompt.messages), /Lyon/);
ok('prompts: listed and got');

// A resource read, a template listed.
const { resourceTemplates } = await client.listResourceTemplates();
const template = resourceTemplates.find((t) => t.uriTemplate.includes('/dynamic/text/'));
assert.ok(template, JSON.stringify(resourceTemplates));
const uri = template.uriTemplate.replace('{resourceId}', '1');
const read = await client.readResource({ uri });
assert.ok(read.contents[0].uri === uri && read.contents[0].text, JSON.stringify(read));
const { resources } = await client.listResources();
assert.ok(resources.length > 0);
const doc = await client.readResource({ uri: resources[0].uri });
assert.ok(doc.contents.length > 0);
ok(`resources: template ${template.uriTemplate}, read ${uri} and ${resources[0].uri}`);

// A completion of the prompt's argument, under its prefixed name.
const completion = await client.complete({
  ref: { type: 'ref/prompt', name: P + 'completable-prompt' },
  argument: { name: 'department', value: 'E' },
});
assert.deepEqual(completion.completion.values, ['Engineering']);
await assert.rejects(
  client.complete({ ref: { type: 'ref/prompt', name: 'nobody.prompt' }, argument: { name: 'x', value: '' } }),
  /no prompt 'nobody.prompt'/,
);
ok('completion: Engineering; an unknown prompt is a clear error');

// An elicitation of the server, forwarded and said to come from it.
r = await client.callTool({ name: P + 'trigger-elicitation-request', arguments: {} });
assert.equal(elicited.length, 1, JSON.stringify(r));
assert.ok(elicited[0].startsWith("MCP server 'everything' asks: "), elicited[0]);
assert.match(JSON.stringify(r.content), /Ada/);
ok(`elicitation: "${elicited[0]}"`);

assert.equal(sampled, 0);
await client.close();
ok('closed');
