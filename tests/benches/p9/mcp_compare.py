"""P9: `tools/call` of a 4 KiB read through `jp mcp` (fs_read_file: policy-checked, in-process on
the builtin runtime, OS sandbox available for subprocess tools) against `read_text_file` of the
reference @modelcontextprotocol/server-filesystem, both over stdio, driven by the same raw
JSON-RPC client (no SDK) in this one script. Calls alternate in blocks between the two servers so
that machine noise hits both alike. Prints the medians, their ratio, and one
`TABLE|…` line for tests/bench. Asserts nothing about time.

Usage: mcp_compare.py JP SERVER_INDEX_JS N
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

jp, server_js, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
GOAL = 2.0
BLOCK = 100


class Server:
    def __init__(self, argv, cwd, tool, args):
        self.err = tempfile.TemporaryFile()  # drained by the OS: a full stderr pipe would block it
        self.child = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err)
        self.tool, self.args, self.next = tool, args, 0
        self.samples = []
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "p9-bench", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.child.stdin.write(json.dumps(message).encode() + b"\n")
        self.child.stdin.flush()

    def request(self, method, params):
        self.next += 1
        self.send({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params})
        while True:
            line = self.child.stdout.readline()
            if not line:
                self.err.seek(0)
                sys.exit(f"{self.child.args[0]} exited: " + self.err.read().decode(errors="replace"))
            message = json.loads(line)
            if message.get("id") == self.next and "method" not in message:
                return message

    def call(self):
        t = time.perf_counter_ns()
        reply = self.request("tools/call", {"name": self.tool, "arguments": self.args})
        self.samples.append(time.perf_counter_ns() - t)
        if "error" in reply or reply["result"].get("isError"):
            sys.exit("call failed: " + json.dumps(reply)[:500])
        return reply["result"]["content"][0]["text"]

    def close(self):
        self.child.stdin.close()
        self.child.wait()


with tempfile.TemporaryDirectory() as ws:
    ws = os.path.realpath(ws)
    content = ("0123456789abcdef" * 63 + "012345678901234\n") * 4  # 4 KiB of text
    with open(os.path.join(ws, "data.txt"), "w") as f:
        f.write(content)
    ours = Server([jp, "mcp"], ws, "fs_read_file", {"path": "data.txt"})
    ref = Server(["node", server_js, ws], ws, "read_text_file", {"path": os.path.join(ws, "data.txt")})
    for s in (ours, ref):
        for _ in range(50):  # warm-up, not counted
            assert s.call() == content
        s.samples.clear()
    done = 0
    while done < n:
        for s in (ours, ref):
            for _ in range(min(BLOCK, n - done)):
                s.call()
        done += min(BLOCK, n - done)
    ours.close()
    ref.close()

med = lambda s: statistics.median(s) / 1000
m_ours, m_ref = med(ours.samples), med(ref.samples)
ratio = m_ref / m_ours
print(f"p9: jp mcp fs_read_file 4 KiB: median {m_ours:.1f} µs, p90 {statistics.quantiles(ours.samples, n=10)[8]/1000:.1f} µs ({n} calls)")
print(f"p9: server-filesystem read_text_file 4 KiB: median {m_ref:.1f} µs, p90 {statistics.quantiles(ref.samples, n=10)[8]/1000:.1f} µs ({n} calls)")
print(f"p9: jp is {ratio:.2f}x faster at the median")
status = "met" if ratio >= GOAL else "NOT met"
print(f"TABLE|P9|tools/call 4 KiB read over MCP stdio ({n} calls each)|{m_ours:.1f} µs|MCP server-filesystem {m_ref:.1f} µs|{ratio:.1f}x faster|>= {GOAL:.0f}x faster|{status}")
