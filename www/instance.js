// One component instance, as the runner of `JpHost.call` (jp.js) uses it: its core modules, its
// import object — every `jp:host` import a request to the call session (web/src/call.rs), which
// the component waits for (JSPI) — its limits (fuel checks and the deadline watchdog), and a
// component's bytes transpiled by jco.
//
// WASI for components: stdio, clocks, random and io from @bytecodealliance/preview2-shim; an
// empty environment and no arguments; no wasi:sockets, and no wasi:filesystem (their files come
// through jp:host/filesystem) but for a component registered with a `knowledgeBase` (the builtin
// `learn`): its call's topic, read-only at `/subjects` (subjects.js).

import { HOST_IMPORTS, ASYNC_EXPORTS } from './jspi.js';
import * as cli from '@bytecodealliance/preview2-shim/cli';
import * as io from '@bytecodealliance/preview2-shim/io';
import * as clocks from '@bytecodealliance/preview2-shim/clocks';
import * as random from '@bytecodealliance/preview2-shim/random';
import { subjectsFilesystem } from './subjects.js';

/**
 * Why components cannot be hosted with this WASI shim, or null: preview2-shim's Node build lets
 * a component end the process (`exit`), block the event loop (clocks, poll, stdin) and write raw
 * to the terminal. Node must run the browser build (web/edge/browser-wasi.mjs).
 */
export function shimRefused() {
  if (typeof cli.createCli === 'function') return null;
  return "the WASI shim here is preview2-shim's Node build, in which a component could end the process or block it; start Node with --import ./web/edge/browser-wasi.mjs (as npm run edge does)";
}

// A component's stdout and stderr are not part of what it answers: dropped, never written to
// the operator's terminal or the page's console (escape sequences, forged log lines).
const dropped = { write() {}, flush() {}, blockingFlush() {}, drop() {} };
if (!shimRefused()) {
  cli._setStdout?.(dropped);
  cli._setStderr?.(dropped);
}

/**
 * Core modules by file name. `cores` is either the URL of the directory holding them (the page:
 * each is fetched and compiled once) or an object `{ file: WebAssembly.Module }` the embedder
 * compiled or imported itself (edge runtimes: workerd forbids compiling wasm at run time, so
 * its modules are imported; see web/edge/).
 */
export function coreModules(cores) {
  if (cores instanceof URL || typeof cores === 'string') {
    const base = new URL(cores);
    const cache = new Map();
    return (file) => {
      if (!cache.has(file)) cache.set(file, WebAssembly.compileStreaming(fetch(new URL(file, base))));
      return cache.get(file);
    };
  }
  return (file) => {
    const m = cores[file];
    if (!(m instanceof WebAssembly.Module)) {
      throw new Error(`no core module '${file}' among ${Object.keys(cores).join(', ') || 'none'}`);
    }
    return m;
  };
}


class SocketNetwork {}
const denied = () => { throw { payload: 'access-denied' }; };

const wasiImports = {
  'wasi:cli/environment': {
    getEnvironment: () => [],
    getArguments: () => [],
    initialCwd: () => undefined,
  },
  'wasi:cli/exit': cli.exit,
  'wasi:cli/stdin': cli.stdin,
  'wasi:cli/stdout': cli.stdout,
  'wasi:cli/stderr': cli.stderr,
  'wasi:cli/terminal-input': cli.terminalInput,
  'wasi:cli/terminal-output': cli.terminalOutput,
  'wasi:cli/terminal-stdin': cli.terminalStdin,
  'wasi:cli/terminal-stdout': cli.terminalStdout,
  'wasi:cli/terminal-stderr': cli.terminalStderr,
  'wasi:io/error': io.error,
  'wasi:io/poll': io.poll,
  'wasi:io/streams': io.streams,
  'wasi:clocks/monotonic-clock': clocks.monotonicClock,
  'wasi:clocks/wall-clock': clocks.wallClock,
  'wasi:random/random': random.random,
  'wasi:random/insecure': random.insecure,
  'wasi:random/insecure-seed': random.insecureSeed,
  // No network: every socket and name lookup is refused (access-denied).
  'wasi:sockets/instance-network': { instanceNetwork: () => new SocketNetwork() },
  'wasi:sockets/network': { Network: SocketNetwork },
  'wasi:sockets/ip-name-lookup': { ResolveAddressStream: class ResolveAddressStream {}, resolveAddresses: denied },
  'wasi:sockets/tcp': { TcpSocket: class TcpSocket {} },
  'wasi:sockets/tcp-create-socket': { createTcpSocket: denied },
  'wasi:sockets/udp': { IncomingDatagramStream: class IncomingDatagramStream {}, OutgoingDatagramStream: class OutgoingDatagramStream {}, UdpSocket: class UdpSocket {} },
  'wasi:sockets/udp-create-socket': { createUdpSocket: denied },
  // No preopened directories: a component that uses std::fs finds no filesystem at all.
  'wasi:filesystem/preopens': { getDirectories: () => [] },
  'wasi:filesystem/types': {
    Descriptor: class Descriptor {},
    DirectoryEntryStream: class DirectoryEntryStream {},
    filesystemErrorCode: () => undefined,
  },
};

