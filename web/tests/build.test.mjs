// `npm run build -- --component [NAME=]PATH.wasm`: what it refuses, each with what to do instead
// (checked before anything is built or written), and the registry it writes every time, so
// that nothing of an earlier build stays served. Builds only into temporary directories
// (`--served-out DIR`): the rest of the suite sees the plain build in www/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const root = join(import.meta.dirname, '..', '..');
const run = promisify(execFile);
const build = (...args) => run(process.execPath, [join(root, 'web/scripts/build.mjs'), ...args], { cwd: root });
let dir;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'jp-build-test-'));
  copyFileSync(join(root, 'www/components/fetch.wasm'), join(dir, 'mine.wasm'));
  copyFileSync(join(root, 'www/components/fetch.wasm'), join(dir, 'other.wasm'));
  copyFileSync(join(root, 'www/components/fs.wasm'), join(dir, 'myfs.wasm'));
  writeFileSync(join(dir, 'text.wasm'), 'not wasm\n');
});
after(() => rmSync(dir, { recursive: true, force: true }));

test('bad --component input: a clear error naming the fix, exit code 2, nothing written', async () => {
  const out = join(dir, 'refused');
  const cases = [
    [['--component', join(dir, 'missing.wasm')], /no file .*missing\.wasm; give the path of a WASI p2 component/],
    [['--component', join(dir, 'text.wasm')], /is not a WebAssembly file/],
    [['--component', join(root, 'www/components/fs/fs.core.wasm')], /is a core WebAssembly module, not a component; build it for wasm32-wasip2 .* or wrap it: wasm-tools component new/],
    [['--component', `fs=${join(dir, 'mine.wasm')}`], /'fs' is the name of a builtin component; name yours otherwise: --component OTHER=/],
    [['--component', join(dir, 'mine.wasm'), '--component', `mine=${join(dir, 'other.wasm')}`], /'mine' is also the name of --component .*mine\.wasm; name one of them otherwise/],
    [['--component', `9lives=${join(dir, 'mine.wasm')}`], /'9lives' cannot be a component's name/],
    // The faults component lists no tools of its own (the edge is given FAULT_TOOLS).
    [['--component', `spinner=${join(root, 'www/components/faults.wasm')}`], /does not export jp:tool\/describe, which lists its tools; build it against world `described-tool` of wit\/tool/],
    [['--component'], /--component needs a value/],
    [['--components', 'x.wasm'], /unknown argument --components/],
  ];
  for (const [args, message] of cases) {
    const failed = await build('--served-out', out, ...args).then(() => null, (e) => e);
    assert.ok(failed, `${args.join(' ')} must fail`);
    assert.equal(failed.code, 2, `${args.join(' ')}: ${failed.stderr}`);
    assert.match(failed.stderr, message);
    assert.doesNotMatch(failed.stderr, /\n\s+at /, 'a message, not a stack');
  }
  assert.equal(existsSync(out), false, 'nothing was written');
});

test("a tool name a served component has already is refused (the builtin fs's here)", async () => {
  const failed = await build('--served-out', join(dir, 'clash'), '--component', join(dir, 'myfs.wasm')).then(() => null, (e) => e);
  assert.equal(failed?.code, 2, failed?.stderr);
  assert.match(failed.stderr, /component 'myfs' serves a tool 'fs_read_file', which component 'fs' serves already/);
  assert.deepEqual(JSON.parse(readFileSync(join(dir, 'clash', 'served.json'), 'utf8')), [], 'nothing is served');
});

test('every build writes the registry anew: what an earlier build served is gone', async () => {
  const out = join(dir, 'served');
  const { stdout } = await build('--served-out', out, '--component', join(dir, 'mine.wasm'));
  assert.match(stdout, /mine: api_get, get, read_env/);
  assert.deepEqual(JSON.parse(readFileSync(join(out, 'served.json'), 'utf8')), ['mine']);
  assert.ok(existsSync(join(out, 'mine', 'mine.js')) && existsSync(join(out, 'mine.wasm')));
  await build('--served-out', out, '--component', `again=${join(dir, 'other.wasm')}`);
  assert.deepEqual(JSON.parse(readFileSync(join(out, 'served.json'), 'utf8')), ['again']);
  assert.match(readFileSync(join(out, 'served.js'), 'utf8'), /'\.\/again\/again\.js'/);
  assert.equal(existsSync(join(out, 'mine')), false, 'the earlier component is removed');
  assert.equal(existsSync(join(out, 'mine.wasm')), false);
});

test('the plain build writes a registry too (www/components/served.json, served.js)', () => {
  const names = JSON.parse(readFileSync(join(root, 'www/components/served.json'), 'utf8'));
  assert.ok(Array.isArray(names), JSON.stringify(names));
  assert.match(readFileSync(join(root, 'www/components/served.js'), 'utf8'), /^export default \{/m);
});
