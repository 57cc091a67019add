"""P1, the baseline: the reference MCP filesystem server over stdio, driven in the same style as
vfs_read_loop.py (raw JSON-RPC lines, no SDK, the same timing loop around each round trip).

Usage: mcp_read_loop.py <server index.js> <allowed dir> <file in it> <n>
Prints JSON with every sample in nanoseconds. The server's side of each round trip is JSON-RPC
decode, its own path validation against the allowed directory and a Node `readFile`: no policy
engine, no OS sandbox, no scrubbing.
"""

import json
import subprocess
import sys
import tempfile
import time

server, root, file, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
WARMUP = 200
# The server's stderr goes to a file: a full, undrained pipe would block it.
with tempfile.TemporaryFile() as err:
    child = subprocess.Popen(["node", server, root], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
    stdin, stdout = child.stdin, child.stdout

    def send(message):
        stdin.write(json.dumps(message).encode() + b"\n")
        stdin.flush()

    def response(want_id):
        """The response to `want_id`; notifications are skipped, requests to us refused."""
        while True:
            line = stdout.readline()
            if not line:
                err.seek(0)
                sys.exit("server exited: " + err.read().decode(errors="replace"))
            message = json.loads(line)
            if message.get("id") == want_id and "method" not in message:
                global reply_bytes
                reply_bytes = len(line)
                return message
            if "method" in message and "id" in message:
                send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "not supported"}})

    send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "p1-bench", "version": "0"}}})
    response(0)
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    reply_bytes = 0
    # Warm-up, not timed (as on jp's side): Node's JIT, the server's caches.
    for i in range(n + 1, n + 1 + WARMUP):
        send({"jsonrpc": "2.0", "id": i, "method": "tools/call",
              "params": {"name": "read_text_file", "arguments": {"path": file}}})
        response(i)
    samples = []
    for i in range(1, n + 1):
        t = time.perf_counter_ns()
        send({"jsonrpc": "2.0", "id": i, "method": "tools/call",
              "params": {"name": "read_text_file", "arguments": {"path": file}}})
        reply = response(i)
        samples.append(time.perf_counter_ns() - t)
        if "error" in reply or reply["result"].get("isError"):
            sys.exit("read failed: " + json.dumps(reply)[:500])
    size = len(reply["result"]["content"][0]["text"])
    stdin.close()
    child.wait()
print(json.dumps({"size": size, "ns": samples, "reply_bytes": reply_bytes}))
