// The edge function on workerd (Cloudflare's Workers runtime), bundled by web/scripts/edge.mjs.
// Wasm is imported as modules (workerd forbids compiling it at run time). A project lives in a
// Durable Object (one per project id, SQLite-backed storage): the worker routes each call that
// names a project to it, so the project's calls run there one at a time.
import { DurableObject } from 'cloudflare:workers';
import { bodyText, createHandler, DEADLINE_MS, PROJECT_ID, tooLarge } from './handler.js';
import { FAULT_TOOLS, knowledgeBase, projectChanged } from './common.js';
import jp from '../../www/pkg/jp_web_bg.wasm';
import validator from '../../www/pkg/validate/jp_validate_bg.wasm';
import * as fsModule from '../../www/components/fs/fs.js';
import fsCores from '../../www/components/fs/cores.js';
import * as learnModule from '../../www/components/learn/learn.js';
import learnCores from '../../www/components/learn/cores.js';
import * as faultsModule from '../../www/components/faults/faults.js';
import faultsCores from '../../www/components/faults/cores.js';
import * as mediaModule from '../../www/components/media/media.js';
import mediaCores from '../../www/components/media/cores.js';
import * as fetchModule from '../../www/components/fetch/fetch.js';
import fetchCores from '../../www/components/fetch/cores.js';
import * as calcModule from '../../www/components/calc/calc.js';
import calcCores from '../../www/components/calc/cores.js';
// The user's own components (`npm run build -- --component PATH.wasm`): the registry every build
// writes, `{ name: { module, cores } }` (empty without --component).
import served from '../../www/components/served.js';

// The test components with JP_EDGE_FAULTS=1 (common.js `componentNames`), and the user's.
const components = (env) => ({
  fs: { module: fsModule, cores: fsCores },
  learn: { module: learnModule, cores: learnCores, knowledgeBase: knowledgeBase('learn') },
  ...(env.JP_EDGE_FAULTS === '1'
    ? {
      faults: { module: faultsModule, cores: faultsCores, tools: FAULT_TOOLS },
      media: { module: mediaModule, cores: mediaCores },
      fetch: { module: fetchModule, cores: fetchCores },
      calc: { module: calcModule, cores: calcCores },
    }
    : {}),
  ...served,
});

/** The access settings of a handler (see handler.js): tokens, allowed origins, host names
 * (checked only when JP_EDGE_HOSTS is set: on Cloudflare the platform routes by name), the
 * requestState key, and the Worker's bindings as the environment the policy's secrets
 * (`access.secrets`, `network.envs`) are read from — Workers secrets (`wrangler secret put NAME`) or vars; a
 * binding that is not text (the Durable Object namespace) is none. */
const access = (env) => ({
  token: env.JP_EDGE_TOKEN ?? '', tokens: env.JP_EDGE_TOKENS ?? '', policy: env.JP_EDGE_POLICY ?? '', allowedOrigins: env.JP_EDGE_ALLOWED_ORIGINS ?? '',
  hosts: env.JP_EDGE_HOSTS ? env.JP_EDGE_HOSTS : null, stateKey: env.JP_EDGE_STATE_KEY ?? '',
  env: (name) => (typeof env[name] === 'string' ? env[name] : undefined),
});

const limits = (env) => ({ memoryMiB: Number(env.JP_EDGE_MEMORY_MIB ?? 0), deadlineMs: Number(env.JP_EDGE_DEADLINE_MS || DEADLINE_MS) });

/** A Durable Object's SQLite database as a ProjectStorage; `batch` is one transaction. The
 * version is a counter in memory: a Durable Object is the one writer of its storage and the kept
 * copies live in the same object, so they start again together. */
function sqlStorage(storage) {
  let version = 0;
  const { sql } = storage;
  sql.exec('CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, data BLOB, dir INTEGER NOT NULL DEFAULT 0)');
  const value = (r) => (r.dir ? 'dir' : new Uint8Array(r.data));
  const put = (path, v) => sql.exec('INSERT OR REPLACE INTO files (path, data, dir) VALUES (?, ?, ?)', path, v === 'dir' ? null : v, v === 'dir' ? 1 : 0);
  const del = (path) => sql.exec('DELETE FROM files WHERE path = ?', path);
  return {
    get: async (path) => {
      const [r] = sql.exec('SELECT data, dir FROM files WHERE path = ?', path).toArray();
      return r ? value(r) : undefined;
    },
    put: async (path, v) => { put(path, v); version++; },
    delete: async (path) => { del(path); version++; },
    list: async () => sql.exec('SELECT path, data, dir FROM files').toArray().map((r) => [r.path, value(r)]),
    version: async () => version,
    batch: async (ops, expected) => {
      if (expected !== undefined && expected !== version) throw projectChanged();
      storage.transactionSync(() => {
        for (const { path, value: v } of ops) v === null ? del(path) : put(path, v);
      });
      version++;
    },
  };
}

/** One project: its files and its calls. */
export class Project extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    const storage = sqlStorage(ctx.storage);
    this.handler = createHandler({ jp, validator, components: components(env), storage: () => storage, bench: env.JP_EDGE_BENCH === '1', ...access(env), limits: limits(env) });
  }

  fetch(request) {
    return this.handler.fetch(request);
  }
}

let local; // calls without a project: files for the request only

export default {
  async fetch(request, env) {
    local ??= createHandler({ jp, validator, components: components(env), ...access(env), limits: limits(env) });
    // Refused before anything is read (the project's object checks again).
    const gated = local.gate(request);
    if (gated.response) return gated.response;
    const url = new URL(request.url);
    let project = url.pathname === '/mcp' ? url.searchParams.get('project') : null;
    let forward = request;
    if (['/', '/__bare'].includes(url.pathname) && request.method === 'POST') {
      // The project is named in the body: read it (bounded), then pass the same text on.
      const body = await bodyText(request);
      if (body.tooLarge) return tooLarge();
      try { project = JSON.parse(body.text)?.project ?? null; } catch { project = null; }
      forward = new Request(request.url, { method: 'POST', headers: request.headers, body: body.text });
    }
    if (typeof project === 'string' && PROJECT_ID.test(project)) {
      return env.PROJECT.get(env.PROJECT.idFromName(project)).fetch(forward);
    }
    return local.fetch(forward);
  },
};
