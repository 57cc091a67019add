// One component call in a Worker (bundled by the build into call-worker.bundle.js, since a
// module worker gets no import map): the page's Host sends the project's files, the policy and
// the call; the decisions come back as they happen, then the outcome and the tool's changes,
// which the page commits. The page terminates the Worker at the deadline or on cancel, so a
// runaway component never blocks the page.
import { Host, loadJp } from './jp.js';
import { transpile } from './instance.js';

// Questions go to the page (which asks the person) and wait for its answer.
let asked = 0;
const answers = new Map();
const ask = (question, tool = false) => new Promise((resolve) => {
  const id = ++asked;
  answers.set(id, resolve);
  const { signal: _signal, ...plain } = question;
  self.postMessage({ ask: { id, question: plain, tool } });
});

self.onmessage = async ({ data }) => {
  if (data.answer) {
    answers.get(data.answer.id)?.(data.answer.value);
    answers.delete(data.answer.id);
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
    const present = new Set(await host.listFiles());
    const changes = {};
    for (const path of changed) changes[path] = present.has(path) ? await host.readFileBytes(path) : null;
    self.postMessage({ done: { outcome, changes } });
  } catch (e) {
    self.postMessage({ failed: String(e?.message ?? e) });
  }
};
