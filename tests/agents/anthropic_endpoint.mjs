// A scripted Anthropic Messages endpoint on 127.0.0.1 for driving a real agent CLI (Claude Code)
// offline: `PLAN` is the tool calls the "model" makes, one per round, once it is offered jp's
// tools (`mcp__jp__*`); after the last it answers "done". Every request is appended to `LOG` as
// one JSON line `{url, tools, messages}` for the test to read. Prints `listening PORT` once ready.
import http from 'node:http';
import { appendFileSync } from 'node:fs';

const log = process.env.LOG;
const plan = JSON.parse(process.env.PLAN ?? '[]');
let step = 0;

function sse(res, block, stop) {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const send = (event, data) => res.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`);
  send('message_start', {
    message: { id: `msg_${step}`, type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } },
  });
  if (block.type === 'text') {
    send('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
    send('content_block_delta', { index: 0, delta: { type: 'text_delta', text: block.text } });
  } else {
    send('content_block_start', { index: 0, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } });
    send('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) } });
  }
  send('content_block_stop', { index: 0 });
  send('message_delta', { delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 5 } });
  send('message_stop', {});
  res.end();
}

const server = http.createServer((req, res) => {
  let body = '';
  req.on('data', (d) => { body += d; });
  req.on('end', () => {
    let request = {};
    try { request = JSON.parse(body); } catch { /* not JSON: logged as empty */ }
    const tools = (request.tools ?? []).map((t) => t.name);
    if (log) appendFileSync(log, `${JSON.stringify({ url: req.url, tools, messages: request.messages ?? [] })}\n`);
    if (!req.url.startsWith('/v1/messages') || req.url.includes('count_tokens')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ input_tokens: 10 }));
    }
    const last = request.messages?.at(-1);
    const answered = Array.isArray(last?.content) && last.content.some((c) => c.type === 'tool_result');
    if (tools.some((n) => n.startsWith('mcp__jp__')) && step < plan.length && (step === 0 || answered)) {
      const call = plan[step++];
      return sse(res, { type: 'tool_use', id: `toolu_${step}`, name: call.name, input: call.input }, 'tool_use');
    }
    if (request.stream) return sse(res, { type: 'text', text: 'done' }, 'end_turn');
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({
      id: 'msg_plain', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5',
      content: [{ type: 'text', text: 'done' }], stop_reason: 'end_turn', usage: { input_tokens: 1, output_tokens: 1 },
    }));
  });
});
server.listen(0, '127.0.0.1', () => console.log(`listening ${server.address().port}`));
