// Node resolves @bytecodealliance/preview2-shim to its Node build, in which a component's
// `exit` ends the process, its clocks, poll and stdin block the event loop (Atomics.wait, so the
// deadline's watchdog never runs), and its stdout is written raw to the operator's terminal. A
// component at the edge must do none of that: every engine runs the browser build (Deno by its
// import map, workerd by esbuild's browser conditions, the page by its import map), and this
// makes Node do the same — `node --import ./web/edge/browser-wasi.mjs …` (edge.mjs, the npm
// scripts and the tests start Node so). `www/instance.js` refuses to host a component under the
// Node build.
import { registerHooks } from 'node:module';

const browser = new URL('../../node_modules/@bytecodealliance/preview2-shim/dist/browser/', import.meta.url);

registerHooks({
  resolve(specifier, context, next) {
    const m = /^@bytecodealliance\/preview2-shim\/([a-z-]+)$/.exec(specifier);
    if (m) return { url: new URL(`${m[1]}.js`, browser).href, shortCircuit: true };
    return next(specifier, context);
  },
});
