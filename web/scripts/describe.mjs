// The tools of transpiled components, described as every engine describes them: `node
// web/scripts/describe.mjs NAME=DIR …` registers each `DIR/NAME/NAME.js` (its cores compiled from
// cores.json) with a Host (www/jp.js: the component's own jp:tool/describe, each tool's
// description checked by the core) and prints `{ "NAME": [tool, …] }`. Run by the build
// (components.mjs) in the pinned Node, whose V8 has JSPI.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Host, loadJp } from '../../www/jp.js';

await loadJp(
    await WebAssembly.compile(await readFile(new URL('../../www/pkg/jp_web_bg.wasm', import.meta.url))),
    await WebAssembly.compile(await readFile(new URL('../../www/pkg/validate/jp_validate_bg.wasm', import.meta.url))),
  );
const tools = {};
for (const spec of process.argv.slice(2)) {
  const eq = spec.indexOf('=');
  const [name, dir] = [spec.slice(0, eq), join(spec.slice(eq + 1), spec.slice(0, eq))];
  if (!existsSync(join(dir, 'cores.json'))) {
    console.error(`component '${name}' is not built (${dir}/cores.json is missing): run \`npm run build\``);
    process.exit(1);
  }
  try {
    const cores = {};
    for (const f of JSON.parse(await readFile(join(dir, 'cores.json'), 'utf8'))) cores[f] = await WebAssembly.compile(await readFile(join(dir, f)));
    // A host of its own: a name another component serves is for the build to refuse (components.mjs).
    const host = await Host.create({});
    tools[name] = await host.registerComponent(name, pathToFileURL(join(dir, `${name}.js`)), cores);
  } catch (e) {
    console.error(`component '${name}' (${dir}) could not be described: ${e?.message ?? e}; its jp:tool/describe must answer {"tools": [{name, summary, description, parameters}]} (RFD D06)`);
    process.exit(1);
  }
}
console.log(JSON.stringify(tools));
