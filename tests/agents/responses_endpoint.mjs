// A scripted OpenAI Responses endpoint on 127.0.0.1 for driving Codex offline (`wire_api =
// "responses"`, SSE): `PLAN` is the calls the "model" makes, one per round, to tools of the MCP
// server `jp` (Codex offers a server's tools as the namespace `mcp__jp`); after the last it
// answers "done". Every request is appended to `LOG` as one JSON line `{url, tools, input}`.
// Prints `listening PORT` once ready.
import http from 'node:http';
import { appendFileSync } from 'node:fs';

const log = process.env.LOG;
const plan = JSON.parse(process.env.PLAN ?? '[]');
let step = 0;

const server = http.createServer((req, res) => {
  let body = '';
  req.on('data', (d) => { body += d; });
  req.on('end', () => {
    let request = {};
    try { request = JSON.parse(body); } catch { /* not JSON: logged as empty */ }
    const tools = request.tools ?? [];
    if (log) appendFileSync(log, `${JSON.stringify({ url: req.url, tools, input: request.input ?? [] })}\n`);
    if (!req.url.endsWith('/responses')) {
      res.writeHead(404);
      return res.end();
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const send = (data) => res.write(`event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`);
    const id = `resp_${step}`;
    send({ type: 'response.created', response: { id } });
    const offered = tools.some((t) => t.type === 'namespace' && t.name === 'mcp__jp');
    let item;
    if (offered && step < plan.length) {
      const call = plan[step++];
      item = {
        type: 'function_call', id: `fc_${step}`, call_id: `call_${step}`, namespace: 'mcp__jp',
        name: call.name, arguments: JSON.stringify(call.input), status: 'completed',
      };
    } else {
      item = { type: 'message', id: `msg_${step}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'done', annotations: [] }] };
    }
    send({ type: 'response.output_item.added', output_index: 0, item });
    send({ type: 'response.output_item.done', output_index: 0, item });
    send({ type: 'response.completed', response: { id, usage: { input_tokens: 1, input_tokens_details: null, output_tokens: 1, output_tokens_details: null, total_tokens: 2 } } });
    res.end();
  });
});
server.listen(0, '127.0.0.1', () => console.log(`listening ${server.address().port}`));
