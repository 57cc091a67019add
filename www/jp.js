// jp-host's JS side, shared by the playground page and edge functions: `Host`, the browser glue
// around jp-web's `JpHost` (wasm-bindgen), whose `call` is the core's call path; here are the
// registry of components, the runner that runs one on a call session (instance.js: its imports
// and limits), the Worker and the questions relayed to the page.

import init, { JpHost, runAgentTurn, describeCall, policyExceeds, suggestPolicy, agentTool, askBeforeCall, agentResult, resultText, shownText, shownReason, inquiryElicitation } from './pkg/jp_web.js';
import initValidator, { validate as validateArguments } from './pkg/validate/jp_validate.js';

// describeCall(name, args): what a permission question shows of a call, as `jp query` shows it;
// agentTool, askBeforeCall, agentResult: the core's agent surface, as `jp mcp` and `jp query` use
// it (all after loadJp).
// shownText, inquiryElicitation: a tool's text as jp shows it, a policy question as `jp mcp` asks it.
// suggestPolicy: a policy widened by what one refused request needed (the event log's offer).
export { describeCall, policyExceeds, suggestPolicy, agentTool, askBeforeCall, agentResult, resultText, shownText, shownReason, inquiryElicitation };
import { learnCall } from './subjects.js';
import { localRunner, workerRunner, withActions } from './live.js';
import {
  CallLimits, DeadlineExceeded, DEFAULT_DEADLINE_MS, POOLED_MEMORY_MAX, coreModules, hostImports, instantiate,
  memoryBytes, memoryNote, nullSession, shimRefused, transpile,
} from './instance.js';

export { DEFAULT_DEADLINE_MS };

/** What runs this: the engine and its version, for messages. */
export function engineName() {
  if (typeof Deno !== 'undefined') return `Deno ${Deno.version.deno} (V8 ${Deno.version.v8})`;
  if (globalThis.navigator?.userAgent === 'Cloudflare-Workers') return 'workerd (Cloudflare Workers)';
  if (typeof process !== 'undefined' && process.release?.name === 'node') return `Node ${process.version} (V8 ${process.versions.v8})`;
  return globalThis.navigator?.userAgent ?? 'this JavaScript engine';
}

/**
 * Why components cannot run here, or `null` when they can: a component waits for its files,
 * HTTP and questions through JSPI (`WebAssembly.Suspending`, `WebAssembly.promising`).
 */
export function jspiMissing() {
  if (typeof WebAssembly.Suspending === 'function' && typeof WebAssembly.promising === 'function') return null;
  return `${engineName()} lacks WebAssembly JSPI (WebAssembly.Suspending / promising), through which a component waits for files, HTTP and questions; use Chromium 137 or later, Node 25 or later (24 with --experimental-wasm-jspi), Deno 2.5 or later, or a workerd of 2025 or later`;
}

let ready;
/**
 * Load the jp-web module once: `source` is a `WebAssembly.Module` (edge runtimes inject it),
 * bytes, or a URL; by default the file next to this one, fetched (the page). `validator`: the
 * same for the argument validator's module (web/validate), loaded at once when given (an edge
 * function, Node); without it the validator is fetched from next to this file by the first call
 * that checks arguments (the page: after its first screen, see `loadValidator`).
 */
export function loadJp(source, validator) {
  ready ??= init({ module_or_path: source ?? new URL('./pkg/jp_web_bg.wasm', import.meta.url) });
  if (validator !== undefined) loadValidator(validator);
  return ready;
}

let validatorReady;

/** The tools each `tools` list given to `registerComponent` was registered as (`JpHost.toolSet`),
 * by that list: `{ component, set }`. */
const toolSets = new WeakMap();

