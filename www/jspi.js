// How every component is transpiled by jco (at build time by web/scripts/build.mjs, in the page
// by `Host.registerComponent` given a component's bytes): every `jp:host` import may wait
// (IndexedDB, fetch, a question to the person), so with JSPI the component's stack is suspended
// while the host's promise settles, and its `run` exports return promises
// (`WebAssembly.Suspending` / `WebAssembly.promising`, jco's async mode).

/** The `jp:host` functions a component waits for. */
export const HOST_IMPORTS = [
  ...['read', 'write', 'exists', 'list-dir', 'metadata', 'delete', 'rename', 'grep'].map((f) => `jp:host/filesystem@0.1.0#${f}`),
  'jp:host/http@0.1.0#get', 'jp:host/http@0.1.0#post', 'jp:host/process@0.1.0#run',
];
/** The exports that may wait: the seed's `run`, `jp:tool/content`'s, and a live session's
 * (`jp:tool/stateful`: spawn, restore and the session's fetch, apply and save). */
export const ASYNC_EXPORTS = [
  'run', 'jp:tool/content@0.1.0#run',
  ...['spawn', 'restore', '[method]session.fetch', '[method]session.apply', '[method]session.save'].map((f) => `jp:tool/stateful@0.1.0#${f}`),
];
/** The same as jco command-line flags. */
export const JSPI_FLAGS = ['--async-mode', 'jspi', '--async-imports', ...HOST_IMPORTS, '--async-exports', ...ASYNC_EXPORTS];
