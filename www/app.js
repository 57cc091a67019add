// The playground: files in IndexedDB, the fs tools as a jco component, the user's components the
// build served (`npm run build -- --component PATH.wasm`, listed in components/served.json), and
// any component the user loads from a .wasm file; a call form generated from each tool's schema, the policy
// editor, the secrets the policy names, a live log of every host request with its decision, a
// tool's questions mid-call, and the agent panel (agent-panel.js). For automation,
// `window.jpHost` offers writeFile, readFile, listFiles, listTools, callTool, setPolicy,
// agentSend, handles(owner) (an owner's live handles: the agent panel's are `turn-<n>`'s) and
// liveWorkers() (how many handle Workers run); `body.dataset.ready` is "true" once everything
// is loaded. `?db=NAME` picks the database (default: jp-playground); `?calc` adds the stateful
// calc, `?fetch`, `?media` and `?faults` their examples. A database's first open writes the
// sample project (sample.js) into it.
import { Host, loadValidator, resultText, shownReason, shownText, suggestPolicy } from './jp.js';
import { FAULT_TOOLS } from './fault-tools.js';
import { KNOWLEDGE_BASE } from './subjects.js';
import { schemaForm } from './schema-form.js';
import { agentPanel } from './agent-panel.js';
import { askQuestion } from './questions.js';
import { seedSample } from './sample.js';

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const SECRETS = 'jp-secrets';
const DEFAULT_POLICY = `# Empty: workspace read-write, no network, no processes.
# The [access] table of .jp/config.toml, e.g. a read-only workspace:
# [access]
# filesystem = [{ path = ".", allow = ["read"] }]
`;

