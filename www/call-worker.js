// One component call in a Worker (bundled by the build into call-worker.bundle.js, since a
// module worker gets no import map): the page's Host sends the project's files, the policy and
// the call; the decisions come back as they happen, then the outcome and the tool's changes,
// which the page commits. The page terminates the Worker at the deadline or on cancel, so a
// runaway component never blocks the page.
import { Host, loadJp } from './jp.js';

self.onmessage = async ({ data }) => {
  const { jpUrl, component, policy, ceiling = null, files, tool, args, limits } = data;
  try {
    await loadJp(new URL(jpUrl));
    const host = await Host.create({ policy, ceiling, limits });
    for (const [path, bytes] of Object.entries(files)) await host.writeFile(path, bytes);
    host.onEvent((event) => self.postMessage({ event }));
    await host.registerComponent(component.name, new URL(component.moduleUrl), new URL(component.coresUrl), component.tools);
    const { changed, ...outcome } = await host.callTool(tool, args);
    const present = new Set(await host.listFiles());
    const changes = {};
    for (const path of changed) changes[path] = present.has(path) ? await host.readFileBytes(path) : null;
    self.postMessage({ done: { outcome, changes } });
  } catch (e) {
    self.postMessage({ failed: String(e?.message ?? e) });
  }
};
