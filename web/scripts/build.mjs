// Builds what the page and the edge handler load, into www/ (git-ignored outputs):
//   www/pkg/         jp-web for wasm32-unknown-unknown, bound by wasm-bindgen (--target web)
//   www/components/  the guest components (tools/guests, wasm32-wasip2) transpiled by jco
// Installs what it needs first (rustup targets, wasm-bindgen-cli at the pinned version, the npm
// packages, Debian's chromium and chromium-driver).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const target = process.env.CARGO_TARGET_DIR ?? join(root, 'target');
const run = (cmd, args, opts = {}) => {
  console.log(`$ ${cmd} ${args.join(' ')}`);
  execFileSync(cmd, args, { stdio: 'inherit', cwd: root, ...opts });
};
const output = (cmd, args) => {
  try { return execFileSync(cmd, args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }); } catch { return ''; }
};

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
run('cargo', ['build', '-p', 'jp-web', '--target', 'wasm32-unknown-unknown', '--release', '--locked']);
rmSync(join(root, 'www/pkg'), { recursive: true, force: true });
run('wasm-bindgen', ['--target', 'web', '--out-dir', join(root, 'www/pkg'),
  join(target, 'wasm32-unknown-unknown/release/jp_web.wasm')]);

// Guest components → www/components/<name>/ (the same nested build native/build.rs runs).
const guestsTarget = join(target, 'jp-guests');
run('cargo', ['build', '--release', '--locked', '--target', 'wasm32-wasip2',
  '--manifest-path', join(root, 'tools/guests/Cargo.toml'), '--target-dir', guestsTarget]);
const built = join(guestsTarget, 'wasm32-wasip2/release');
const jco = join(root, 'node_modules/.bin/jco');
if (!existsSync(jco)) run('npm', ['install', '--no-audit', '--no-fund']);
for (const [name, file] of [['fs', 'jp_fs_component.wasm'], ['faults', 'jp_tool_faults.wasm'], ['bench', 'jp_tool_bench.wasm']]) {
  const out = join(root, 'www/components', name);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  run(jco, ['transpile', join(built, file), '-o', out, '--name', name, '--instantiation', 'async', '--quiet']);
}
console.log('built www/pkg and www/components');
