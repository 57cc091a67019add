// describeCall in Node: the permission question's content comes from the core (the same function
// as jp query's), so the page shows what a yes grants — the path in full, the long content cut
// and named.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { describeCall, loadJp } from '../../www/jp.js';

before(async () => {
  await loadJp(
    await WebAssembly.compile(await readFile(new URL('../../www/pkg/jp_web_bg.wasm', import.meta.url))),
    await WebAssembly.compile(await readFile(new URL('../../www/pkg/validate/jp_validate_bg.wasm', import.meta.url))),
  );
});

test('the path comes first and whole; a long content is cut and named', () => {
  const summary = describeCall('fs_create_file', { content: 'A'.repeat(5000), path: '.jp/config.toml' });
  assert.equal(summary.name, 'fs_create_file');
  assert.deepEqual(summary.lines, ['path: ".jp/config.toml"', `content: "${'A'.repeat(200)}…`]);
  assert.deepEqual(summary.cut, [{ key: 'content', characters: 5000, shown: 200 }]);
  assert.deepEqual(summary.notes, ['(content cut: 5000 characters; shown: first 200)']);
});

test('commands, their arguments and nested paths are shown in full; nothing invisible passes', () => {
  const args = Array.from({ length: 80 }, (_, i) => `--flag-${i}`);
  const summary = describeCall('run', { action: 'spawn', program: 'cargo', args, edits: [{ path: 'a\u202e.rs', text: 'x' }] });
  assert.deepEqual(summary.lines.slice(0, 4), [
    'action: "spawn"', `args: ${JSON.stringify(args)}`, 'edits[0].path: "a\\u{202e}.rs"', 'program: "cargo"',
  ]);
  assert.deepEqual(summary.cut, []);
});
