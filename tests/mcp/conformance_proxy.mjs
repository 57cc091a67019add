import http from 'node:http';
// In front of `jp mcp --http`: adds the bearer token the conformance client does not send, and
// names the target's own address in Host/Origin where the client named the proxy's.
const [port, target, token] = process.argv.slice(2);
const swap = (v) => (typeof v === 'string' ? v.replace(`:${port}`, `:${target}`) : v);
http.createServer((req, res) => {
  const headers = { ...req.headers, authorization: `Bearer ${token}`, host: swap(req.headers.host) };
  if (headers.origin) headers.origin = swap(headers.origin);
  const up = http.request({ host: '127.0.0.1', port: target, path: req.url, method: req.method, headers }, (r) => { res.writeHead(r.statusCode, r.headers); r.pipe(res); });
  up.on('error', (e) => { res.writeHead(502); res.end(String(e)); });
  req.pipe(up);
}).listen(Number(port), '127.0.0.1');
