// Builds what the page and the edge handler load, into www/ (git-ignored outputs):
//   www/pkg/         jp-web for wasm32-unknown-unknown, bound by wasm-bindgen (--target web), and
//                    in www/pkg/validate its argument validator (web/validate), loaded apart
//   www/components/  the guest components (tools/guests, wasm32-wasip2) transpiled by jco, and
//                    the user's own (below) with their registry, served.json and served.js
// Installs what it needs first (rustup targets, wasm-bindgen-cli at the pinned version, the npm
// packages, Debian's chromium and chromium-driver).
//
// The user's own components, served by every engine and the playground beside the builtin ones:
//   npm run build -- --component PATH.wasm [--component NAME=PATH.wasm …]
// (the name is the file's, or NAME). Each is transpiled like the builtin ones and listed by its
// own jp:tool/describe; the registry is written by every build, so a build without them serves
// none. `--served-out DIR` builds only the --component ones, into DIR with their registry, and
// leaves www/ as it is: for a set served apart (JP_EDGE_SERVED=DIR npm run edge) and for tests.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ALWAYS_SERVED, BUILTIN_COMPONENTS, BuildError, checkExports, describeComponents, removeServed, transpileComponent, userComponents, writeServed } from './components.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const target = process.env.CARGO_TARGET_DIR ?? join(root, 'target');
const run = (cmd, args, opts = {}) => {
  console.log(`$ ${cmd} ${args.join(' ')}`);
  execFileSync(cmd, args, { stdio: 'inherit', cwd: root, ...opts });
};
const output = (cmd, args) => {
  try { return execFileSync(cmd, args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }); } catch { return ''; }
};

/**
 * Shrink the bound jp-web module with binaryen's `wasm-opt -Oz` (the npm `binaryen` that jco
 * brings, pinned by the lock file): what a page downloads first (BENCHMARKS.md, PAGE-load-*).
 * It takes two minutes, so its output is kept in the target directory by the input's digest and
 * reused while jp-web is unchanged. The features are the ones rustc's wasm32 target emits.
 */
function optimizeForSize(file) {
  const digest = createHash('sha256').update(readFileSync(file)).digest('hex');
  const kept = join(target, 'jp-web-opt', `${digest}.wasm`);
  if (!existsSync(kept)) {
    mkdirSync(dirname(kept), { recursive: true });
    const features = ['bulk-memory', 'mutable-globals', 'sign-ext', 'nontrapping-float-to-int', 'multivalue', 'reference-types'];
    run(join(root, 'node_modules/.bin/wasm-opt'), ['-Oz', ...features.map((f) => `--enable-${f}`), file, '-o', `${kept}.tmp`]);
    renameSync(`${kept}.tmp`, kept);
  }
  copyFileSync(kept, file);
}

/** `--component [NAME=]PATH` (repeatable) and `--served-out DIR`, as `--flag value` or `--flag=value`. */
function options(argv) {
  const specs = [];
  let servedOut = null;
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].startsWith('--') && argv[i].includes('=') ? [argv[i].slice(0, argv[i].indexOf('=')), argv[i].slice(argv[i].indexOf('=') + 1)] : [argv[i], null];
    if (flag !== '--component' && flag !== '--served-out') {
      throw new BuildError(`unknown argument ${argv[i]}; the build takes --component [NAME=]PATH.wasm (repeatable) and --served-out DIR`);
    }
    const value = inline ?? argv[++i];
    if (value === undefined || value === '') throw new BuildError(`${flag} needs a value: ${flag === '--component' ? '--component [NAME=]PATH.wasm' : '--served-out DIR'}`);
    if (flag === '--component') specs.push(value);
    else servedOut = resolve(value);
  }
  if (servedOut !== null && specs.length === 0) throw new BuildError('--served-out DIR builds the --component ones only: name at least one');
  return { specs, servedOut };
}

