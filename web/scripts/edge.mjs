// Start the edge function locally on a real edge engine:
//   npm run edge -- --engine workerd|wrangler|deno|node [--port N] [--data DIR] [--faults] [--served DIR]
// workerd: the function is bundled (esbuild) with its wasm as modules, a config is generated
// (Durable Objects with on-disk SQLite storage under DIR), and `workerd serve` runs it.
// wrangler: `wrangler dev` (local mode) with the repo's wrangler.jsonc, as a user deploying to
// Cloudflare runs it; Durable Object storage persisted under DIR/wrangler-state.
// deno: `deno task edge` (web/edge/deno.json) with Deno KV under DIR. node: in-memory projects.
// JP_EDGE_TOKEN (the operator's bearer token) and JP_EDGE_TOKENS (per-project tokens, JSON) are
// what every route needs; JP_EDGE_POLICY is the operator's policy, a ceiling for every call;
// JP_EDGE_ALLOWED_ORIGINS the web origins allowed (CORS); JP_EDGE_HOSTS the host names served
// (local engines: loopback names by default); JP_EDGE_DEADLINE_MS each call's deadline (10 s);
// JP_EDGE_STATE_KEY the key of MCP requestStates (default: derived from the operator's token).
// Every engine serves the user's components the build registered (`npm run build -- --component
// PATH.wasm`: www/components/served.json, served.js) beside the builtin ones; JP_EDGE_SERVED (or
// `--served DIR`) names another registry directory, one `build.mjs --served-out DIR` wrote
// (wrangler always serves www/components's: its bundle is wrangler.jsonc's).
// The secrets the policy names in `network.envs` (a tool's `${VAR}` headers) are passed on from
// this environment to the engine as it takes them — workerd: bindings of the generated config;
// wrangler: the dev.vars file; Deno: its environment, and its --allow-env (JP_EDGE_DENO_ENVS);
// Node: its environment — and nothing else of this environment is a secret of the function.
// Every engine caps a component's memory (V8's --wasm-max-mem-pages, process-wide).
// `startEdge()` does the same for tests and benchmarks and resolves once the function answers.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const bin = (name) => join(root, 'node_modules/.bin', name);

/** A component's memory may not grow past this (MiB). */
export const MEMORY_CAP_MIB = 256;
const WASM_PAGES = (MEMORY_CAP_MIB << 20) / 65536;

function capnpString(s) {
  return JSON.stringify(s);
}

