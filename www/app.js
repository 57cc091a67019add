// The playground: files in IndexedDB, the fs tools as a jco component, the policy editor and a
// live log of every host request with its decision. For automation, `window.jpHost` offers
// writeFile, readFile, listFiles, listTools, callTool and setPolicy; `body.dataset.ready` is
// "true" once everything is loaded. `?db=NAME` picks the database (default: jp-playground).
import { Host } from './jp.js';
import { FAULT_TOOLS } from './fault-tools.js';

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const DEFAULT_POLICY = `# Empty: workspace read-write, no network, no processes.
# RFD 076 shape, e.g. a read-only workspace:
# [access]
# filesystem = [{ path = ".", allow = ["read"] }]
`;

async function main() {
  const policyText = localStorage.getItem('jp-policy') ?? DEFAULT_POLICY;
  // Each call runs in a Worker: a runaway component is stopped at its deadline and the page
  // stays responsive meanwhile.
  const host = await Host.create({
    db: params.get('db') ?? 'jp-playground', policy: policyText,
    worker: new URL('./call-worker.bundle.js', import.meta.url), limits: { deadlineMs: Number(params.get('deadline') ?? 30_000) },
  });
  await host.registerComponent('fs', new URL('./components/fs/fs.js', import.meta.url), new URL('./components/fs/', import.meta.url));
  if (params.has('faults')) {
    // Misbehaving tools (endless loop, memory bomb) for trying the limits: ?faults
    await host.registerComponent('faults', new URL('./components/faults/faults.js', import.meta.url),
      new URL('./components/faults/', import.meta.url), FAULT_TOOLS);
  }

  host.onEvent((e) => {
    const li = document.createElement('li');
    li.className = e.allowed ? 'allow' : e.decision;
    li.textContent = `${e.allowed ? 'allow' : e.decision === 'ask' ? 'ask→deny' : 'deny'} ${e.tool} ${e.method} ${e.target} — ${e.reason}`;
    $('log').append(li);
    li.scrollIntoView({ block: 'nearest' });
  });

  async function refreshFiles() {
    const list = $('files');
    list.replaceChildren();
    for (const path of await host.listFiles()) {
      const li = document.createElement('li');
      li.textContent = path;
      li.onclick = async () => {
        $('file-path').value = path;
        $('file-content').value = await host.readFile(path);
      };
      list.append(li);
    }
  }

  $('file-form').onsubmit = async (ev) => {
    ev.preventDefault();
    await host.writeFile($('file-path').value, $('file-content').value);
    await refreshFiles();
  };
  $('file-delete').onclick = async () => {
    try { await host.deleteFile($('file-path').value); } catch (e) { alert(e.message ?? e); }
    await refreshFiles();
  };

  const tools = host.listTools();
  for (const t of tools) $('tool').append(new Option(`${t.name} — ${t.summary}`, t.name));
  const showSchema = () => {
    const t = tools.find((x) => x.name === $('tool').value);
    $('schema').textContent = JSON.stringify(t?.parameters ?? {}, null, 2);
  };
  $('tool').onchange = showSchema;
  showSchema();

  async function callTool(name, args) {
    const outcome = await host.callTool(name, args);
    $('result').textContent = outcome.tag === 'success'
      ? outcome.val
      : `${outcome.tag}: ${outcome.val.message ?? outcome.val.text ?? JSON.stringify(outcome.val)}`;
    if (outcome.changed.length) await refreshFiles();
    return outcome;
  }
  $('call').onclick = async () => {
    let args;
    try { args = JSON.parse($('args').value || '{}'); } catch (e) {
      $('result').textContent = `the arguments are not valid JSON: ${e.message}`;
      return;
    }
    await callTool($('tool').value, args);
  };

  function setPolicy(text) {
    host.setPolicy(text);
    localStorage.setItem('jp-policy', text);
    $('policy').value = text;
    $('policy-summary').textContent = host.policySummary();
  }
  $('policy').value = policyText;
  $('policy-summary').textContent = host.policySummary();
  $('policy-apply').onclick = () => {
    try { setPolicy($('policy').value); } catch (e) { $('policy-summary').textContent = e.message ?? String(e); }
  };

  await refreshFiles();
  window.jpHost = {
    writeFile: async (path, text) => { await host.writeFile(path, text); await refreshFiles(); },
    readFile: (path) => host.readFile(path),
    listFiles: () => host.listFiles(),
    listTools: async () => tools.map(({ name, summary, parameters }) => ({ name, summary, parameters })),
    callTool,
    setPolicy: async (text) => setPolicy(text),
  };
  $('status').textContent = `ready — ${tools.length} tools`;
  document.body.dataset.ready = 'true';
}

main().catch((e) => {
  $('status').textContent = `failed to start: ${e.message ?? e}`;
  console.error(e);
});
