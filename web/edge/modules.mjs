// The wasm modules for engines that may compile wasm at run time (Node, Deno): read from the
// files the build wrote (www/pkg, www/components/<name>/cores.json) and compiled once — the
// builtin components, and the user's own that the registry lists (served.json, written by every
// build: `npm run build -- --component PATH.wasm`).
import { componentNames, FAULT_TOOLS, knowledgeBase } from './common.js';

const www = new URL('../../www/', import.meta.url);

/** `{ jp, validator, components }` for `createHandler`; `readFile(url)` gives a file's bytes. `served`:
 * the directory of the user's components and their served.json (a URL or a path; default
 * www/components/, or JP_EDGE_SERVED as the entries read it). */
export async function compiledModules(readFile, { faults = false, served = null } = {}) {
  const jp = await WebAssembly.compile(await readFile(new URL('pkg/jp_web_bg.wasm', www)));
  const validator = await WebAssembly.compile(await readFile(new URL('pkg/validate/jp_validate_bg.wasm', www)));
  const components = {};
  const compile = async (name, dir, tools = null) => {
    const files = JSON.parse(new TextDecoder().decode(await readFile(new URL('cores.json', dir))));
    const cores = {};
    for (const f of files) cores[f] = await WebAssembly.compile(await readFile(new URL(f, dir)));
    components[name] = { module: await import(new URL(`${name}.js`, dir).href), cores, tools, knowledgeBase: knowledgeBase(name) };
  };
  for (const name of componentNames(faults)) {
    await compile(name, new URL(`components/${name}/`, www), name === 'faults' ? FAULT_TOOLS : null);
  }
  const servedDir = servedUrl(served);
  let names;
  try {
    names = JSON.parse(new TextDecoder().decode(await readFile(new URL('served.json', servedDir))));
  } catch (e) {
    throw new Error(`the registry of served components ${new URL('served.json', servedDir).href} cannot be read (${e?.message ?? e}): run \`npm run build\` (with --component for your own)`);
  }
  for (const name of names) await compile(name, new URL(`${name}/`, servedDir));
  return { jp, validator, components };
}

/** The served components' directory as a URL ending in '/'. */
function servedUrl(served) {
  if (served === null || served === '') return new URL('components/', www);
  if (served instanceof URL) return served.href.endsWith('/') ? served : new URL(`${served.href}/`);
  const path = String(served).replace(/\/*$/, '/');
  return path.startsWith('/') ? new URL(`file://${path}`) : new URL(path, `file://${globalThis.process?.cwd?.() ?? globalThis.Deno?.cwd?.()}/`);
}
