// What the async (JSPI) call path costs against the sync path it replaced, for `npm run bench`
// (web/scripts/bench.mjs), the same measurement in Node and in a Chromium page.
//
// The same component (tools/guests/bench, www/components/bench.wasm, not instrumented) is
// transpiled here twice by jco into a temporary directory, never by the build:
// - sync: `--instantiation async` only; its `jp:host` imports are plain functions and its `run`
//   export returns the outcome;
// - jspi: the same plus the build's JSPI flags (www/jspi.js): every `jp:host` import may suspend
//   the component (`WebAssembly.Suspending`), `run` returns a promise (`WebAssembly.promising`).
// Both get their `jp:host/filesystem` answered from one plain in-memory JS `Map` (no jp): the
// sync side by functions that return, the JSPI side by async functions that return a promise
// (what every jp import does). A third and fourth side use what the build made
// (www/components/bench: the JSPI transpile with the loop checks of tools/wasm-limits): `checked`
// answers from the same Map, `jp` is `Host.callTool` of the same tool (see `measureCallPaths`).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JSPI_FLAGS } from '../../www/jspi.js';

/**
 * Transpile `wasm` (a component's path) twice into a new temporary directory: `sync/` and
 * `jspi/` (module `bench.js` and its core modules). Returns `{ dir, sync, jspi }`, each side
 * `{ dir, cores }` (the core modules' file names).
 */
export function transpileBoth(root, wasm) {
  const dir = mkdtempSync(join(tmpdir(), 'jp-bench-jspi-'));
  const jco = join(root, 'node_modules/.bin/jco');
  const out = {};
  for (const [side, flags] of [['sync', []], ['jspi', JSPI_FLAGS]]) {
    const to = join(dir, side);
    execFileSync(jco, ['transpile', wasm, '-o', to, '--name', 'bench', '--instantiation', 'async', ...flags, '--quiet'], { stdio: 'inherit' });
    out[side] = { dir: to, cores: readdirSync(to).filter((f) => f.endsWith('.wasm')).sort() };
  }
  return { dir, ...out };
}

/** The build's core modules of a component (its cores.json). */
export const builtCores = (dir) => JSON.parse(readFileSync(join(dir, 'cores.json'), 'utf8'));

/**
 * The measurement, self-contained (Playwright hands its source to the page): `p` is
 * `{ sides: { sync, jspi, checked: { module, base, cores } }, jp: { js, wasm? }, blocks, noop:
 * { perBlock }, io: { n, size, perBlock } }` with URLs (file: in Node, http: in the page);
 * `jp.wasm` the jp-web module's bytes where it cannot be fetched (Node), `jp.validator` its validator's. Resolves to the median
 * of the per-block means of each side, in ms per call, for `noop` and `io_loop`.
 *
 * Sides, each with its own instance kept for all its calls (no instantiation timed):
 * - sync: the sync transpile; `run` called and returned, imports return.
 * - jspi: the JSPI transpile; `run` awaited, each import an async function (it suspends).
 * - checked: the build's JSPI transpile (with loop checks), imports as jspi's.
 * - jp: `Host.callTool` on a host in memory (no IndexedDB), policy '' (the workspace
 *   read-write), its instance pool on (`instances`), so each call reuses one instance: the core
 *   checks the arguments, opens a session on a snapshot, runs the component (every import a
 *   request decided by the dispatcher on the snapshot), maps the outcome and commits changes.
 * Blocks alternate between the sides, in reversed order every other block.
 */
