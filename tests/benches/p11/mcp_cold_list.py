"""P11: a cold start of `jp mcp` — spawn, `initialize`, `tools/list` — as an agent pays it the
first time it connects: a fresh `XDG_CACHE_HOME` each round (no compiled component, no cached
schema), in an empty workspace (the first-party tools only: the fs tools, `learn`, `run`). Against
the same with the cache warm (the directory of the previous round kept), and against the floor in
the same run: `jp --version` spawned and waited for (what starting the binary costs). And what a
cold `tools/list` paid before `learn`'s schema was read from a file: the first `learn` call on an
empty cache (`jp tool call learn`, which compiles the 3 MB component), against the same call with
the compiled component in the cache. Each side
includes process start and exit; the client is the raw JSON-RPC one of benches/mcp_raw_client.py.
Prints medians, ratios and `TABLE|…` lines; asserts nothing about time.

Usage: mcp_cold_list.py JP [ROUNDS]
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

jp = sys.argv[1]
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 10
GOAL_MS = 100.0


def learn_once(ws, cache):
    env = dict(os.environ, XDG_CACHE_HOME=cache)
    t = time.perf_counter_ns()
    subprocess.run([jp, "tool", "call", "learn", "--args", "{}"], cwd=ws, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter_ns() - t


def list_once(ws, cache):
    env = dict(os.environ, XDG_CACHE_HOME=cache)
    t = time.perf_counter_ns()
    child = subprocess.Popen([jp, "mcp"], cwd=ws, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL)
    def send(m):
        child.stdin.write(json.dumps(m).encode() + b"\n")
        child.stdin.flush()
    def answer(i):
        while True:
            line = child.stdout.readline()
            if not line:
                sys.exit("jp mcp exited")
            m = json.loads(line)
            if m.get("id") == i:
                return m
    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "p11", "version": "0"}}})
    answer(1)
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
    tools = answer(2)["result"]["tools"]
    child.stdin.close()
    child.wait()
    elapsed = time.perf_counter_ns() - t
    names = {t["name"] for t in tools}
    assert {"learn", "run", "fs_read_file"} <= names, names
    return elapsed


with tempfile.TemporaryDirectory() as root:
    ws = os.path.join(root, "ws")
    os.makedirs(os.path.join(ws, ".jp", "kb", "topic"))
    with open(os.path.join(ws, ".jp", "kb", "topic", "subject.md"), "w") as f:
        f.write("# A subject\n")
    cold, warm, floor, learn_cold, learn_warm = [], [], [], [], []
    warm_cache = os.path.join(root, "warm")
    list_once(ws, warm_cache)  # fills the warm cache
    learn_once(ws, warm_cache)  # and compiles learn into it
    for i in range(rounds):
        cold.append(list_once(ws, os.path.join(root, f"cold-{i}")))
        warm.append(list_once(ws, warm_cache))
        t = time.perf_counter_ns()
        subprocess.run([jp, "--version"], check=True, stdout=subprocess.DEVNULL)
        floor.append(time.perf_counter_ns() - t)
        if i < 3:  # each cold learn call costs a compile: three are enough for a median
            learn_cold.append(learn_once(ws, os.path.join(root, f"learn-{i}")))
            learn_warm.append(learn_once(ws, warm_cache))

ms = lambda s: statistics.median(s) / 1e6
c, w, f = ms(cold), ms(warm), ms(floor)
print(f"p11: jp mcp initialize + tools/list, empty cache: median {c:.1f} ms (min {min(cold) / 1e6:.1f}, max {max(cold) / 1e6:.1f}; {rounds} rounds)")
print(f"p11: the same, cache warm: median {w:.1f} ms; jp --version (binary start and exit): median {f:.1f} ms")
status = "met" if c <= GOAL_MS else "NOT met"
print(f"TABLE|P11|jp mcp cold start: spawn + initialize + tools/list, empty XDG_CACHE_HOME ({rounds} rounds)|{c:.1f} ms|cache warm {w:.1f} ms|{c / w:.2f}x|<= {GOAL_MS:.0f} ms|{status}")
print(f"TABLE|P11b|floor: jp --version spawned and waited for|{f:.1f} ms|-|-|-|info")
lc, lw = ms(learn_cold), ms(learn_warm)
print(f"p11: first learn call, empty cache (compiles the component, what cold tools/list paid before): median {lc:.1f} ms; cached: {lw:.1f} ms")
print(f"TABLE|P11c|first learn call on an empty cache (component compiled) vs cached|{lc:.1f} ms|{lw:.1f} ms|{lc / lw:.2f}x|-|info")
