"""P12: an HTTP request through jp's egress proxy vs the same request direct (issue 26).

One script (`LOOP` below) does N GETs of a 100-byte answer from a server on 127.0.0.1, a new TCP
connection each (jp's proxy serves one request per connection, so the direct side does the same),
with Python's urllib, and prints how long its loop took. Both sides run that same script as a
fresh process and time only its loop, so process start and the sandbox's setup are not counted:
- ours: a stdio tool run by `jp tool call`, its policy allowing `http://127.0.0.1:PORT`, so it
  runs in its own network namespace and every request goes through the proxy (`HTTP_PROXY`,
  jp's policy check per request, jp's connection upstream);
- baseline: the same script started directly, no proxy, straight to the server.
Warm-up on both sides, then alternating blocks; prints medians (with min/max), the ratio and a
`TABLE|…` line. Asserts nothing about time.

Usage: egress_bench.py JP [BLOCKS] [REQUESTS]
"""

import http.server
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading

jp = sys.argv[1]
blocks = int(sys.argv[2]) if len(sys.argv) > 2 else 7
requests = int(sys.argv[3]) if len(sys.argv) > 3 else 200

LOOP = r'''
import json, sys, time, urllib.request
sys.stdin.read()
url, n = sys.argv[1], int(sys.argv[2])
opener = urllib.request.build_opener()  # honours HTTP_PROXY when set
t = time.perf_counter_ns()
for _ in range(n):
    with opener.open(url) as r:
        assert len(r.read()) == 100
print(json.dumps({"content": str(time.perf_counter_ns() - t)}))
'''


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "100")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(b"x" * 100)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
port = server.server_address[1]
url = f"http://127.0.0.1:{port}/"

with tempfile.TemporaryDirectory() as ws:
    script = os.path.join(ws, "loop.py")
    with open(script, "w") as f:
        f.write(LOOP)
    os.makedirs(os.path.join(ws, ".jp"))
    with open(os.path.join(ws, ".jp", "config.toml"), "w") as f:
        f.write(f'''[conversation.tools.loop]
source = "local"
command = "/usr/bin/python3 loop.py {url} {requests}"
parameters = {{}}
[conversation.tools.loop.access]
filesystem = [{{ path = ".", allow = ["read"] }}]
network = {{ allow = ["http://127.0.0.1:{port}"] }}
''')
    subprocess.run([jp, "trust", "--yes", "--workspace", ws], check=True, stdout=subprocess.DEVNULL)

    def through_jp():
        out = subprocess.run([jp, "tool", "call", "loop", "--json"], cwd=ws, check=True, capture_output=True, text=True)
        result = json.loads(out.stdout)["result"]
        return int(result["content"][0]["text"])

    def direct():
        env = {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}
        out = subprocess.run(["/usr/bin/python3", script, url, str(requests)], input="{}", env=env, check=True,
                             capture_output=True, text=True)
        return int(json.loads(out.stdout)["content"])

    through_jp(), direct()  # warm-up: page cache, Python's imports, jp's first start
    ours, base = [], []
    for i in range(blocks):
        for side in ((through_jp, ours), (direct, base)) if i % 2 == 0 else ((direct, base), (through_jp, ours)):
            side[1].append(side[0]() / requests)

us = lambda xs: statistics.median(xs) / 1e3
o, b = us(ours), us(base)
print(f"p12: GET through jp's egress proxy: median {o:.0f} µs per request (min {min(ours) / 1e3:.0f}, max {max(ours) / 1e3:.0f}); "
      f"direct: {b:.0f} µs (min {min(base) / 1e3:.0f}, max {max(base) / 1e3:.0f}); {blocks} blocks of {requests}")
print(f"TABLE|P12|HTTP GET (100 B, new connection each) from a sandboxed stdio tool through jp's egress proxy vs the same script direct; per request, process start not counted|{o:.0f} µs|{b:.0f} µs|{o / b:.2f}x|-|info")