/** `subjects`: for a component with a knowledge base, the current call's topic (a getter). */
export function hostImports(session, subjects = null) {
  const filesystem = {
    read: (path) => session.read(path),
    write: (path, content) => session.write(path, content),
    exists: (path) => session.exists(path),
    listDir: (path) => session.listDir(path),
    metadata: (path) => session.metadata(path),
    delete: (path) => session.delete(path),
    rename: (from, to) => session.rename(from, to),
    grep: (pattern, options) => session.grep(pattern, options),
  };
  const http = {
    get: (url, headers) => session.http('http.get', url, headers, undefined),
    post: (url, headers, body) => session.http('http.post', url, headers, body),
  };
  const proc = { run: (program, args) => session.processRun(program, args) };
  // jco reads unversioned keys; its .d.ts names versioned ones: give both.
  const imports = { ...wasiImports, ...(subjects ? subjectsFilesystem(subjects) : {}) };
  for (const [name, value] of Object.entries({ filesystem, http, process: proc, types: {} })) {
    imports[`jp:host/${name}`] = value;
    imports[`jp:host/${name}@0.1.0`] = value;
  }
  return imports;
}


/**
 * A component's bytes transpiled by jco as the build does (jspi.js): `{ source, coreBytes }` —
 * the JS module's text and its core modules' bytes by file name.
 */
export async function transpile(name, bytes) {
  // Bundled by the build beside this file (www/jco/): loads in a Worker and in Node alike.
  const jco = await import(new URL('./jco/js-component-bindgen-component.js', import.meta.url).href);
  await jco.$init;
  let files;
  try {
    ({ files } = jco.generate(bytes, {
      name, noTypescript: true, instantiation: { tag: 'async' },
      asyncMode: { tag: 'jspi', val: { imports: HOST_IMPORTS, exports: ASYNC_EXPORTS } },
    }));
  } catch (e) {
    throw new Error(`component '${name}' could not be transpiled (is it a WASI p2 component built against wit/tool?): ${e?.message ?? e}`);
  }
  let source = null;
  const coreBytes = {};
  for (const [file, content] of files) {
    if (file === `${name}.js`) source = new TextDecoder().decode(content);
    else if (file.endsWith('.wasm')) coreBytes[file] = content;
  }
  if (source === null) throw new Error(`component '${name}': jco wrote no ${name}.js`);
  return { source, coreBytes };
}

/** A pooled instance whose memory grew past this is dropped after its call. */
export const POOLED_MEMORY_MAX = 64 << 20;

/**
 * A new instance of `component` whose `jp:host` imports go to `current.session` (set per call)
 * and whose fuel checks go to `limits` (reset per call), so that it can serve several calls.
 */
export async function instantiate(component, tool, deadlineMs) {
  const current = { session: nullSession, subjects: null };
  const limits = new CallLimits(tool, deadlineMs);
  const cores = [];
  const session = new Proxy({}, { get: (_, method) => (...a) => current.session[method](...a) });
  const instantiateCore = async (module, imports) => {
    const core = await WebAssembly.instantiate(module, limits.imports(module, imports));
    cores.push(core);
    return core;
  };
  const subjects = component.knowledgeBase ? () => current.subjects : null;
  const instance = await component.module.instantiate(component.getCoreModule, hostImports(session, subjects), instantiateCore);
  return { instance, current, limits, cores };
}