/**
 * One fresh instance per component module, for hosts that pool their instances (an edge
 * function's host per project): made in idle time after a call that found none in its host's
 * pool, and taken by the next such call — a project's first call then does not wait for an
 * instantiation (a third of an edge function's cold call). Never run before it is taken, so
 * nothing of any project is in it; a taken one serves that host's pool only. By the module:
 * `{ cores, knowledgeBase, live }`, `live` set once the instance is made. Only a made one is
 * taken: a call never waits on an instantiation another request started (workerd ties a
 * pending promise to the request that made it).
 */
const spares = new WeakMap();

/** The spare instance of `component`, taken, or `null`. */
function takeSpare(component) {
  const spare = component.module && spares.get(component.module);
  if (!spare?.live || spare.cores !== component.cores || spare.knowledgeBase !== component.knowledgeBase) return null;
  spares.delete(component.module);
  return spare.live;
}

/** Make `component`'s spare instance once this turn of the event loop is over (after the call's
 * answer has gone out), unless one is there or being made. */
function refillSpare(component) {
  if (!component.module || !component.cores) return;
  setTimeout(() => {
    if (spares.has(component.module)) return;
    const spare = { cores: component.cores, knowledgeBase: component.knowledgeBase, live: null };
    spares.set(component.module, spare);
    instantiate(component, component.name, DEFAULT_DEADLINE_MS).then(
      (live) => { spare.live = live; },
      () => { if (spares.get(component.module) === spare) spares.delete(component.module); },
    );
  }, 0);
}