async function main() {
  // What the user asked for is checked before anything is built.
  const { specs, servedOut } = options(process.argv.slice(2));
  const user = userComponents(specs);
  const jco = join(root, 'node_modules/.bin/jco');
  if (!existsSync(jco)) run('npm', ['install', '--no-audit', '--no-fund']);
  for (const c of user) checkExports(jco, c);

  if (servedOut !== null) {
    // Only the user's components, beside the build in www/ (whose jp-web describes them).
    if (!existsSync(join(root, 'www/pkg/jp_web_bg.wasm')) || !existsSync(join(root, 'www/components/fs/cores.json'))) {
      throw new BuildError('--served-out describes the components with the build in www/: run `npm run build` first');
    }
    removeServed(servedOut);
    served(jco, user, servedOut);
    console.log(`built ${user.map((c) => c.name).join(', ')} into ${servedOut} (served.json, served.js)`);
    return;
  }

  // Toolchain, idempotently.
  const installed = output('rustup', ['target', 'list', '--installed']);
  for (const t of ['wasm32-unknown-unknown', 'wasm32-wasip2']) {
    if (!installed.split('\n').includes(t)) run('rustup', ['target', 'add', t]);
  }
  const pinned = /^wasm-bindgen = "=([0-9.]+)"/m.exec(readFileSync(join(root, 'Cargo.toml'), 'utf8'))[1];
  if (!output('wasm-bindgen', ['--version']).trim().endsWith(` ${pinned}`)) {
    // Not --locked: a locked dependency of this version is no longer in the registry.
    run('cargo', ['install', 'wasm-bindgen-cli', '--version', pinned]);
  }

  // Headless Chromium for the browser tests (Debian packages).
  if (!existsSync('/usr/bin/chromium') || !existsSync('/usr/bin/chromedriver')) {
    const sudo = process.getuid?.() === 0 ? [] : ['sudo'];
    const apt = (...args) => run(sudo[0] ?? 'apt-get', sudo.length ? ['apt-get', ...args] : args);
    apt('update', '-qq');
    apt('install', '-y', '-qq', 'chromium', 'chromium-driver');
  }

  // jp-web → www/pkg
  run('cargo', ['build', '-p', 'jp-web', '--target', 'wasm32-unknown-unknown', '--profile', 'web', '--locked']);
  rmSync(join(root, 'www/pkg'), { recursive: true, force: true });
  run('wasm-bindgen', ['--target', 'web', '--out-dir', join(root, 'www/pkg'),
    join(target, 'wasm32-unknown-unknown/web/jp_web.wasm')]);
  optimizeForSize(join(root, 'www/pkg/jp_web_bg.wasm'));
  // Its argument validator (web/validate, jp-core with the jsonschema crate) → www/pkg/validate:
  // a module of its own, which a page loads after its first screen.
  run('cargo', ['build', '-p', 'jp-validate', '--target', 'wasm32-unknown-unknown', '--profile', 'web', '--locked']);
  run('wasm-bindgen', ['--target', 'web', '--out-dir', join(root, 'www/pkg/validate'),
    join(target, 'wasm32-unknown-unknown/web/jp_validate.wasm')]);

  // Guest components → www/components/<name>/ (the same nested build native/build.rs runs). The
  // directory is the build's alone: emptied first, so nothing of an earlier build is left.
  const guestsTarget = join(target, 'jp-guests');
  run('cargo', ['build', '--release', '--locked', '--target', 'wasm32-wasip2',
    '--manifest-path', join(root, 'tools/guests/Cargo.toml'), '--target-dir', guestsTarget]);
  const built = join(guestsTarget, 'wasm32-wasip2/release');
  const components = join(root, 'www/components');
  rmSync(components, { recursive: true, force: true });
  for (const [name, file] of BUILTIN_COMPONENTS) transpileComponent({ jco, run, name, wasm: join(built, file), dir: components });
  // The user's components and the registry (empty without --component).
  served(jco, user, components);

  // The Worker a page runs component calls in, bundled: a module worker gets no import map.
  const { build } = await import('esbuild');
  await build({
    entryPoints: [join(root, 'www/call-worker.js')], bundle: true, format: 'esm', platform: 'browser',
    outfile: join(root, 'www/call-worker.bundle.js'), logLevel: 'warning',
  });
  // jco's transpiler, for a component given as bytes (`registerComponent(name, bytes)`): bundled
  // with the browser WASI shim into www/jco/, beside its core modules, so that a Worker (which
  // gets no import map) and Node load it alike — on first use only (3.5 MB).
  const vendor = join(root, 'node_modules/@bytecodealliance/jco-transpile/vendor');
  rmSync(join(root, 'www/jco'), { recursive: true, force: true });
  mkdirSync(join(root, 'www/jco'), { recursive: true });
  await build({
    entryPoints: [join(vendor, 'js-component-bindgen-component.js')], bundle: true, format: 'esm', platform: 'browser',
    outfile: join(root, 'www/jco/js-component-bindgen-component.js'), logLevel: 'error',
    external: ['node:*'], // its Node branch (reading its core modules from disk) stays Node's
  });
  for (const f of readdirSync(vendor).filter((f) => f.startsWith('js-component-bindgen-component.') && f.endsWith('.wasm'))) {
    copyFileSync(join(vendor, f), join(root, 'www/jco', f));
  }
  console.log(`built www/pkg, www/components${user.length ? ` (served: ${user.map((c) => c.name).join(', ')})` : ''} and www/call-worker.bundle.js`);
}

/** Transpile the user's components into `dir`, describe them (no tool served twice, the builtin
 * ones' included), and write the registry. */
function served(jco, user, dir) {
  writeServed(dir, []); // until they are all built and described
  for (const { name, path } of user) transpileComponent({ jco, run, name, wasm: path, dir });
  if (user.length > 0) {
    const builtins = ALWAYS_SERVED.map((name) => ({ name, dir: join(root, 'www/components') }));
    const tools = describeComponents([...builtins, ...user.map(({ name }) => ({ name, dir }))]);
    for (const { name } of user) console.log(`${name}: ${tools[name].join(', ')}`);
  }
  writeServed(dir, user.map((c) => c.name));
}

try {
  await main();
} catch (e) {
  if (!(e instanceof BuildError)) throw e;
  console.error(`build: ${e.message}`);
  process.exit(2);
}
