// The edge benchmark's baseline (web/scripts/edge-bench.mjs), served only with JP_EDGE_BENCH=1:
// `POST /__bare` answers from a project's storage with no jp at all, for the same request shape
// as a call. Body `{project, path, kept?, seed?}`:
// - `kept: false` (default): the file is read from the storage on every call;
// - `kept: true`: the file comes from a copy of the project kept in memory, as jp serves a
//   project: the copy is filled by listing the storage on the project's first read, and kept
//   while the storage's `version()` holds (read on every call, as jp does);
// - `seed: {path: text}`: writes these files (one batch) and answers `{seeded}` — for projects
//   that jp has not opened yet (the benchmark's cold calls).
// The answer is `{val}` (the file's text), or 404.
// And the baseline of a component's `http.get` (`EDGE-<engine>-http`): `{get: url, headers}`
// fetches `url` with the engine's own `fetch` (redirect: manual, as jp's), each header's
// `${VAR}` filled in from the operator's secrets (the names its policy's `access.secrets` binds (or `network.envs` lists),
// as jp's host gets them), and answers `{status, val}` (the body's text). Only a 127.0.0.1 URL
// (the benchmark's own server): this route decides nothing, so it reaches nothing else.
const json = (status, value) => new Response(JSON.stringify(value), { status, headers: { 'content-type': 'application/json' } });

/** The `/__bare` handler over `storage(projectId)` (a ProjectStorage, see www/jp.d.ts);
 * `bodyText` reads a request's body with the handler's cap; `secrets()` resolves to the
 * operator's secrets `{ NAME: value }`. */
export function bareHandler(storage, bodyText, secrets = async () => ({})) {
  const copies = new Map(); // project id → { version, files: Map(path → value) }
  return async (request) => {
    const body = await bodyText(request);
    if (body.tooLarge) return json(413, { error: 'the request body is too large' });
    const { project, path, kept = false, seed = null, get = null, headers = {} } = JSON.parse(body.text);
    if (get !== null) {
      let url;
      try { url = new URL(get); } catch { url = null; }
      if (url?.protocol !== 'http:' || url.hostname !== '127.0.0.1') return json(400, { error: '"get" must be an http://127.0.0.1 URL' });
      const values = await secrets();
      const filled = {};
      for (const [name, value] of Object.entries(headers)) {
        filled[name] = String(value).replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (whole, v) => values[v] ?? whole);
      }
      const response = await fetch(url, { headers: filled, redirect: 'manual' });
      return json(200, { status: response.status, val: await response.text() });
    }
    const s = await storage(project);
    if (!s) return json(400, { error: 'this engine keeps no projects' });
    if (seed) {
      // Plain relative paths only, never jp's own directory (the benchmark needs neither).
      const bad = Object.keys(seed).find((p) => !/^[A-Za-z0-9_][A-Za-z0-9._/-]*$/.test(p) || p.split('/').some((c) => c === '..' || c === '' || c.toLowerCase() === '.jp'));
      if (bad !== undefined) return json(400, { error: `seed path ${JSON.stringify(bad)} is not a plain relative path` });
      const encoder = new TextEncoder();
      await s.batch(Object.entries(seed).map(([p, text]) => ({ path: p, value: encoder.encode(text) })));
      return json(200, { seeded: Object.keys(seed).length });
    }
    let value;
    if (kept) {
      const version = s.version ? await s.version() : undefined;
      let copy = copies.get(project);
      if (!copy || version === undefined || copy.version !== version) {
        copy = { version, files: new Map(await s.list()) };
        copies.set(project, copy);
      }
      value = copy.files.get(path);
    } else {
      value = await s.get(path);
    }
    return value instanceof Uint8Array ? json(200, { val: new TextDecoder().decode(value) }) : json(404, { error: 'no such file' });
  };
}