/** A secret's name as every engine's configuration can carry it (capnp, dotenv, Deno's flags). */
const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The variables the operator's `policy` names in `network.envs` (its `${VAR}` secrets), as the
 * core reads the policy (jp-web's `secretNames`; no component is run, so no JSPI is needed).
 */
export async function policySecretNames(policy) {
  if (!policy) return [];
  const { readFile } = await import('node:fs/promises');
  const { default: init, JpHost } = await import('../../www/pkg/jp_web.js');
  await init({ module_or_path: await readFile(join(root, 'www/pkg/jp_web_bg.wasm')) });
  return (await JpHost.create(null, policy, null)).secretNames().filter((name) => !name.startsWith('JP_EDGE_'));
}

/** Bundle the workerd entry and write its config into `dir`; returns the config path.
 * `secrets`: the names of the policy's secrets, bound from workerd's environment; `served`: the
 * directory of the user's components' registry, when not www/components. */
async function workerdConfig(dir, dataDir, secrets = [], served = null) {
  const { build } = await import('esbuild');
  const out = join(dir, 'bundle');
  // workerd.js imports www/components/served.js: another registry is bundled in its place.
  const registry = join(root, 'www/components/served.js');
  const otherRegistry = served && resolve(served, 'served.js') !== registry ? {
    name: 'served-registry',
    setup(b) {
      b.onResolve({ filter: /served\.js$/ }, (args) => (resolve(args.resolveDir, args.path) === registry ? { path: resolve(served, 'served.js') } : undefined));
    },
  } : null;
  await build({
    entryPoints: [join(root, 'web/edge/workerd.js')],
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    conditions: ['workerd', 'worker', 'browser'],
    mainFields: ['browser', 'module', 'main'],
    external: ['node:*', 'cloudflare:*'],
    loader: { '.wasm': 'copy' },
    assetNames: '[name]-[hash]',
    outdir: out,
    logLevel: 'warning',
    plugins: otherRegistry ? [otherRegistry] : [],
  });
  const wasm = readdirSync(out).filter((f) => f.endsWith('.wasm')).sort();
  const modules = [
    `(name = "workerd.js", esModule = embed "bundle/workerd.js")`,
    ...wasm.map((f) => `(name = ${capnpString(f)}, wasm = embed ${capnpString(`bundle/${f}`)})`),
  ];
  mkdirSync(dataDir, { recursive: true });
  const config = `# Generated by web/scripts/edge.mjs: the jp-host edge function on workerd.
using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "main", worker = .jp),
    (name = "store", disk = (path = ${capnpString(resolve(dataDir))}, writable = true)),
    # The Worker's fetch (a tool's jp:host/http, decided by the policy first): public addresses,
    # as workerd allows by default, and 127.0.0.1 for local servers — what Deno's task allows.
    (name = "internet", network = (allow = ["public", "127.0.0.1/32"], tlsOptions = (trustBrowserCas = true))),
  ],
  sockets = [ (name = "http", http = (), service = "main") ],
  v8Flags = [ "--wasm-max-mem-pages=${WASM_PAGES}" ],
);
const jp :Workerd.Worker = (
  modules = [
    ${modules.join(',\n    ')}
  ],
  compatibilityDate = "2026-11-01",
  bindings = [
    (name = "PROJECT", durableObjectNamespace = "Project"),
    (name = "JP_EDGE_TOKEN", fromEnvironment = "JP_EDGE_TOKEN"),
    (name = "JP_EDGE_TOKENS", fromEnvironment = "JP_EDGE_TOKENS"),
    (name = "JP_EDGE_ALLOWED_ORIGINS", fromEnvironment = "JP_EDGE_ALLOWED_ORIGINS"),
    (name = "JP_EDGE_HOSTS", fromEnvironment = "JP_EDGE_HOSTS"),
    (name = "JP_EDGE_POLICY", fromEnvironment = "JP_EDGE_POLICY"),
    (name = "JP_EDGE_FAULTS", fromEnvironment = "JP_EDGE_FAULTS"),
    (name = "JP_EDGE_MEMORY_MIB", fromEnvironment = "JP_EDGE_MEMORY_MIB"),
    (name = "JP_EDGE_DEADLINE_MS", fromEnvironment = "JP_EDGE_DEADLINE_MS"),
    (name = "JP_EDGE_BENCH", fromEnvironment = "JP_EDGE_BENCH"),
    (name = "JP_EDGE_STATE_KEY", fromEnvironment = "JP_EDGE_STATE_KEY"),${secrets.map((name) => `
    (name = ${capnpString(name)}, fromEnvironment = ${capnpString(name)}),`).join('')}
  ],
  durableObjectNamespaces = [ (className = "Project", uniqueKey = "jp-edge-project-v1", enableSql = true) ],
  durableObjectStorage = (localDisk = "store"),
);
`;
  const path = join(dir, 'config.capnp');
  writeFileSync(path, config);
  return path;
}

/** wrangler 4 needs Node >= 22.12: the pinned `node` devDependency runs it (the machine's Node
 * may be older). */
/** The pinned Node (package.json): 25, whose V8 has JSPI, which components need; wrangler
 * needs 22.12 or later. */
export const NODE = join(root, 'node_modules/node/bin/node');
export const WRANGLER = [NODE, join(root, 'node_modules/wrangler/bin/wrangler.js')];

/** One value of a dotenv file as wrangler reads it (dotenv, then dotenv-expand): quoted with a
 * quote the value does not contain (so it may span lines), every `$` escaped so that nothing is
 * expanded. */
function dotenvValue(value) {
  const quote = ["'", '`', '"'].find((q) => !value.includes(q));
  if (!quote) throw new Error('a value for wrangler dev may not contain all of \', ` and "');
  return `${quote}${value.replaceAll('$', '\\$')}${quote}`;
}

/** The command that runs `engine` on `port`; `vars` are the function's settings (secrets
 * included), handed over as the engine expects them; `secrets` the names among them that the
 * policy's `network.envs` lists. */
async function command(engine, port, dataDir, vars, secrets, served) {
  const flag = `--wasm-max-mem-pages=${WASM_PAGES}`;
  switch (engine) {
    case 'workerd': {
      const config = await workerdConfig(join(dataDir, 'workerd'), join(dataDir, 'workerd', 'store'), secrets, served);
      return [bin('workerd'), ['serve', config, '--socket-addr', `http=127.0.0.1:${port}`]];
    }
    case 'wrangler': {
      if (served && resolve(served) !== join(root, 'www/components')) {
        throw new Error(`wrangler dev serves the components of wrangler.jsonc's bundle, www/components/served.js, not ${served}: build them in with \`npm run build -- --component PATH.wasm\``);
      }
      // The settings go in a dotenv file in a private temporary directory (removed at stop),
      // never in the repo and never on the command line: wrangler dev reads it as .dev.vars.
      const secrets = mkdtempSync(join(tmpdir(), 'jp-edge-wrangler-vars-'));
      const envFile = join(secrets, 'dev.vars');
      writeFileSync(envFile, Object.entries(vars).map(([k, v]) => `${k}=${dotenvValue(v)}\n`).join(''), { mode: 0o600 });
      const state = resolve(dataDir, 'wrangler-state');
      mkdirSync(state, { recursive: true });
      return [WRANGLER[0], [WRANGLER[1], 'dev', '--config', join(root, 'wrangler.jsonc'), '--local', '--ip', '127.0.0.1', '--port', String(port),
        '--inspector-port', String(await freePort()), '--persist-to', state, '--env-file', envFile, '--show-interactive-dev-session=false', '--log-level', 'warn'],
      { WRANGLER_SEND_METRICS: 'false', CLOUDFLARE_CF_FETCH_ENABLED: 'false', WRANGLER_LOG_PATH: join(secrets, 'logs'), MINIFLARE_WORKERD_V8_FLAGS: flag },
      () => rmSync(secrets, { recursive: true, force: true })];
    }
    case 'deno': {
      // As a user runs it: `deno task edge` of web/edge/deno.json (its import map points the
      // preview2 shim at its browser build, as on workerd: the Node build reads the whole
      // environment). Projects in Deno's default KV, kept in DENO_DIR under the data directory.
      mkdirSync(dataDir, { recursive: true });
      // The policy's secrets are added to the task's --allow-env (see deno.js).
      return [bin('deno'), ['task', '--quiet', '--config', join(root, 'web/edge/deno.json'), 'edge', '--port', String(port)],
        { DENO_DIR: join(resolve(dataDir), 'deno-dir'), DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1', JP_EDGE_DENO_ENVS: secrets.map((n) => `,${n}`).join(''), JP_EDGE_SERVED: served ? resolve(served) : '' }];
    }
    case 'node':
      return [NODE, ['--import', join(root, 'web/edge/browser-wasi.mjs'), flag, join(root, 'web/edge/node.mjs'), '--port', String(port)], { JP_EDGE_SERVED: served ? resolve(served) : '' }];
    default:
      throw new Error(`unknown engine '${engine}': use workerd, wrangler, deno or node`);
  }
}

/**
 * Start the edge function on `engine` at 127.0.0.1:`port` (0: a free one) and wait until it
 * answers. Resolves to `{ url, stop() }`; `stop` kills it.
 */
export async function startEdge(options) {
  // A free port found here can be taken by another process before the engine binds it (tests
  // run in parallel; wrangler also binds ports of its own): then start again on fresh ports.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startEdgeOnce(options);
    } catch (e) {
      if (attempt >= 3 || !/address already in use|EADDRINUSE/i.test(String(e?.message))) throw e;
    }
  }
}

/**
 * `secrets`: `{ NAME: value }`, the values of the policy's `network.envs` variables, given to
 * the engine as its environment (bindings on workerd); a name must be a plain identifier, and
 * one whose value is undefined is one the engine may read but finds unset.
 * `stateKey`: JP_EDGE_STATE_KEY.
 */
async function startEdgeOnce({ engine, port = 0, data = join(root, '.jp-edge'), token = '', tokens = '', allowedOrigins = '', hosts = '127.0.0.1,localhost,[::1]', faults = false, policy = '', deadlineMs = 0, bench = false, secrets = {}, stateKey = '', served = process.env.JP_EDGE_SERVED || null, quiet = true }) {
  for (const f of ['www/pkg/jp_web_bg.wasm', 'www/pkg/validate/jp_validate_bg.wasm', 'www/components/fs/cores.json', 'www/components/served.json']) {
    if (!existsSync(join(root, f))) throw new Error(`${f} is missing: run \`npm run build\` first`);
  }
  if (served && !existsSync(join(served, 'served.json'))) {
    throw new Error(`${join(served, 'served.json')} is missing: build the components served from ${served} with \`node web/scripts/build.mjs --served-out ${served} --component PATH.wasm\``);
  }
  for (const name of Object.keys(secrets)) {
    if (!SECRET_NAME.test(name) || name.startsWith('JP_EDGE_')) throw new Error(`secret ${JSON.stringify(name)}: a secret's name is a plain variable name (letters, digits, '_'), not one of the function's JP_EDGE_ settings`);
  }
  if (port === 0) port = await freePort();
  const values = Object.fromEntries(Object.entries(secrets).filter(([, v]) => typeof v === 'string'));
  const vars = { JP_EDGE_TOKEN: token, JP_EDGE_TOKENS: tokens, JP_EDGE_ALLOWED_ORIGINS: allowedOrigins, JP_EDGE_HOSTS: hosts, JP_EDGE_POLICY: policy, JP_EDGE_FAULTS: faults ? '1' : '', JP_EDGE_MEMORY_MIB: String(MEMORY_CAP_MIB), JP_EDGE_BENCH: bench ? '1' : '', JP_EDGE_DEADLINE_MS: deadlineMs ? String(deadlineMs) : (process.env.JP_EDGE_DEADLINE_MS ?? ''), JP_EDGE_STATE_KEY: stateKey, ...values };
  const [cmd, args, extraEnv = {}, cleanup = () => {}] = await command(engine, port, data, vars, Object.keys(secrets), served);
  const env = { ...process.env, ...extraEnv, ...vars };
  // wrangler runs workerd, and `deno task` deno, as a child: each gets a process group of its
  // own, killed whole.
  const group = engine === 'wrangler' || engine === 'deno';
  const child = spawn(cmd, args, { cwd: root, env, detached: group, stdio: ['ignore', quiet ? 'ignore' : 'inherit', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; if (!quiet) process.stderr.write(d); });
  child.once('exit', cleanup);
  const url = `http://127.0.0.1:${port}/`;
  const signal = (sig) => { try { process.kill(group ? -child.pid : child.pid, sig); } catch { /* gone */ } };
  // A group is asked to end first (wrangler then removes its temporary files), killed after 5 s.
  const stop = () => new Promise((done) => {
    if (child.exitCode !== null || child.signalCode !== null) { cleanup(); return done(); }
    const timer = group ? setTimeout(() => signal('SIGKILL'), 5000) : null;
    child.once('exit', () => {
      clearTimeout(timer);
      if (group) signal('SIGKILL'); // what is left of the group
      cleanup();
      done();
    });
    signal(group ? 'SIGTERM' : 'SIGKILL');
  });
  // Up once the function answers at all: without a token some routes answer 401 or 503 (the
  // function's own JSON). A 5xx that is not JSON comes from the engine (wrangler's proxy while
  // it starts the worker), not from the function.
  const tries = engine === 'wrangler' ? 1200 : 300;
  for (let i = 0; i < tries; i++) {
    if (child.exitCode !== null) { cleanup(); throw new Error(`${engine} exited (${child.exitCode}): ${stderr.slice(-2000)}`); }
    try {
      const res = await fetch(url);
      await res.arrayBuffer();
      if (res.status < 500 || (res.headers.get('content-type') ?? '').startsWith('application/json')) return { url, stop, child, stderr: () => stderr };
    } catch { /* not yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  await stop();
  throw new Error(`${engine} did not answer on ${url} within ${tries / 10} s: ${stderr.slice(-2000)}`);
}

async function freePort() {
  const { createServer } = await import('node:net');
  return new Promise((ok) => {
    const s = createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => ok(p)); });
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const arg = (name, fallback) => {
    const i = process.argv.indexOf(`--${name}`);
    return i > 0 ? process.argv[i + 1] : fallback;
  };
  const engine = arg('engine', 'node');
  const policy = process.env.JP_EDGE_POLICY ?? '';
  // The policy's secrets, from this environment (names only are ever printed).
  const secrets = {};
  for (const name of await policySecretNames(policy)) {
    secrets[name] = process.env[name];
    if (secrets[name] === undefined) console.error(`jp edge: the policy names ${name} in network.envs, but it is not set here; tools' \${${name}} headers will not be filled in`);
  }
  const edge = await startEdge({
    engine, port: Number(arg('port', 8787)), data: arg('data', join(root, '.jp-edge')),
    token: process.env.JP_EDGE_TOKEN ?? '', tokens: process.env.JP_EDGE_TOKENS ?? '', policy,
    allowedOrigins: process.env.JP_EDGE_ALLOWED_ORIGINS ?? '', hosts: process.env.JP_EDGE_HOSTS || undefined,
    stateKey: process.env.JP_EDGE_STATE_KEY ?? '', secrets, faults: process.argv.includes('--faults'), quiet: false,
    served: arg('served', process.env.JP_EDGE_SERVED || null),
  });
  console.log(`jp edge function (${engine}) on ${edge.url} — MCP at ${edge.url}mcp${process.env.JP_EDGE_TOKEN || process.env.JP_EDGE_TOKENS ? '' : ' (set JP_EDGE_TOKEN: every route needs a bearer token)'}`);
  const end = () => edge.stop().then(() => process.exit(0));
  process.on('SIGINT', end);
  process.on('SIGTERM', end);
}