export async function measureCallPaths(p) {
  const bytes = async (url) => (url.startsWith('file:')
    ? new Uint8Array(await (await import('node:fs/promises')).readFile(new URL(url)))
    : new Uint8Array(await (await fetch(url)).arrayBuffer()));
  const compiled = async ({ base, cores }) => Object.fromEntries(await Promise.all(cores.map(async (f) => [f, await WebAssembly.compile(await bytes(new URL(f, base).href))])));
  const cli = await import('@bytecodealliance/preview2-shim/cli');
  const io = await import('@bytecodealliance/preview2-shim/io');
  const wasi = {
    'wasi:cli/environment': { getEnvironment: () => [], getArguments: () => [], initialCwd: () => undefined },
    'wasi:cli/exit': cli.exit, 'wasi:cli/stdin': cli.stdin, 'wasi:cli/stdout': cli.stdout, 'wasi:cli/stderr': cli.stderr,
    'wasi:cli/terminal-input': cli.terminalInput, 'wasi:cli/terminal-output': cli.terminalOutput,
    'wasi:cli/terminal-stdin': cli.terminalStdin, 'wasi:cli/terminal-stdout': cli.terminalStdout,
    'wasi:cli/terminal-stderr': cli.terminalStderr,
    'wasi:io/error': io.error, 'wasi:io/poll': io.poll, 'wasi:io/streams': io.streams,
  };
  // The one Map both kinds of imports answer from.
  const files = new Map();
  const unavailable = () => { throw { payload: { code: -32601, message: 'not available in this benchmark' } }; };
  const syncFs = {
    read: (path) => {
      const v = files.get(path);
      if (v === undefined) throw { payload: { code: -32002, message: `${path}: not found` } };
      return v;
    },
    write: (path, content) => { files.set(path, content); },
  };
  for (const f of ['exists', 'listDir', 'metadata', 'delete', 'rename', 'grep']) syncFs[f] = unavailable;
  const asyncFs = Object.fromEntries(Object.entries(syncFs).map(([k, f]) => [k, async (...a) => f(...a)]));
  const imports = (fs) => ({ ...wasi, 'jp:host/filesystem': fs, 'jp:host/http': { get: unavailable, post: unavailable }, 'jp:host/process': { run: unavailable } });
  // The build's loop checks (tools/wasm-limits) count down this global; `check` refills it.
  const fuel = new WebAssembly.Global({ value: 'i64', mutable: true }, 1_000_000n);
  const withLimits = (m, imps = {}) => (WebAssembly.Module.imports(m).some((i) => i.module === 'jp:limits')
    ? { ...imps, 'jp:limits': { fuel, check: () => { fuel.value = 1_000_000n; } } }
    : imps);
  const instance = async (side, fs) => {
    const cores = await compiled(side);
    const module = await import(side.module);
    return module.instantiate((f) => cores[f], imports(fs), (m, imps) => WebAssembly.instantiate(m, withLimits(m, imps)));
  };
  const sync = await instance(p.sides.sync, syncFs);
  const jspi = await instance(p.sides.jspi, asyncFs);
  const checked = await instance(p.sides.checked, asyncFs);
  const jpModule = await import(p.jp.js);
  if (p.jp.wasm) await jpModule.loadJp(p.jp.wasm, p.jp.validator);
  const host = await jpModule.Host.create({ db: null, policy: '', instances: new Map() });
  await host.registerComponent('bench', await import(p.sides.checked.module), await compiled(p.sides.checked));

  const ctx = { root: '/workspace', action: 'run' };
  const expect = (side, out, text) => {
    if (out?.tag !== 'success' || out.val !== text) throw new Error(`${side}: ${JSON.stringify(out).slice(0, 300)}`);
  };
  const ioArgs = { n: p.io.n, size: p.io.size };
  const work = {
    noop: { name: 'noop', args: {}, text: 'ok', perBlock: p.noop.perBlock },
    io: { name: 'io_loop', args: ioArgs, text: `${p.io.n} files of ${p.io.size} bytes written and read`, perBlock: p.io.perBlock },
  };
  // One block of `k` calls of a side, timed whole (a page's clock is coarse): ms per call.
  const block = {
    sync: async ({ name, args, text }, k) => {
      const json = JSON.stringify(args);
      const t = performance.now();
      let out;
      for (let i = 0; i < k; i++) out = sync.run(ctx, name, json, '');
      const ms = (performance.now() - t) / k;
      expect('sync', out, text);
      return ms;
    },
    jspi: async ({ name, args, text }, k) => {
      const json = JSON.stringify(args);
      const t = performance.now();
      let out;
      for (let i = 0; i < k; i++) out = await jspi.run(ctx, name, json, '');
      const ms = (performance.now() - t) / k;
      expect('jspi', out, text);
      return ms;
    },
    checked: async ({ name, args, text }, k) => {
      const json = JSON.stringify(args);
      const t = performance.now();
      let out;
      for (let i = 0; i < k; i++) out = await checked.run(ctx, name, json, '');
      const ms = (performance.now() - t) / k;
      expect('checked', out, text);
      return ms;
    },
    jp: async ({ name, args, text }, k) => {
      const t = performance.now();
      let out;
      for (let i = 0; i < k; i++) out = await host.callTool(name, args);
      const ms = (performance.now() - t) / k;
      expect('jp', out, text);
      return ms;
    },
  };
  const sides = Object.keys(block);
  const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const result = {};
  for (const [key, w] of Object.entries(work)) {
    for (const side of sides) await block[side](w, Math.max(1, Math.ceil(w.perBlock / 4))); // warm-up
    const samples = Object.fromEntries(sides.map((s) => [s, []]));
    for (let b = 0; b < p.blocks; b++) {
      for (const side of b % 2 ? sides.slice().reverse() : sides) samples[side].push(await block[side](w, w.perBlock));
    }
    result[key] = Object.fromEntries(sides.map((s) => [s, median(samples[s])]));
  }
  return result;
}
