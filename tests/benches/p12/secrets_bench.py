"""P12s: an HTTPS request through jp's terminating proxy (a secret bound to the origin) vs the
same request through jp's tunnel (no secret bound), issue 38.

One script (`LOOP`) does N GETs of a 100-byte answer from an HTTPS server on 127.0.0.1 (its own
certificate authority, made here with `openssl`), each on a new connection, with Python's urllib,
sending `Authorization: Bearer $TOKEN`, and prints how long its loop took (process start and the
sandbox's setup not counted). Both sides are the same stdio tool run by `jp tool call` through
jp's egress proxy:
- ours: the policy binds TOKEN to the server's origin (`access.secrets`): the process holds a
  placeholder and trusts its own authority (SSL_CERT_FILE); jp terminates its TLS, decides the
  request, puts the value in, makes its own TLS connection upstream (verified against the test's
  authority through jp's SSL_CERT_FILE) and masks the value in the answer;
- baseline: the same origin allowed without a binding: a CONNECT tunnel, the process's TLS end
  to end (trusting the test's authority itself), TOKEN given as an environment variable.
Warm-up on both sides, then alternating blocks; medians, the ratio and a `TABLE|…` line.
Asserts nothing about time.

Usage: secrets_bench.py JP [BLOCKS] [REQUESTS]
"""

import http.server
import json
import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading

jp = sys.argv[1]
blocks = int(sys.argv[2]) if len(sys.argv) > 2 else 7
requests = int(sys.argv[3]) if len(sys.argv) > 3 else 100
TOKEN = "bench-secret-value-0123456789abcdef"

LOOP = r'''
import json, os, ssl, sys, time, urllib.request
sys.stdin.read()
url, n, cafile = sys.argv[1], int(sys.argv[2]), sys.argv[3]
# Terminated: the environment's bundle (SSL_CERT_FILE); tunnel: the server's own authority.
context = ssl.create_default_context(cafile=None if cafile == "-" else cafile)
opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=context))
headers = {"Authorization": "Bearer " + os.environ["TOKEN"]}
t = time.perf_counter_ns()
for _ in range(n):
    # A new Request each time: urllib marks one it sent through a proxy tunnel as sent.
    with opener.open(urllib.request.Request(url, headers=headers)) as r:
        assert len(r.read()) == 100
print(json.dumps({"content": str(time.perf_counter_ns() - t)}))
'''


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        assert self.headers["Authorization"] == f"Bearer {TOKEN}", self.headers["Authorization"]
        self.send_response(200)
        self.send_header("Content-Length", "100")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(b"x" * 100)

    def log_message(self, *args):
        pass


with tempfile.TemporaryDirectory() as tmp:
    tmp = os.path.realpath(tmp)
    ca_key, ca, key, csr, cert = (os.path.join(tmp, n) for n in ("ca.key", "ca.pem", "s.key", "s.csr", "s.pem"))
    quiet = {"check": True, "capture_output": True}
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", ca_key, "-out", ca, "-days", "2", "-subj", "/CN=p12s test CA"], **quiet)
    subprocess.run(["openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", key, "-out", csr, "-subj", "/CN=127.0.0.1"], **quiet)
    ext = os.path.join(tmp, "ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    subprocess.run(["openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
                    "-out", cert, "-days", "2", "-extfile", ext], **quiet)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    server.socket = tls.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    url = f"https://127.0.0.1:{port}/"

    def workspace(name, bound):
        ws = os.path.join(tmp, name)
        os.makedirs(os.path.join(ws, ".jp"))
        with open(os.path.join(ws, "loop.py"), "w") as f:
            f.write(LOOP)
        with open(os.path.join(ws, "ca.pem"), "w") as f:
            f.write(open(ca).read())
        cafile = "-" if bound else "ca.pem"
        extra = f'secrets = {{ TOKEN = ["https://127.0.0.1:{port}"] }}' if bound else 'env = ["TOKEN"]'
        with open(os.path.join(ws, ".jp", "config.toml"), "w") as f:
            f.write(f'''[conversation.tools.loop]
source = "local"
command = "/usr/bin/python3 loop.py {url} {requests} {cafile}"
parameters = {{}}
[conversation.tools.loop.access]
filesystem = [{{ path = ".", allow = ["read"] }}]
network = {{ allow = ["https://127.0.0.1:{port}"] }}
{extra}
''')
        subprocess.run([jp, "trust", "--yes", "--workspace", ws], check=True, stdout=subprocess.DEVNULL)
        return ws

    env = dict(os.environ, TOKEN=TOKEN, SSL_CERT_FILE=ca)

    def side(ws):
        def run():
            out = subprocess.run([jp, "tool", "call", "loop", "--json"], cwd=ws, env=env, capture_output=True, text=True)
            if out.returncode != 0:
                sys.exit(f"p12s: jp tool call failed ({out.returncode}): {out.stdout}{out.stderr}")
            result = json.loads(out.stdout)["result"]
            text = result["content"][0]["text"]
            if not text.isdigit():
                sys.exit(f"p12s: the loop failed: {text}")
            return int(text)
        return run

    terminated, tunnel = side(workspace("terminated", True)), side(workspace("tunnel", False))
    terminated(), tunnel()  # warm-up
    ours, base = [], []
    for i in range(blocks):
        for run, into in ((terminated, ours), (tunnel, base)) if i % 2 == 0 else ((tunnel, base), (terminated, ours)):
            into.append(run() / requests)

us = lambda xs: statistics.median(xs) / 1e3
o, b = us(ours), us(base)
print(f"p12s: HTTPS GET through jp's terminating proxy (secret put in): median {o:.0f} µs per request "
      f"(min {min(ours) / 1e3:.0f}, max {max(ours) / 1e3:.0f}); through the tunnel: {b:.0f} µs "
      f"(min {min(base) / 1e3:.0f}, max {max(base) / 1e3:.0f}); {blocks} blocks of {requests}")
print(f"TABLE|P12s|HTTPS GET (100 B, new connection each) from a sandboxed stdio tool with a secret bound to the origin (jp terminates TLS, puts the value in, its own TLS upstream) vs the same through jp's tunnel; per request, process start not counted|{o:.0f} µs|tunnel {b:.0f} µs|{o / b:.2f}x|-|info")
