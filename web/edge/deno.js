// The edge function on Deno: `deno task --config web/edge/deno.json edge --port N` (the task has
// the import map and the permissions; or `npm run edge -- --engine deno`). Projects live in Deno
// KV (Deno's default local one, or the SQLite file JP_EDGE_KV; on Deno Deploy the managed KV).
// JP_EDGE_TOKEN / JP_EDGE_TOKENS: the bearer tokens every route needs. The secrets the operator's
// policy names (`network.envs` of JP_EDGE_POLICY) come from Deno.env: the task may read only the
// variables its --allow-env lists, so name them in JP_EDGE_DENO_ENVS, each after a comma
// (`JP_EDGE_DENO_ENVS=,API_TOKEN`; `npm run edge` sets it from the policy). They are read at
// start: one Deno may not read stops it, saying so. The task's --allow-net is 127.0.0.1 (the
// tests' servers): a tool's HTTP to any other host needs it widened. JP_EDGE_SERVED: the
// directory of the user's components it serves (default www/components; inside the repository,
// which is what the task may read).
import { createHandler, DEADLINE_MS, LOOPBACK_HOSTS } from './handler.js';
import { projectChanged, secretsNote } from './common.js';
import { compiledModules } from './modules.mjs';

/** KV values are at most 64 KiB: a file is kept in chunks of this many bytes. */
const CHUNK = 60 * 1024;

/** Projects in Deno KV: `[jp, id, "meta", path]` → {dir}, {data} (a file up to 60 KiB) or
 * {chunks} with `[jp, id, "data", path, i]` → bytes. Every write is one atomic KV commit that
 * also sets `[jp, id, "version"]`: that key's versionstamp is the project's version, and a
 * batch with an expected version checks it in the same commit (isolates writing one project on
 * Deno Deploy cannot silently lose each other's writes). */
export function kvStorage(kv) {
  return (id) => {
    const versionKey = ['jp', id, 'version'];
    const meta = (path) => ['jp', id, 'meta', path];
    const data = (path, i) => ['jp', id, 'data', path, i];
    async function read(path, m) {
      if (m.dir) return 'dir';
      if (m.data) return m.data; // small files live in their meta entry: one read lists them
      const parts = [];
      for (let i = 0; i < m.chunks; i++) parts.push((await kv.get(data(path, i))).value);
      const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
      let at = 0;
      for (const p of parts) { out.set(p, at); at += p.length; }
      return out;
    }
    async function stage(op, path, value) {
      const old = (await kv.get(meta(path))).value;
      for (let i = 0; i < (old?.chunks ?? 0); i++) op.delete(data(path, i));
      if (value === null) { op.delete(meta(path)); return; }
      if (value === 'dir') { op.set(meta(path), { dir: true }); return; }
      if (value.length <= CHUNK) { op.set(meta(path), { data: value }); return; }
      const chunks = Math.ceil(value.length / CHUNK);
      for (let i = 0; i < chunks; i++) op.set(data(path, i), value.slice(i * CHUNK, (i + 1) * CHUNK));
      op.set(meta(path), { chunks });
    }
    // `expected`: a version() reading ('none' before the first write), checked atomically.
    const commit = async (op, expected) => {
      if (expected !== undefined) op.check({ key: versionKey, versionstamp: expected === 'none' ? null : expected });
      op.set(versionKey, true);
      const r = await op.commit();
      if (!r.ok) throw expected !== undefined ? projectChanged() : new Error('Deno KV refused the commit');
    };
    return {
      get: async (path) => {
        const m = (await kv.get(meta(path))).value;
        return m ? read(path, m) : undefined;
      },
      put: async (path, value) => { const op = kv.atomic(); await stage(op, path, value); await commit(op); },
      delete: async (path) => { const op = kv.atomic(); await stage(op, path, null); await commit(op); },
      list: async () => {
        const out = [];
        for await (const e of kv.list({ prefix: ['jp', id, 'meta'] })) out.push([e.key[3], await read(e.key[3], e.value)]);
        return out;
      },
      version: async () => (await kv.get(versionKey)).versionstamp ?? 'none',
      batch: async (ops, expected) => {
        const op = kv.atomic();
        for (const { path, value } of ops) await stage(op, path, value);
        await commit(op, expected);
      },
    };
  };
}

if (import.meta.main) {
  const i = Deno.args.indexOf('--port');
  const port = i >= 0 ? Number(Deno.args[i + 1]) : 8787;
  const env = (k) => Deno.env.get(k) ?? '';
  const { jp, validator, components } = await compiledModules((url) => Deno.readFile(url), { faults: env('JP_EDGE_FAULTS') === '1', served: env('JP_EDGE_SERVED') });
  const kv = await Deno.openKv(env('JP_EDGE_KV') || undefined);
  // A secret of the policy: Deno.env, if this process may read it.
  const secret = (name) => {
    try {
      return Deno.env.get(name);
    } catch (e) {
      throw new Error(`the operator's policy (JP_EDGE_POLICY) names ${name} (access.secrets or network.envs), but Deno may not read it (${e.name}): add it to --allow-env (with \`deno task edge\`: JP_EDGE_DENO_ENVS=,${name})`);
    }
  };
  const handler = createHandler({ jp, validator, components, storage: kvStorage(kv), bench: env('JP_EDGE_BENCH') === '1', token: env('JP_EDGE_TOKEN'), tokens: env('JP_EDGE_TOKENS'), policy: env('JP_EDGE_POLICY'), allowedOrigins: env('JP_EDGE_ALLOWED_ORIGINS'), hosts: env('JP_EDGE_HOSTS') || LOOPBACK_HOSTS, env: secret, stateKey: env('JP_EDGE_STATE_KEY'), limits: { memoryMiB: Number(env('JP_EDGE_MEMORY_MIB') || 0), deadlineMs: Number(env('JP_EDGE_DEADLINE_MS') || DEADLINE_MS) } });
  // A promise the WASI shim leaves rejected (a component's sleep drops its pollable while the
  // shim still waits on it) must not end the function: Deno ends the process on one.
  globalThis.addEventListener('unhandledrejection', (e) => {
    e.preventDefault();
    console.error(`jp edge function (deno): unhandled rejection: ${JSON.stringify(String(e.reason?.message ?? e.reason)).slice(0, 300)}`);
  });
  let secrets;
  try {
    secrets = await handler.secrets();
  } catch (e) {
    console.error(`jp edge function (deno): ${e.message}`);
    Deno.exit(1);
  }
  Deno.serve({ hostname: '127.0.0.1', port, onListen: ({ port: p }) => console.log(`jp edge function (deno) on http://127.0.0.1:${p}/${secretsNote(secrets)}`) }, (req) => handler.fetch(req));
}