/** `value` and everything in it made read-only; `value`. */
function deepFreeze(value) {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
/**
 * Load the argument validator once — jp-core's check with the `jsonschema` crate, a module of
 * its own so that a page's first download is a third smaller — and install it as the global
 * jp-web checks with (`jpValidateArguments`). `source` as in `loadJp`; by default the file next
 * to this one. Every call path of `Host` awaits it; a page may start it early.
 */
export function loadValidator(source) {
  validatorReady ??= initValidator({ module_or_path: source ?? new URL('./pkg/validate/jp_validate_bg.wasm', import.meta.url) })
    .then(() => { globalThis.jpValidateArguments = validateArguments; });
  return validatorReady;
}

/**
 * One agent turn — the core's turn loop, as in `jp query` — with the model reached through
 * `fetch` and each tool call handed to `callTool(name, args, id)` (resolving to `{content,
 * isError}`). `provider`: `{ kind: 'openai' | 'anthropic' | 'scripted', baseUrl, model, apiKey,
 * stream, maxTokens, recording }`; `messages`: the conversation so far, ending with the user's
 * message; `tools`: `[{ name, summary, description, inputSchema }]` (e.g. `host.listTools()`).
 * Resolves to `{ messages, text }`; rejects with an Error whose `messages` holds the
 * conversation up to where the turn ended.
 */
export async function agentTurn({ provider, messages, tools, callTool, onEvent = () => {}, signal = null }) {
  await loadJp();
  const list = tools.map(({ name, summary = '', description = '', inputSchema }) => ({ name, summary, description, inputSchema }));
  return runAgentTurn(provider, messages, list, callTool, onEvent, signal ?? undefined);
}

/**
 * A jp-host: files (IndexedDB when `db` is a name, memory when null), one policy, tools from
 * registered components. Every host request of a tool is decided by the core and reported to
 * the listeners of `onEvent`.
 */
export class Host {
  static async create({ db = null, policy = '', ceiling = null, storage = null, limits = {}, worker = null, instances = null, inWorker = false } = {}) {
    const missing = jspiMissing() ?? shimRefused();
    if (missing) throw new Error(`jp-host cannot host components here: ${missing}`);
    await loadJp();
    const host = new Host(await JpHost.create(db, ceiling === null ? policy : '', storage), limits);
    if (ceiling !== null) host.setPolicy(policy, { ceiling });
    host.policyText = policy;
    host.worker = worker;
    host.instances = instances;
    // The call-worker's own host: its caller terminates it at the deadline.
    host.inWorker = inWorker;
    return host;
  }

  constructor(inner, limits = {}) {
    this.inner = inner;
    this.limits = limits;
    this.policyText = '';
    this.ceilingText = null;
    this.worker = null;
    this.instances = null;
    this.inquirer = null;
    this.answerer = null;
    this.secrets = {};
    this.components = new Map();
    this.tools = new Map();
    this.listeners = new Set();
    // The Workers of live handles (a page's stateful components), terminated on abort.
    this.liveWorkers = new Set();
    inner.onEvent((event) => {
      for (const listener of this.listeners) listener(event);
    });
  }

  onEvent(listener) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Replace the policy. With `ceiling` (the operator's policy at the edge), `text` may only
   * narrow it: every decision is the stricter of the two, empty `text` is the ceiling itself,
   * and a `text` that grants more throws naming every such right (see `policyExceeds`).
   */
  setPolicy(text, { ceiling = null } = {}) {
    if (ceiling === null) this.inner.setPolicy(text);
    else this.inner.setPolicyWithin(text, ceiling);
    this.policyText = text;
    this.ceilingText = ceiling;
  }
  /** What the policy lets a tool do at most: `{ writes, destructive, network, commands }`. */
  policyHints() { return this.inner.policyHints(); }
  /**
   * Answer inquiries (a sensitive path, a request no rule covers under a `sandbox` table) of
   * every call: `callback({tool, method, target, reason, signal})` → (a promise of) true /
   * 'once' (allow), 'all' (allow the rest of the call), false (deny) or a string (deny, with
   * that reason). `signal` aborts when the call ends without waiting for the answer. The
   * component waits meanwhile; time spent waiting does not count against its deadline. Without
   * an inquirer, inquiries are denied at once with the reason. `callTool`'s `inquirer`
   * overrides it for one call.
   */
  setInquirer(callback) { this.inquirer = callback; this.inner.setInquirer(callback); }
  /**
   * Answer a tool's own questions (`needs-input`) of every call: `callback({tool, question: {id,
   * text, answerType, default}})` → (a promise of) the answer, or undefined for none — the tool
   * then runs again with it. Without one, the question is the call's outcome. `callTool`'s
   * `answerer` overrides it for one call.
   */
  setAnswerer(callback) { this.answerer = callback; }
  /**
   * The secrets a tool's `${VAR}` headers may use, `{ NAME: value }`: substituted by the host,
   * never shown to the tool, scrubbed from everything it reads back. Only the names the
   * policy's `access.secrets` binds (or `network.envs` lists) are kept (`secretNames()`). Replaces the previous set.
   */
  setSecrets(secrets) { this.secrets = { ...secrets }; this.inner.setSecrets(this.secrets); }
  /** The variable names the policy lets `${VAR}` headers use (`access.secrets`, `network.envs`). */
  secretNames() { return this.inner.secretNames(); }

  /**
   * One D11 request (`fs.read`, `http.get`, …) on behalf of `tool`, decided by the policy and
   * served asynchronously (HTTP through fetch, inquiries through the inquirer). Resolves to
   * `{ result }` or `{ error: { code, message } }`.
   */
  async request(tool, method, params = {}) {
    return JSON.parse(await this.inner.request(tool, method, JSON.stringify(params)));
  }
  policySummary() { return this.inner.policySummary(); }
  writeFile(path, content) { return this.inner.writeFile(path, content); }
  readFile(path) { return this.inner.readFile(path); }
  readFileBytes(path) { return this.inner.readFileBytes(path); }
  deleteFile(path) { return this.inner.deleteFile(path); }
  listFiles() { return this.inner.listFiles(); }

  /**
   * Register a component. Either jco-transpiled (`--instantiation async` and the JSPI flags of
   * jspi.js, as `npm run build` does): `module` is its JS module (or its URL), `cores` its core
   * wasm modules (a directory URL, or `{ file: WebAssembly.Module }`). Or the component itself:
   * `module` is the `.wasm` file's bytes (a `Uint8Array`), transpiled here by jco (loaded on
   * first use: `@bytecodealliance/jco-transpile/component`, which a page maps in its import
   * map) and `cores` is left out. Its tools come from its `jp:tool/describe` export, or `tools`
   * when it has none.
   *
   * A component given as bytes has no loop checks (the build instruments its own components;
   * tools/wasm-limits), so its calls run only in a Worker (`Host.create({ worker })`), which is
   * terminated at the deadline.
   *
   * `knowledgeBase` (the builtin `learn`, seed 002): a directory of the project whose
   * subdirectories are topics; each call's topic (its `topic` argument, or the only one) is the
   * component's `/subjects`, read-only through wasi:filesystem, and its metadata `_topic`.
   */
  async registerComponent(name, module, cores = null, tools = null, { knowledgeBase = null } = {}) {
    if (this.components.has(name)) throw new Error(`a component named '${name}' is registered already; register this one under another name`);
    let source = null;
    let coreBytes = null;
    let described = tools;
    const bytes = module instanceof Uint8Array || module instanceof ArrayBuffer;
    if (bytes && !this.inWorker) {
      // No loop checks, and code generated from the user's bytes: transpiled, evaluated and
      // described in a Worker stopped at the deadline, never on this thread.
      if (!this.worker) throw new Error(`component '${name}' was given as bytes and has no loop checks, so it runs only in a Worker; create the host with Host.create({ worker })`);
      ({ source, coreBytes, described } = await this.describeInWorker(name, new Uint8Array(module), tools));
      this.components.set(name, { name, module: null, getCoreModule: null, moduleUrl: null, coresUrl: null, source, coreBytes, knowledgeBase });
      for (const tool of this.inner.addTools(name, described)) this.tools.set(tool.name, tool);
      return described.map((t) => t.name);
    }
    if (bytes) {
      ({ source, coreBytes } = await transpile(name, new Uint8Array(module)));
    } else if (module?.source !== undefined && module?.coreBytes !== undefined) {
      ({ source, coreBytes } = module); // transpiled already (a Worker given the page's)
    }
    if (source !== null) {
      // A data: URL imports everywhere (Node has no blob: modules).
      module = await import(`data:text/javascript;charset=utf-8,${encodeURIComponent(source)}`);
      cores = {};
      for (const [file, bytes] of Object.entries(coreBytes)) cores[file] = await WebAssembly.compile(bytes);
    }
    // A URL: the module is imported here, and a Worker can import it again.
    const moduleUrl = module instanceof URL ? module.href : null;
    if (moduleUrl) module = await import(moduleUrl);
    const coresUrl = cores instanceof URL || typeof cores === 'string' ? new URL(cores).href : null;
    const getCoreModule = coreModules(cores);
    const component = { name, module, cores, getCoreModule, moduleUrl, coresUrl, source, coreBytes, knowledgeBase };
    if (!described) {
      const limits = new CallLimits(`${name} (describe)`, this.limits.deadlineMs ?? DEFAULT_DEADLINE_MS);
      const probe = await module.instantiate(getCoreModule, hostImports(nullSession),
        (m, imports) => WebAssembly.instantiate(m, limits.imports(m, imports)));
      const schema = probe.describe?.schema ?? probe['jp:tool/describe@0.1.0']?.schema;
      if (!schema) throw new Error(`component ${name} does not describe itself; pass its tools to registerComponent`);
      // A stateful component (jp:tool/stateful) says which RFD 009 actions each tool offers.
      described = withActions(probe, JSON.parse(schema()).tools);
    }
    this.components.set(name, component);
    // The core compiles each tool's schema once and checks every call against it. The same
    // `tools` given again (an edge function's host per project) registers what the first host
    // with them registered, without converting and compiling them again.
    const shared = tools ? toolSets.get(tools) : undefined;
    if (shared?.component === name) {
      for (const tool of this.inner.addToolSet(shared.set)) this.tools.set(tool.name, tool);
    } else {
      const listing = this.inner.addTools(name, described);
      for (const tool of listing) this.tools.set(tool.name, tool);
      // Shared by every host that gets the set: nobody may change them.
      if (tools) toolSets.set(tools, { component: name, set: this.inner.toolSet(name, deepFreeze(listing)) });
    }
    return described.map((t) => t.name);
  }

  /** A component given as bytes, transpiled and described in a Worker that is terminated at
   * the deadline (its code has no loop checks): `{ source, coreBytes, described }`. */
  describeInWorker(name, bytes, tools = null) {
    const deadlineMs = this.limits.deadlineMs ?? DEFAULT_DEADLINE_MS;
    const worker = new Worker(this.worker, { type: 'module' });
    return new Promise((resolve, reject) => {
      const done = (f) => (value) => { clearTimeout(timer); worker.terminate(); f(value); };
      const [ok, fail] = [done(resolve), done(reject)];
      // Transpiling takes its own time (jco, 3.5 MB, compiled on first use): the deadline is
      // the component's, on top of a minute for that.
      const timer = setTimeout(() => fail(new Error(`component '${name}' ran past the deadline of ${deadlineMs} ms while describing itself and was stopped`)), deadlineMs + 60_000);
      worker.onerror = (e) => fail(new Error(`component '${name}' failed while describing itself: ${e.message ?? e}`));
      worker.onmessage = ({ data }) => {
        if (data.described) ok(data.described);
        if (data.failed) fail(new Error(data.failed));
      };
      worker.postMessage({ jpUrl: new URL('./pkg/jp_web_bg.wasm', import.meta.url).href, describe: { name, bytes, tools }, limits: this.limits });
    });
  }

  /**
   * A call in a Worker (`Host.create({ worker })`): the page stays responsive whatever the
   * component does. The Worker gets a copy of the files and the policy, the decisions come back
   * live, and the tool's changes are committed here, all together, when it succeeds. At the
   * deadline (plus a second for the in-component check to answer first) or when `signal`
   * aborts, the Worker is terminated and nothing is written.
   */
  async callInWorker(name, args, component, signal, inquirer = null, answerer = null) {
    const files = await this.inner.exportFiles();
    const deadlineMs = this.limits.deadlineMs ?? DEFAULT_DEADLINE_MS;
    const tools = [...this.tools.values()].filter((t) => t.component === component.name)
      .map(({ component: _c, inputSchema: _s, ...t }) => t);
    const worker = new Worker(this.worker, { type: 'module' });
    const emit = (event) => { for (const listener of this.listeners) listener(event); };
    const error = (message) => ({ tag: 'error', val: { message, trace: [], transient: false }, changed: [] });
    const ask = inquirer ?? this.inquirer;
    const answer = answerer ?? this.answerer;
    const stop = new AbortController();
    return new Promise((resolve) => {
      // The deadline (plus a second for the in-component check to answer first), standing
      // still while a question waits for the person.
      let timer;
      let left = deadlineMs + 1000;
      let since = performance.now();
      const arm = () => {
        since = performance.now();
        timer = setTimeout(() => finish(error(`tool '${name}' ran past its deadline of ${deadlineMs} ms and was stopped; nothing it did was written`)), left);
      };
      const hold = () => { clearTimeout(timer); left -= performance.now() - since; };
      const finish = (value) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        stop.abort();
        worker.terminate();
        resolve(value);
      };
      let committing = false;
      const onAbort = () => { if (!committing) finish(error(`tool '${name}' was cancelled; nothing it did was written`)); };
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort);
      arm();
      worker.onerror = (e) => finish(error(`tool '${name}' failed in its worker: ${e.message ?? e}`));
      worker.onmessage = async ({ data }) => {
        if (data.event) emit(data.event);
        if (data.ask) {
          // A question of the component in the Worker, answered here by the page's inquirer.
          hold();
          let reply = false;
          try {
            reply = data.ask.tool
              ? (answer ? await answer(data.ask.question) : undefined) // the tool's own question
              : (ask ? await ask({ ...data.ask.question, signal: stop.signal }) : false);
          } catch { reply = data.ask.tool ? undefined : false; }
          if (stop.signal.aborted) return;
          arm();
          worker.postMessage({ answer: { id: data.ask.id, value: reply } });
        }
        if (data.failed) finish(error(`tool '${name}' failed in its worker: ${data.failed}`));
        if (data.done) {
          clearTimeout(timer);
          const { outcome, changes } = data.done;
          let changed = [];
          if (outcome.tag === 'success') {
            if (stop.signal.aborted) return; // stopped meanwhile: nothing is written
            committing = true; // from here the call's end is the commit's
            try { changed = await this.inner.commitChanges(changes, name); } catch (e) {
              return finish(error(`tool '${name}' succeeded but its changes could not be stored: ${e?.message ?? e}`));
            }
          }
          finish({ ...outcome, changed });
        }
      };
      worker.postMessage({
        jpUrl: new URL('./pkg/jp_web_bg.wasm', import.meta.url).href,
        component: { name: component.name, moduleUrl: component.moduleUrl, coresUrl: component.coresUrl, source: component.source, coreBytes: component.coreBytes, tools, knowledgeBase: component.knowledgeBase },
        policy: this.policyText, ceiling: this.ceilingText, files, tool: name, args, limits: this.limits,
        secrets: this.secrets, asks: Boolean(ask), answers: Boolean(answer),
      });
    });
  }

  /**
   * Why `args` do not fit tool `name`'s schema (the core's check, as `jp` makes it), or
   * `undefined` when they do.
   */
  async checkArguments(name, args) {
    await loadValidator();
    return this.inner.checkArguments(name, args);
  }

  /**
   * A call of a stateful tool (RFD 009; its component exports `jp:tool/stateful`) through the
   * core's handle session, its handles kept for `owner` (the page's agent panel: one per turn;
   * the edge: one per caller's token, project and scope): `args.action` = `spawn` (resolves to
   * `{ tag: 'handle', val: { id: 'h_1', state: 'running', content } }`), `fetch` / `apply` /
   * `abort` with `id` (and `input`); without `action` the tool runs to its end, its questions
   * going to `answerer` (`signal` stops it; on a command it gives up waiting — abort the handle,
   * or close its owner, to stop the tool). Each handle is a live instance of its own — in a Worker of its own when
   * the host has one — and each command's file changes are committed when it ends. Another
   * owner's ids are unknown here. `callTool` comes here for stateful tools.
   */
  async agentCall(name, args = {}, { owner = 'default', inquirer = null, answerer = null, signal = null } = {}) {
    await loadValidator();
    const tool = this.tools.get(name);
    if (!tool) throw new Error(`no tool '${name}'; registered: ${[...this.tools.keys()].join(', ') || 'none'}`);
    const component = this.components.get(tool.component);
    const deadlineMs = this.limits.deadlineMs ?? DEFAULT_DEADLINE_MS;
    const ask = inquirer ?? this.inquirer;
    const answer = answerer ?? this.answerer;
    const portable = (component.moduleUrl && component.coresUrl) || component.source !== null;
    let stateful = null;
    if (this.worker && portable) {
      const tools = [...this.tools.values()].filter((t) => t.component === component.name)
        .map(({ component: _c, inputSchema: _s, ...t }) => t);
      stateful = workerRunner(this, component, { deadlineMs, tools, inquirer: ask, answerer: answer });
    } else if (component.source === null || this.inWorker) {
      stateful = localRunner(component, { deadlineMs, memoryMiB: this.limits.memoryMiB ?? null });
    }
    // A stateful tool always runs as a live session; its one-shot `run` is not used here.
    const runner = async () => { throw new Error(`tool '${name}' runs as a live session, not one-shot`); };
    return this.inner.agentCall(owner, name, args, ask ?? undefined, answer ?? undefined, runner, stateful ?? undefined, deadlineMs, signal ?? undefined);
  }

  /** Start stateful tool `name`: `{ tag: 'handle', val: { id, state, … } }`. */
  spawn(name, args = {}, options = {}) { return this.agentCall(name, { ...args, action: 'spawn' }, options); }
  /** The state of handle `id` of tool `name`. */
  fetchHandle(name, id, options = {}) { return this.agentCall(name, { action: 'fetch', id }, options); }
  /** Send `input` to handle `id` (data for a running tool, the answer for a waiting one). */
  applyHandle(name, id, input, options = {}) { return this.agentCall(name, { action: 'apply', id, input }, options); }
  /** Stop handle `id`: its instance is dropped, its Worker terminated. */
  abortHandle(name, id, options = {}) { return this.agentCall(name, { action: 'abort', id }, options); }
  /** The live handles of `owner`: `[{ id, tool, state, question? }]`. */
  handles(owner = 'default') { return this.inner.handles(owner); }
  /** End `owner`'s handles (a turn ended): each is aborted, a command running on one stopped. */
  closeHandles(owner = 'default') { return this.inner.closeHandles(owner); }

  /** Every registered tool: name, summary, description, parameters, component. */
  listTools() {
    return [...this.tools.values()];
  }

  /**
   * Call a tool on an instance of its component: a fresh one, or one from `instances` (the
   * `Map` given to `Host.create`, which the embedder keeps per project so that no state crosses
   * projects) — an instance that trapped or was stopped is never reused. Resolves to `{ tag, val, changed }`
   * (`tag` is `success`, `error` or `needs-input`); files change only when the tool succeeds.
   * A component that exports `jp:tool/content` also gives `result` on success: its content
   * blocks as MCP's `CallToolResult`, `val` then being their text rendering.
   * `files` (path → text or bytes) are written first, in the same commit: with the tool's
   * changes, or not at all. Arguments that do not fit the tool's schema are an `error` outcome
   * naming each argument and the fix (MCP SEP-1303: the model reads it and corrects its call);
   * the tool does not run and nothing is written.
   */
  async callTool(name, args = {}, { files = null, signal = null, inquirer = null, answerer = null, owner = 'default' } = {}) {
    await loadValidator();
    const tool = this.tools.get(name);
    if (!tool) {
      throw new Error(`no tool '${name}'; registered: ${[...this.tools.keys()].join(', ') || 'none'}`);
    }
    if (tool.actions?.length && files && typeof args?.action === 'string') {
      return { tag: 'error', val: { message: `tool '${name}': a command on a live session takes no files; write them to the project first`, trace: [], transient: false }, changed: [] };
    }
    if (tool.actions?.length && !files) return this.agentCall(name, args, { owner, inquirer, answerer, signal });
    const component = this.components.get(tool.component);
    const portable = (component.moduleUrl && component.coresUrl) || component.source !== null;
    if (this.worker && portable && !files) {
      // Checked here too, so a call that cannot run starts no Worker.
      const problem = await this.checkArguments(name, args);
      if (problem) return { tag: 'error', val: { message: problem, trace: [], transient: false }, changed: [] };
      return this.callInWorker(name, args, component, signal, inquirer, answerer);
    }
    if (component.source !== null && !this.inWorker) {
      return { tag: 'error', val: { message: `tool '${name}': component '${component.name}' was given as bytes and has no loop checks, so it runs only in a Worker that can be stopped at its deadline; create the host with Host.create({ worker }) and call it without files`, trace: [], transient: false }, changed: [] };
    }
    const deadlineMs = this.limits.deadlineMs ?? DEFAULT_DEADLINE_MS;
    // Questions go to the person (or the embedder) with the call's signal; the deadline stands
    // still while one waits for its answer. The signal is made by the first question (aborting
    // one makes a DOMException: a tenth of a cold call's time on the edge, for nobody).
    let refill = null; // the component whose spare instance to make after the call
    let stop = null;
    let stopped = false; // the call ended or was stopped: a question after that starts aborted
    const halt = () => { stopped = true; stop?.abort(); };
    let limits = null; // the running instance's
    const ask = inquirer ?? this.inquirer;
    const asking = ask && (async (question) => {
      limits?.pause();
      try {
        if (!stop) {
          stop = new AbortController();
          if (stopped) stop.abort();
        }
        return await ask({ ...question, signal: stop.signal });
      } finally {
        limits?.resume();
      }
    });
    const answer = answerer ?? this.answerer;
    const pool = this.instances;
    // The runner of one run of the component (the core's call path calls it again with the
    // answers when the tool asks): a live instance from the embedder's pool (same project, same
    // component) or a new one, its imports served by `session`, stopped at the deadline or on
    // `signal`. Resolves to jco's outcome; rejects with the message of a trap or a stop.
    const runner = async (session, argumentsJson, answersJson) => {
      // `learn`: the topic's files from the project (the call's own `files` over them), read
      // whatever the policy says, as natively — it reads nothing else.
      let subjects = null;
      if (component.knowledgeBase) {
        const paths = new Set(await this.inner.listFiles());
        const given = new Map(Object.entries(files ?? {}).map(([p, v]) => [p, typeof v === 'string' ? new TextEncoder().encode(v) : new Uint8Array(v)]));
        for (const p of given.keys()) paths.add(p);
        const topic = await learnCall(argumentsJson, component.knowledgeBase, [...paths], (p) => given.get(p) ?? this.inner.readFileBytes(p));
        if (topic.error) return { tag: 'error', val: { message: topic.error, trace: [], transient: false } };
        ({ argumentsJson, tree: subjects } = topic);
      }
      let live = pool?.get(component.name);
      pool?.delete(component.name); // taken: a concurrent call gets its own
      if (!live && pool) {
        live = takeSpare(component);
        // Taken or not, the next host without an instance finds one ready.
        refill = component;
      }
      if (!live) live = await instantiate(component, name, deadlineMs);
      limits = live.limits;
      limits.reset(name, deadlineMs);
      // A request still waiting ends -32005 (cancelled) or, at the deadline, -32004 (timeout).
      const cancel = (message, expired = false) => {
        live.limits.cancel(message);
        if (expired) session.expire(message); else session.abort(message);
        halt();
      };
      const onAbort = () => cancel(`tool '${name}' was cancelled; nothing it did was written`);
      const watchdog = live.limits.watch(() => cancel(live.limits.expired(), true));
      if (signal?.aborted) onAbort();
      signal?.addEventListener('abort', onAbort);
      try {
        live.current.session = session;
        live.current.subjects = subjects;
        // A component with `jp:tool/content` answers with typed blocks; else the seed's `run`.
        const content = live.instance.content ?? live.instance['jp:tool/content@0.1.0'];
        const ctx = { root: '/workspace', action: 'run' };
        const outcome = await (content ?? live.instance).run(ctx, name, argumentsJson, answersJson);
        // Stopped while it waited, it may still have answered: what it did is not written.
        if (live.limits.stopped) throw new DeadlineExceeded(live.limits.stopped);
        if (pool && memoryBytes(live.cores) <= POOLED_MEMORY_MAX) pool.set(component.name, live);
        return outcome;
      } catch (e) {
        // A trapped or stopped instance is never used again.
        throw new Error(e instanceof DeadlineExceeded
          ? e.message
          : `tool '${name}' trapped: ${e?.message ?? e}${memoryNote(live?.cores ?? [], this.limits.memoryMiB)}`);
      } finally {
        watchdog.stop();
        signal?.removeEventListener('abort', onAbort);
        live.current.session = nullSession;
        live.current.subjects = null;
      }
    };
    try {
      return await this.inner.call(name, args, files ?? undefined, asking ?? undefined, answer ?? undefined, runner);
    } finally {
      halt();
      if (refill) refillSpare(refill);
    }
  }
}