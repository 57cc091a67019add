// The wasm modules for engines that may compile wasm at run time (Node, Deno): read from the
// files the build wrote (www/pkg, www/components/<name>/cores.json) and compiled once.
import { componentNames, FAULT_TOOLS } from './common.js';

const www = new URL('../../www/', import.meta.url);

/** `{ jp, components }` for `createHandler`; `readFile(url)` gives a file's bytes. */
export async function compiledModules(readFile, { faults = false } = {}) {
  const jp = await WebAssembly.compile(await readFile(new URL('pkg/jp_web_bg.wasm', www)));
  const components = {};
  for (const name of componentNames(faults)) {
    const dir = new URL(`components/${name}/`, www);
    const files = JSON.parse(new TextDecoder().decode(await readFile(new URL('cores.json', dir))));
    const cores = {};
    for (const f of files) cores[f] = await WebAssembly.compile(await readFile(new URL(f, dir)));
    components[name] = { module: await import(new URL(`${name}.js`, dir).href), cores, tools: name === 'faults' ? FAULT_TOOLS : null };
  }
  return { jp, components };
}
