// The components the build transpiles — the builtin guests and the user's own (`npm run build --
// --component [NAME=]PATH.wasm`) — and the registry of those every engine serves beside the
// builtin ones:
//   <dir>/served.json  the names, `["mine", …]`: what Node, Deno (web/edge/modules.mjs) and the
//                      playground (www/app.js) read
//   <dir>/served.js    the same as static imports of each one's JS module and cores.js, for
//                      workerd (web/edge/workerd.js), which may not compile wasm at run time
// Each component is transpiled exactly like the builtin ones: jco with the JSPI flags of
// www/jspi.js into <dir>/<name>/, its core modules instrumented with fuel checks
// (tools/wasm-limits), cores.json and cores.js beside them, the component itself at <dir>/<name>.wasm.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { JSPI_FLAGS } from '../../www/jspi.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The builtin guests (tools/guests, built for wasm32-wasip2): name → the cargo output file. */
export const BUILTIN_COMPONENTS = [
  ['fs', 'jp_fs_component.wasm'], ['learn', 'jp_tool_learn.wasm'], ['faults', 'jp_tool_faults.wasm'],
  ['bench', 'jp_tool_bench.wasm'], ['media', 'jp_tool_media.wasm'], ['fetch', 'jp_tool_fetch.wasm'],
  ['calc', 'jp_tool_calc.wasm'], ['faults-stateful', 'jp_tool_faults_stateful.wasm'],
];
/** The builtin components every engine and the playground serve, whatever else they serve. */
export const ALWAYS_SERVED = ['fs', 'learn'];

/** A mistake in what the build was asked to do: its message says what to do instead. */
export class BuildError extends Error {}

/** A component's name: a file and module name in every engine, so letters, digits, '_' and '-'. */
const NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

/**
 * The `--component [NAME=]PATH.wasm` arguments, checked before anything is built: the file
 * exists and is a component, each name is one of its own (not a builtin's, not another's).
 * Returns `[{ name, path }]`.
 */
export function userComponents(specs) {
  const builtins = new Set(BUILTIN_COMPONENTS.map(([name]) => name));
  const seen = new Map();
  return specs.map((spec) => {
    const eq = spec.indexOf('=');
    // `NAME=PATH` only when what precedes '=' is a name (a path may contain '=' too).
    const named = eq > 0 && NAME.test(spec.slice(0, eq));
    if (eq > 0 && !named && !spec.slice(0, eq).includes('/') && !existsSync(spec)) {
      throw new BuildError(`--component ${spec}: '${spec.slice(0, eq)}' cannot be a component's name (letters, digits, '_' and '-', starting with a letter, at most 64)`);
    }
    const path = resolve(named ? spec.slice(eq + 1) : spec);
    const shown = named ? spec.slice(eq + 1) : spec;
    const name = named ? spec.slice(0, eq) : basename(path).replace(/\.wasm$/i, '').replace(/[^A-Za-z0-9_-]/g, '_');
    if (!NAME.test(name)) {
      throw new BuildError(`--component ${spec}: '${name}' cannot be a component's name (letters, digits, '_' and '-', starting with a letter, at most 64); name it: --component NAME=${shown}`);
    }
    if (!existsSync(path) || !statSync(path).isFile()) {
      throw new BuildError(`--component ${spec}: no file ${path}; give the path of a WASI p2 component (.wasm), e.g. one built with cargo build --target wasm32-wasip2`);
    }
    checkComponentBytes(spec, path);
    if (builtins.has(name)) {
      throw new BuildError(`--component ${spec}: '${name}' is the name of a builtin component; name yours otherwise: --component OTHER=${shown}`);
    }
    if (seen.has(name)) {
      throw new BuildError(`--component ${spec}: '${name}' is also the name of --component ${seen.get(name)}; name one of them otherwise: --component OTHER=${shown}`);
    }
    seen.set(name, spec);
    return { name, path };
  });
}

/** The file is a WebAssembly component (layer 1), not a core module or something else. */
function checkComponentBytes(spec, path) {
  const head = readFileSync(path).subarray(0, 8);
  const wasm = head.length === 8 && head[0] === 0 && head[1] === 0x61 && head[2] === 0x73 && head[3] === 0x6d;
  if (!wasm) {
    throw new BuildError(`--component ${spec}: ${path} is not a WebAssembly file; give a WASI p2 component (.wasm), e.g. one built with cargo build --target wasm32-wasip2`);
  }
  if (head[6] !== 1 || head[7] !== 0) {
    throw new BuildError(`--component ${spec}: ${path} is a core WebAssembly module, not a component; build it for wasm32-wasip2 (cargo build --target wasm32-wasip2), or wrap it: wasm-tools component new ${basename(path)} -o component.wasm`);
  }
}

/**
 * What a user's component must export, read from its WIT (`jco wit`): the seed's `run` (or
 * `jp:tool/content`), and `jp:tool/describe`, which lists its tools (the engines and the
 * playground are given no list of their own for a user's component).
 */
