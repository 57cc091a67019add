// Serves the playground on 127.0.0.1: `/` is www/, `/node_modules/` the npm packages the page
// imports (preview2-shim). `node web/scripts/serve.mjs [port]`, or `serve()` from a test.
// JP_EDGE_SERVED (or `serve(port, { served })`): a directory of the user's components that
// `build.mjs --served-out DIR` wrote, served in place of www/components's registry
// (`/components/served.json` and each listed component's files).
// `serve(port, { hosted: true })` serves as a static host would (the page-load bench): gzip for a
// client that accepts it, and an ETag each response is revalidated by (304, no body); otherwise
// every response is sent whole and never cached.
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import { gzipSync } from 'node:zlib';
import { readFileSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { dirname, extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const types = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript',
  '.css': 'text/css', '.json': 'application/json', '.wasm': 'application/wasm', '.ts': 'text/plain',
};

function resolve(urlPath, served) {
  const path = normalize(decodeURIComponent(urlPath.split('?')[0]));
  if (path.includes('\0') || path.split(sep).includes('..')) return null;
  if (path.startsWith('/node_modules/')) return join(root, path);
  if (served && path.startsWith('/components/')) {
    const [first] = path.slice('/components/'.length).split('/');
    if (first === 'served.json' || served.names.some((n) => first === n || first === `${n}.wasm`)) return join(served.dir, path.slice('/components/'.length));
  }
  return join(root, 'www', path === '/' ? 'index.html' : path);
}

export function serve(port = 0, { served = process.env.JP_EDGE_SERVED || null, hosted = false } = {}) {
  const registry = served ? { dir: served, names: JSON.parse(readFileSync(join(served, 'served.json'), 'utf8')) } : null;
  const gzipped = new Map(); // file → { etag, mtime, body }: compressed once per version
  const server = createServer(async (req, res) => {
    const file = resolve(req.url ?? '/', registry);
    try {
      const info = file && await stat(file);
      if (!info?.isFile()) throw new Error('not a file');
      const type = types[extname(file)] ?? 'application/octet-stream';
      if (!hosted) {
        res.writeHead(200, { 'content-type': type, 'cache-control': 'no-store' });
        res.end(await readFile(file));
        return;
      }
      let entry = gzipped.get(file);
      if (entry?.mtime !== info.mtimeMs) {
        const raw = await readFile(file);
        entry = { mtime: info.mtimeMs, raw, gz: gzipSync(raw, { level: 9 }), etag: `"${createHash('sha256').update(raw).digest('hex').slice(0, 16)}"` };
        gzipped.set(file, entry);
      }
      const headers = { 'content-type': type, 'cache-control': 'no-cache', etag: entry.etag, vary: 'accept-encoding' };
      if (req.headers['if-none-match'] === entry.etag) {
        res.writeHead(304, headers);
        res.end();
        return;
      }
      const gzip = /\bgzip\b/.test(req.headers['accept-encoding'] ?? '');
      res.writeHead(200, gzip ? { ...headers, 'content-encoding': 'gzip' } : headers);
      res.end(gzip ? entry.gz : entry.raw);
    } catch {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end(`not found: ${req.url}\n`);
    }
  });
  return new Promise((ok) => server.listen(port, '127.0.0.1', () => {
    ok({ url: `http://127.0.0.1:${server.address().port}/`, close: () => new Promise((done) => server.close(done)) });
  }));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { url } = await serve(Number(process.argv[2] ?? 8080));
  console.log(`jp-host playground: ${url}`);
}
