// One component call in a Worker (bundled by the build into call-worker.bundle.js, since a
// module worker gets no import map): the page's Host sends the project's files, the policy and
// the call; the decisions come back as they happen, then the outcome and the tool's changes,
// which the page commits. The page terminates the Worker at the deadline or on cancel, so a
// runaway component never blocks the page.
import { Host, loadJp } from './jp.js';
import { transpile, DEFAULT_DEADLINE_MS } from './instance.js';
import { localRunner } from './live.js';

// Questions go to the page (which asks the person) and wait for its answer.
let asked = 0;
const answers = new Map();
const ask = (question, tool = false) => new Promise((resolve) => {
  const id = ++asked;
  answers.set(id, resolve);
  const { signal: _signal, ...plain } = question;
  self.postMessage({ ask: { id, question: plain, tool } });
});

/** The host's files made exactly `files` (path → bytes): the project as the page has it now. */
async function syncFiles(host, files) {
  for (const path of await host.listFiles()) if (!(path in files)) await host.deleteFile(path);
  for (const [path, bytes] of Object.entries(files)) await host.writeFile(path, bytes);
}

/** What `paths` now hold in `host` (null: deleted), for the page to make again. */
async function changesOf(host, paths) {
  const present = new Set(await host.listFiles());
  const changes = {};
  for (const path of paths) changes[path] = present.has(path) ? await host.readFileBytes(path) : null;
  return changes;
}

// A live handle of a stateful component (www/live.js `workerRunner`): this Worker is its
// instance's for as long as the handle lives; the page sends each command with the project's
// files and makes the command's changes itself.
let live = null;

async function liveCommand(data) {
  let state;
  let session;
  if (data.live) {
    const { jpUrl, component, policy, ceiling = null, limits, secrets = {}, asks = false, tool, args } = data.live;
    await loadJp(new URL(jpUrl));
    const host = await Host.create({ policy, ceiling, limits, inWorker: true });
    host.setSecrets(secrets);
    if (asks) host.setInquirer(ask);
    host.onEvent((event) => self.postMessage({ event }));
    if (component.source) await host.registerComponent(component.name, { source: component.source, coreBytes: component.coreBytes }, null, component.tools);
    else await host.registerComponent(component.name, new URL(component.moduleUrl), new URL(component.coresUrl), component.tools);
    await syncFiles(host, data.files);
    const runner = localRunner(host.components.get(component.name), { deadlineMs: limits?.deadlineMs ?? DEFAULT_DEADLINE_MS, memoryMiB: limits?.memoryMiB ?? null });
    session = await host.inner.beginCall(tool, null, null);
    const spawned = await runner.spawn(session, tool, args);
    live = { host, tool, handle: spawned.handle };
    state = spawned.state;
  } else {
    await syncFiles(live.host, data.files);
    session = await live.host.inner.beginCall(live.tool, null, null);
    const { method, input } = data.command;
    state = await (method === 'apply' ? live.handle.apply(session, input) : live.handle.fetch(session));
  }
  const failed = state?.tag === 'stopped' && state.val?.tag === 'err';
  const changed = await session.finish(!failed);
  self.postMessage({ state, changes: await changesOf(live?.host ?? null, changed) });
}

self.onmessage = async ({ data }) => {
  if (data.answer) {
    answers.get(data.answer.id)?.(data.answer.value);
    answers.delete(data.answer.id);
    return;
  }
  if (data.live || data.command) {
    try {
      await liveCommand(data);
    } catch (e) {
      self.postMessage({ failed: String(e?.message ?? e) });
    }
    return;
  }
  if (data.describe) {
    // A component given as bytes describes itself here, where the page can stop it.
    try {
      await loadJp(new URL(data.jpUrl));
      const host = await Host.create({ limits: data.limits, inWorker: true });
      const { name, bytes, tools } = data.describe;
      const { source, coreBytes } = await transpile(name, bytes);
      await host.registerComponent(name, { source, coreBytes }, null, tools);
      const described = host.listTools().map(({ component: _c, inputSchema: _s, ...t }) => t);
      self.postMessage({ described: { source, coreBytes, described } });
    } catch (e) {
      self.postMessage({ failed: String(e?.message ?? e) });
    }
    return;
  }
  const { jpUrl, component, policy, ceiling = null, files, tool, args, limits, secrets = {}, asks = false, answers: answered = false } = data;
  try {
    await loadJp(new URL(jpUrl));
    const host = await Host.create({ policy, ceiling, limits, inWorker: true });
    for (const [path, bytes] of Object.entries(files)) await host.writeFile(path, bytes);
    host.setSecrets(secrets);
    if (asks) host.setInquirer(ask);
    // A tool's own questions (`needs-input`) go to the page's answerer too.
    if (answered) host.setAnswerer((asked) => ask(asked, true));
    host.onEvent((event) => self.postMessage({ event }));
    const options = { knowledgeBase: component.knowledgeBase ?? null };
    if (component.source) await host.registerComponent(component.name, { source: component.source, coreBytes: component.coreBytes }, null, component.tools, options);
    else await host.registerComponent(component.name, new URL(component.moduleUrl), new URL(component.coresUrl), component.tools, options);
    const { changed, ...outcome } = await host.callTool(tool, args);
    self.postMessage({ done: { outcome, changes: await changesOf(host, changed) } });
  } catch (e) {
    self.postMessage({ failed: String(e?.message ?? e) });
  }
};