export function checkExports(jco, { name, path }) {
  let wit;
  try {
    wit = execFileSync(jco, ['wit', path], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    throw new BuildError(`--component ${name}: jco cannot read ${path} as a component (${String(e.stderr || e.message).trim().split('\n')[0]}); give a WASI p2 component built against wit/tool`);
  }
  const exports = [...wit.matchAll(/^\s*export ([^:;\s]+(?::[^;\s]+)?)/gm)].map((m) => m[1]);
  const has = (prefix) => exports.some((e) => e === prefix || e.startsWith(`${prefix}@`));
  if (!has('run') && !has('jp:tool/content')) {
    throw new BuildError(`--component ${name}: ${path} exports no tool (neither \`run\` of world \`tool\` nor jp:tool/content); build it against wit/tool (world \`described-tool\`)`);
  }
  if (!has('jp:tool/describe')) {
    throw new BuildError(`--component ${name}: ${path} does not export jp:tool/describe, which lists its tools; build it against world \`described-tool\` of wit/tool and implement \`exports::jp::tool::describe::Guest\` (\`schema()\` returns its D06 description, {"tools": [{name, summary, description, parameters}]})`);
  }
}

/**
 * Transpile the component at `wasm` into `<dir>/<name>/` as every component of the build is: jco
 * with the JSPI flags, fuel checks in its core modules, cores.json and cores.js; the component
 * itself copied to `<dir>/<name>.wasm` (what a user loads into the playground).
 */
export function transpileComponent({ jco, run, name, wasm, dir }) {
  const out = join(dir, name);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  run(jco, ['transpile', wasm, '-o', out, '--name', name, '--instantiation', 'async', ...JSPI_FLAGS, '--quiet']);
  copyFileSync(wasm, join(dir, `${name}.wasm`));
  // Fuel checks at every loop header, so a call can be stopped at its deadline wherever
  // synchronous wasm cannot be interrupted otherwise (tools/wasm-limits).
  const coreFiles = readdirSync(out).filter((f) => f.endsWith('.wasm')).map((f) => join(out, f));
  run('cargo', ['run', '--quiet', '--release', '--locked', '-p', 'jp-wasm-limits', '--', ...coreFiles]);
  // Its core modules, for embedders that may not compile wasm at run time (workerd): cores.js
  // imports each as a module (`{ file: WebAssembly.Module }`); cores.json lists them for those
  // that compile the files themselves (Node, Deno).
  const cores = readdirSync(out).filter((f) => f.endsWith('.wasm')).sort();
  writeFileSync(join(out, 'cores.json'), `${JSON.stringify(cores)}\n`);
  writeFileSync(join(out, 'cores.js'), `// Generated by web/scripts/build.mjs: the core modules of ${name}, imported as modules.\n${
    cores.map((f, i) => `import m${i} from './${f}';`).join('\n')}\nexport default { ${cores.map((f, i) => `'${f}': m${i}`).join(', ')} };\n`);
}

/** The names `<dir>/served.json` lists ([] when there is none). */
export function servedNames(dir) {
  const file = join(dir, 'served.json');
  return existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : [];
}

/** Remove what `<dir>/served.json` lists (the user components of an earlier build). */
export function removeServed(dir) {
  for (const name of servedNames(dir)) {
    if (!NAME.test(name)) continue;
    rmSync(join(dir, name), { recursive: true, force: true });
    rmSync(join(dir, `${name}.wasm`), { force: true });
  }
}

/** Write the registry of the user's components in `dir`: served.json and served.js. */
export function writeServed(dir, names) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'served.json'), `${JSON.stringify(names)}\n`);
  writeFileSync(join(dir, 'served.js'), `// Generated by web/scripts/build.mjs: the user's components (--component) every engine serves
// beside the builtin ones, as modules (workerd may not compile wasm at run time). Names: served.json.
${names.map((n, i) => `import * as module${i} from './${n}/${n}.js';\nimport cores${i} from './${n}/cores.js';`).join('\n')}
export default { ${names.map((n, i) => `${JSON.stringify(n)}: { module: module${i}, cores: cores${i} }`).join(', ')} };
`);
}

/**
 * The tools of each component in `specs` (`[{ dir, name }]`), described as the engines will
 * describe them (www/jp.js `registerComponent`: the component's own jp:tool/describe, each
 * tool's description checked by the core), in the pinned Node (JSPI) — and no tool served twice.
 * Returns `{ name: [tool, …] }`.
 */
export function describeComponents(specs) {
  const node = join(root, 'node_modules/node/bin/node');
  let out;
  try {
    out = execFileSync(node, ['--import', join(root, 'web/edge/browser-wasi.mjs'), join(root, 'web/scripts/describe.mjs'), ...specs.map(({ dir, name }) => `${name}=${dir}`)], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    throw new BuildError(String(e.stderr || e.message).trim());
  }
  const tools = JSON.parse(out);
  const owner = new Map();
  for (const [name, names] of Object.entries(tools)) {
    for (const tool of names) {
      if (owner.has(tool)) {
        throw new BuildError(`component '${name}' serves a tool '${tool}', which component '${owner.get(tool)}' serves already: a served tool name must be unique; rename the tool in the component's describe (and its run)`);
      }
      owner.set(tool, name);
    }
  }
  return tools;
}
