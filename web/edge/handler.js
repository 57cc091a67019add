// An edge function hosting sandboxed tools: `(Request) → Response`, one fresh host per request.
// The body is `{ tool, args, files, policy? }` (files: path → text); the response is
// `{ outcome, changed, files }` with the files after the call. No IndexedDB here: the project
// lives in memory for the request, and the policy is enforced by the same core as everywhere.
import { Host } from '../../www/jp.js';

const componentsDir = new URL('../../www/components/', import.meta.url);
let fsModule;

export async function handle(request) {
  let body;
  try {
    body = await request.json();
  } catch (e) {
    return json(400, { error: `the request body must be JSON {tool, args, files}: ${e.message}` });
  }
  const { tool, args = {}, files = {}, policy = '' } = body ?? {};
  if (typeof tool !== 'string') return json(400, { error: 'missing "tool" (a tool name, e.g. "fs_grep_files")' });
  let host;
  try {
    host = await Host.create({ db: null, policy });
  } catch (e) {
    return json(400, { error: String(e?.message ?? e) });
  }
  for (const [path, text] of Object.entries(files)) await host.writeFile(path, text);
  fsModule ??= await import(new URL('fs/fs.js', componentsDir));
  await host.registerComponent('fs', fsModule, new URL('fs/', componentsDir));
  const events = [];
  host.onEvent((e) => events.push(e));
  if (!host.listTools().some((t) => t.name === tool)) {
    return json(404, { error: `no tool '${tool}'; available: ${host.listTools().map((t) => t.name).join(', ')}` });
  }
  const { changed, ...outcome } = await host.callTool(tool, args);
  const after = {};
  for (const path of await host.listFiles()) after[path] = await host.readFile(path);
  return json(200, { outcome, changed, files: after, events });
}

function json(status, value) {
  return new Response(JSON.stringify(value), { status, headers: { 'content-type': 'application/json' } });
}