async function main() {
  const policyText = localStorage.getItem('jp-policy') ?? DEFAULT_POLICY;
  const db = params.get('db') ?? 'jp-playground';
  // Each call runs in a Worker: a runaway component is stopped at its deadline and the page
  // stays responsive meanwhile.
  const host = await Host.create({
    db, policy: policyText,
    worker: new URL('./call-worker.bundle.js', import.meta.url), limits: { deadlineMs: Number(params.get('deadline') ?? 30_000) },
  });
  await host.registerComponent('fs', new URL('./components/fs/fs.js', import.meta.url), new URL('./components/fs/', import.meta.url));
  // seed 002's `learn`: the topics of the project's knowledge base (.jp/kb/<topic>/<subject>.md).
  await host.registerComponent('learn', new URL('./components/learn/learn.js', import.meta.url), new URL('./components/learn/', import.meta.url), null, { knowledgeBase: KNOWLEDGE_BASE });
  if (params.has('media')) {
    // A component answering with content blocks (an image, audio, a resource): ?media
    await host.registerComponent('media', new URL('./components/media/media.js', import.meta.url), new URL('./components/media/', import.meta.url));
  }
  if (params.has('faults')) {
    // Misbehaving tools (endless loop, memory bomb) for trying the limits: ?faults
    await host.registerComponent('faults', new URL('./components/faults/faults.js', import.meta.url),
      new URL('./components/faults/', import.meta.url), FAULT_TOOLS);
  }
  if (params.has('fetch')) {
    // The example of issue 34: api_get sends the API_TOKEN secret, read_env asks first: ?fetch
    await host.registerComponent('fetch', new URL('./components/fetch/fetch.js', import.meta.url), new URL('./components/fetch/', import.meta.url));
  }
  if (params.has('calc')) {
    // A stateful tool (RFD 009): the agent spawns a calculator session and keeps talking to it: ?calc
    await host.registerComponent('calc', new URL('./components/calc/calc.js', import.meta.url), new URL('./components/calc/', import.meta.url));
  }
  // The user's components the build served, as every engine serves them (each lists its tools).
  const served = await fetch(new URL('./components/served.json', import.meta.url));
  if (!served.ok) throw new Error(`components/served.json: ${served.status}; run \`npm run build\``);
  for (const name of await served.json()) {
    await host.registerComponent(name, new URL(`./components/${name}/${name}.js`, import.meta.url), new URL(`./components/${name}/`, import.meta.url));
  }

  // A question of a call made from the tool form (or `jpHost.callTool`), with `jp tool call`'s
  // three answers; the agent panel asks its calls' questions in the chat instead.
  host.setInquirer((question) => askQuestion(question, [
    ['Allow once', true, 'allow-once'],
    ['Allow for the rest of this call', 'all', 'allow-call', 'every further question of this call is allowed without asking'],
    ['Deny', false, 'deny'],
  ], (card) => $('tool-questions').append(card)));

  host.onEvent((e) => {
    const li = document.createElement('li');
    li.className = e.allowed ? 'allow' : e.decision;
    // The tool's words escaped as jp shows them everywhere (line breaks, bidi, invisible).
    li.textContent = `${e.allowed ? 'allow' : e.decision === 'ask' ? 'ask→deny' : 'deny'} ${shownText(e.tool)} ${e.method} ${shownText(e.target)} — ${shownReason(e.target, e.reason)}`;
    if (!e.allowed) li.append(' ', offer(e, li));
    $('log').append(li);
    li.scrollIntoView({ block: 'nearest' });
  });

  /**
   * Learning from the log (issue 38, as `jp policy suggest`): "the tool was refused X; allow it
   * for this project?" — the policy in force widened by just what that request needed, shown
   * whole, and applied only when the user accepts it.
   */
  function offer(e, li) {
    const button = document.createElement('button');
    button.className = 'learn';
    button.textContent = 'Allow for this project?';
    button.onclick = async () => {
      button.disabled = true;
      const exists = (await host.listFiles()).includes(e.target);
      const proposal = suggestPolicy(localStorage.getItem('jp-policy') ?? policyText, e.method, e.target, exists);
      const card = document.createElement('li');
      card.className = 'proposal';
      if (!proposal) {
        card.textContent = 'No rule can allow this: it is jp\'s own directory, or not a file, URL or program request.';
        li.after(card);
        return;
      }
      const what = document.createElement('p');
      what.textContent = `${shownText(e.tool)} was refused ${e.method} ${shownText(e.target)}. This policy allows it (${proposal.added.join('; ')}):`;
      const text = document.createElement('pre');
      text.textContent = proposal.text;
      const accept = document.createElement('button');
      accept.className = 'accept';
      accept.textContent = 'Accept this policy';
      accept.onclick = () => { setPolicy(proposal.text); card.remove(); };
      const dismiss = document.createElement('button');
      dismiss.textContent = 'Dismiss';
      dismiss.onclick = () => { card.remove(); button.disabled = false; };
      card.append(what, text, accept, ' ', dismiss);
      li.after(card);
    };
    return button;
  }

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

  let tools = [];
  let form = null;
  const showTool = () => {
    const t = tools.find((x) => x.name === $('tool').value);
    $('tool-description').textContent = t?.description || t?.summary || '';
    $('schema').textContent = JSON.stringify(t?.inputSchema ?? {}, null, 2);
    form = schemaForm($('args-form'), t?.inputSchema ?? {});
  };
  /** Fill the tool list from the host's tools; `select` names the one to show. */
  function listTools(select = $('tool').value) {
    tools = host.listTools();
    $('tool').replaceChildren(...tools.map((t) => new Option(`${t.name} — ${t.summary}`, t.name)));
    if (tools.some((t) => t.name === select)) $('tool').value = select;
    showTool();
  }
  $('tool').onchange = showTool;
  listTools();

  // A component of the user's own (a WASI p2 component built against wit/tool): transpiled in
  // this page by jco and run only in a Worker (it has no loop checks of the build's), with this
  // page's policy, files and questions. Kept in memory: after a reload, load it again.
  $('component-file').onchange = async () => {
    const file = $('component-file').files[0];
    if (!file) return;
    const status = $('component-status');
    const name = file.name.replace(/\.wasm$/i, '').replace(/[^A-Za-z0-9_-]/g, '_') || 'component';
    status.className = 'muted';
    status.textContent = `loading ${file.name}…`;
    const before = new Set(host.listTools().map((t) => t.name));
    try {
      const names = await host.registerComponent(name, new Uint8Array(await file.arrayBuffer()));
      const replaced = names.filter((n) => before.has(n));
      status.className = 'ok';
      status.textContent = `${file.name}: ${names.join(', ')}${replaced.length ? ` (replacing the earlier ${replaced.join(', ')})` : ''}`;
      listTools(names[0]);
    } catch (e) {
      status.className = 'error';
      status.textContent = `${file.name}: ${e?.message ?? e}`;
    } finally {
      $('component-file').value = '';
    }
  };

  function showResult(outcome) {
    const status = $('result-status');
    if (outcome.tag === 'success') {
      status.className = 'ok';
      status.textContent = outcome.changed.length ? `Done — changed: ${outcome.changed.join(', ')}` : 'Done';
      if (outcome.result) showBlocks($('result'), outcome.result);
      else $('result').textContent = outcome.val;
    } else {
      status.className = 'error';
      status.textContent = outcome.tag === 'error' ? 'Error' : 'The tool asks a question';
      $('result').textContent = outcome.val.message ?? outcome.val.text ?? JSON.stringify(outcome.val);
    }
  }

  /**
   * A component's content blocks (jp:tool/content): text as text, a raster image as an image and
   * audio as a player — from data: URLs set as properties, never as markup — and every other
   * block as the one line jp prints for it.
   */
  function showBlocks(into, result) {
    into.replaceChildren();
    for (const block of result.content) {
      const line = document.createElement('div');
      if (block.type === 'image' && /^image\/(png|jpeg|gif|webp)$/.test(block.mimeType)) {
        const img = document.createElement('img');
        img.src = `data:${block.mimeType};base64,${block.data}`;
        img.alt = resultText({ content: [block] });
        img.className = 'block-image';
        line.append(img);
      } else if (block.type === 'audio' && /^audio\/[a-z0-9.+-]+$/.test(block.mimeType)) {
        const audio = document.createElement('audio');
        audio.controls = true;
        audio.src = `data:${block.mimeType};base64,${block.data}`;
        line.append(audio);
      } else {
        line.textContent = resultText({ content: [block] });
      }
      into.append(line);
    }
    if (result.structuredContent !== undefined) {
      const structured = document.createElement('div');
      structured.textContent = JSON.stringify(result.structuredContent, null, 2);
      into.append(structured);
    }
  }

  async function callTool(name, args) {
    // The questions of earlier calls, answered, make way.
    for (const card of $('tool-questions').querySelectorAll('.inquiry.answered')) card.remove();
    const outcome = await host.callTool(name, args);
    showResult(outcome);
    if (outcome.changed.length) await refreshFiles();
    return outcome;
  }
  $('call').onclick = async () => {
    let args;
    if ($('raw').open) {
      try { args = JSON.parse($('args').value || '{}'); } catch (e) {
        $('result-status').className = 'error';
        $('result-status').textContent = 'Error';
        $('result').textContent = `the arguments are not valid JSON: ${e.message}`;
        return;
      }
    } else {
      const read = form.read();
      if (read.error) {
        $('result-status').className = 'error';
        $('result-status').textContent = 'Error';
        $('result').textContent = `${read.error}: fill it in and call again`;
        return;
      }
      args = read.args;
    }
    await callTool($('tool').value, args);
  };

  /**
   * The secrets the policy lets `${VAR}` headers use (`access.secrets`, `network.envs`): one field each, kept
   * like the agent's API key in this tab's session storage only (never in IndexedDB or the
   * project) and given to the host, which fills them into a tool's request and scrubs them from
   * what the tool reads back; a tool never sees them. Shown again whenever the policy changes.
   */
  const secrets = JSON.parse(sessionStorage.getItem(SECRETS) ?? '{}');
  function showSecrets() {
    const names = host.secretNames();
    const fields = $('secrets');
    fields.replaceChildren();
    if (!names.length) {
      const none = document.createElement('p');
      none.className = 'muted';
      none.textContent = 'The policy names none: a tool may send a secret in a header as ${NAME} to the origins its access table binds NAME to (secrets = { NAME = ["https://api.example.com"] }).';
      fields.append(none);
    }
    for (const name of names) {
      const label = document.createElement('label');
      label.className = 'secret';
      label.append(Object.assign(document.createElement('span'), { textContent: name }));
      const input = Object.assign(document.createElement('input'), { type: 'password', autocomplete: 'off', value: secrets[name] ?? '' });
      input.dataset.secret = name;
      input.placeholder = `value of \${${name}}`;
      input.oninput = () => {
        secrets[name] = input.value;
        sessionStorage.setItem(SECRETS, JSON.stringify(secrets));
        host.setSecrets(secrets);
      };
      label.append(input);
      fields.append(label);
    }
    host.setSecrets(secrets);
  }

  function setPolicy(text) {
    host.setPolicy(text);
    localStorage.setItem('jp-policy', text);
    $('policy').value = text;
    $('policy-summary').textContent = host.policySummary();
    showSecrets();
  }
  $('policy').value = policyText;
  $('policy-summary').textContent = host.policySummary();
  showSecrets();
  $('policy-apply').onclick = () => {
    try { setPolicy($('policy').value); } catch (e) { $('policy-summary').textContent = e.message ?? String(e); }
  };

  // A first visit opens on a small sample project, not an empty list.
  await seedSample(host, db);
  await refreshFiles();
  const agent = agentPanel($, host, { onFilesChanged: refreshFiles });
  window.jpHost = {
    writeFile: async (path, text) => { await host.writeFile(path, text); await refreshFiles(); },
    readFile: (path) => host.readFile(path),
    listFiles: () => host.listFiles(),
    listTools: async () => tools.map(({ name, summary, parameters }) => ({ name, summary, parameters })),
    callTool,
    setPolicy: async (text) => setPolicy(text),
    agentSend: (text) => agent.send(text),
    handles: (owner) => host.handles(owner),
    liveWorkers: () => host.liveWorkers.size,
    // The Host itself (www/jp.js), for the console and the tests.
    host,
  };
  $('status').textContent = `ready — ${tools.length} tools`;
  // When it got ready, in ms from the navigation's start (the page-load bench reads it).
  document.body.dataset.readyMs = String(Math.round(performance.now()));
  document.body.dataset.ready = 'true';
  // The argument validator, which the first screen does not need, loads now; a call awaits it.
  loadValidator().catch((e) => console.error('the argument validator did not load:', e));
}

main().catch((e) => {
  $('status').textContent = `failed to start: ${e.message ?? e}`;
  console.error(e);
});
