"""A raw JSON-RPC MCP client over stdio (no SDK), shared by the MCP benchmarks (P9, P10): the
same client drives both sides of every comparison."""

import json
import subprocess
import sys
import tempfile
import time


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


def alternate(servers, n, block, expected, warmup=50):
    """Warm each server up (calls not counted, each answer checked against `expected`), then
    make `n` timed calls on each, alternating in blocks of `block` so that machine noise hits
    every server alike; the servers are closed at the end."""
    for s in servers:
        for _ in range(warmup):
            assert s.call() == expected
        s.samples.clear()
    done = 0
    while done < n:
        step = min(block, n - done)
        for s in servers:
            for _ in range(step):
                s.call()
        done += step
    for s in servers:
        s.close()