/** A call's deadline when the host is given none (ms). */
export const DEFAULT_DEADLINE_MS = 30_000;
/** Loop iterations between two looks at the clock. */
const FUEL_STEP = 1_000_000n;

export class DeadlineExceeded extends Error {}

/**
 * The deadline of one call, enforced inside the component: its core modules were instrumented
 * at build time (tools/wasm-limits) to count loop iterations in the imported global
 * `jp:limits.fuel` and to call `jp:limits.check` when it runs out. `check` looks at the clock
 * and throws past the deadline, which unwinds the component; it also throws after as many
 * iterations as a fast engine runs by then, for engines whose clock stands still while code
 * runs.
 */
export class CallLimits {
  constructor(tool, deadlineMs) {
    this.fuel = new WebAssembly.Global({ value: 'i64', mutable: true }, FUEL_STEP);
    this.reset(tool, deadlineMs);
  }

  /** Start a call's deadline now. */
  reset(tool, deadlineMs) {
    this.tool = tool;
    this.deadlineMs = deadlineMs;
    this.end = performance.now() + deadlineMs;
    this.budget = BigInt(Math.ceil(deadlineMs)) * 1_000_000n; // ≤ 1 iteration per ns
    this.spent = 0n;
    this.fuel.value = FUEL_STEP;
    this.pausedAt = null;
    this.stopped = null;
  }

  /** A question waits for its answer: the deadline stands still until `resume`. */
  pause() { this.pausedAt ??= performance.now(); }
  resume() {
    if (this.pausedAt === null) return;
    this.end += performance.now() - this.pausedAt;
    this.pausedAt = null;
  }

  /** Stop the call: its next loop check throws `message`. */
  cancel(message) { this.stopped ??= message; }

  /** The message of a call stopped at its deadline. */
  expired() {
    return `tool '${this.tool}' ran past its deadline of ${this.deadlineMs} ms and was stopped; nothing it did was written`;
  }

  /**
   * Call `onExpired` once the deadline passes (not counting time paused for questions), also
   * while the component waits for an import: a fetch or an unanswered question is then ended.
   * Returns `{ stop() }`.
   */
  watch(onExpired) {
    let timer;
    const tick = () => {
      if (this.pausedAt !== null) { timer = setTimeout(tick, 250); return; }
      const left = this.end - performance.now();
      if (left > 0) { timer = setTimeout(tick, Math.min(left + 1, 2 ** 31 - 1)); return; }
      onExpired();
    };
    tick();
    return { stop: () => clearTimeout(timer) };
  }

  imports(module, imports = {}) {
    if (!WebAssembly.Module.imports(module).some((i) => i.module === 'jp:limits')) return imports;
    return { ...imports, 'jp:limits': { fuel: this.fuel, check: () => this.check() } };
  }

  check() {
    this.spent += FUEL_STEP;
    if (this.stopped) throw new DeadlineExceeded(this.stopped);
    if (this.pausedAt === null && (performance.now() > this.end || this.spent > this.budget)) {
      throw new DeadlineExceeded(this.expired());
    }
    this.fuel.value = FUEL_STEP;
  }
}

/** The largest memory among a component's core instances (bytes). */
export function memoryBytes(cores) {
  let bytes = 0;
  for (const instance of cores) {
    for (const m of Object.values(instance.exports)) if (m instanceof WebAssembly.Memory) bytes = Math.max(bytes, m.buffer.byteLength);
  }
  return bytes;
}

/** When a component traps near its memory cap, say so: the cap is the likely cause. */
export function memoryNote(cores, capMiB) {
  const mib = memoryBytes(cores) / (1 << 20);
  if (!capMiB || mib < capMiB / 2) return '';
  return ` — its memory had grown to ${Math.round(mib)} MiB and a component may use at most ${capMiB} MiB (the engine's cap); it ran out of memory`;
}

// Imports for the describe probe: a component asking for files while describing itself is told
// there are none.
export const nullSession = new Proxy({}, {
  get: () => () => { throw { payload: { code: -32603, message: 'no project while describing a component' } }; },
});
