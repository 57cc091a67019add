"""P10: an MCP server run by jp-host under the OS sandbox, against the same server run directly.
The server is the reference @modelcontextprotocol/server-filesystem. Through `jp mcp` it is
started lazily, sandboxed (workspace read-only), and each `tools/call` of `files.read_text_file`
is relayed. Directly, the same server answers `read_text_file`. One raw JSON-RPC client
(benches/mcp_raw_client.py) drives both, calls alternating in blocks. The floor is measured in the
same run: a bare byte relay in C (byte_relay.c, built here with `cc`) in front of the same server,
no parsing and no sandbox — what any extra process in the path costs on this machine. Also: how
long the first call takes (the server's start, sandboxed through jp vs spawned bare). Prints
medians, ratios and `TABLE|…` lines; asserts nothing about time.

Usage: mcp_proxy.py JP SERVER_INDEX_JS N
"""

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from mcp_raw_client import Server, alternate  # noqa: E402

jp, server_js, n = sys.argv[1], os.path.realpath(sys.argv[2]), int(sys.argv[3])
GOAL = 1.1
BLOCK = 100
node_modules = server_js[: server_js.index("/node_modules/") + len("/node_modules")]

with tempfile.TemporaryDirectory() as ws:
    ws = os.path.realpath(ws)
    # The floor: built from source for this machine (skipped, with a note, without a C compiler).
    relay = None
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc:
        relay = os.path.join(ws, "byte_relay")
        here = os.path.dirname(os.path.abspath(__file__))
        subprocess.run([cc, "-O2", "-o", relay, os.path.join(here, "byte_relay.c")], check=True)
    else:
        print("p10: no C compiler (cc): the byte-relay floor is not measured")
    content = ("0123456789abcdef" * 63 + "012345678901234\n") * 4  # 4 KiB of text
    path = os.path.join(ws, "data.txt")
    with open(path, "w") as f:
        f.write(content)
    os.makedirs(os.path.join(ws, ".jp"))
    with open(os.path.join(ws, ".jp", "config.toml"), "w") as f:
        f.write(f'''[mcp.servers.files]
command = "node"
args = ["{server_js}", "{ws}"]
read_paths = ["{node_modules}"]
tools = ["read_text_file"]
[mcp.servers.files.access]
filesystem = [{{ path = ".", allow = ["read"] }}]
''')
    # jp uses a workspace's configuration only once its user approved it.
    subprocess.run([jp, "trust", "--yes", "--workspace", ws], check=True, stdout=subprocess.DEVNULL)

    starts = {"jp": [], "bare": []}
    for _ in range(5):
        t = time.perf_counter_ns()
        s = Server([jp, "mcp"], ws, "files.read_text_file", {"path": path})
        assert s.call() == content
        starts["jp"].append(time.perf_counter_ns() - t)
        s.close()
        t = time.perf_counter_ns()
        s = Server(["node", server_js, ws], ws, "read_text_file", {"path": path})
        assert s.call() == content
        starts["bare"].append(time.perf_counter_ns() - t)
        s.close()

    ours = Server([jp, "mcp"], ws, "files.read_text_file", {"path": path})
    bare = Server(["node", server_js, ws], ws, "read_text_file", {"path": path})
    servers = [ours, bare]
    if relay:
        floor = Server([relay, "node", server_js, ws], ws, "read_text_file", {"path": path})
        servers.append(floor)
    alternate(servers, n, BLOCK, content)  # the warm-up also starts the server behind jp

med = lambda s: statistics.median(s) / 1000
m_ours, m_bare = med(ours.samples), med(bare.samples)
ratio = m_ours / m_bare
print(f"p10: through jp mcp (server sandboxed): median {m_ours:.1f} µs ({n} calls)")
print(f"p10: the server directly: median {m_bare:.1f} µs ({n} calls)")
print(f"p10: ratio {ratio:.2f}x")
status = "met" if ratio <= GOAL else "NOT met"
print(f"TABLE|P10|MCP server relayed by jp mcp, sandboxed, 4 KiB read ({n} calls each)|{m_ours:.1f} µs|server directly {m_bare:.1f} µs|{ratio:.2f}x|<= {GOAL}x|{status}")
if relay:
    m_floor = med(floor.samples)
    print(f"p10: a bare byte relay in front of the server (the floor): median {m_floor:.1f} µs, {m_floor / m_bare:.2f}x the server directly; jp mcp is {m_ours / m_floor:.2f}x the floor")
    print(f"TABLE|P10c|the floor: a bare C byte relay in front of the same server, no parsing, no sandbox ({n} calls)|{m_floor:.1f} µs|server directly {m_bare:.1f} µs|{m_floor / m_bare:.2f}x|-|info (jp mcp {m_ours / m_floor:.2f}x the floor)")
s_jp, s_bare = statistics.median(starts["jp"]) / 1e6, statistics.median(starts["bare"]) / 1e6
print(f"p10: first call incl. start: jp mcp + sandboxed server {s_jp:.1f} ms, bare server {s_bare:.1f} ms ({s_jp / s_bare:.2f}x)")
print(f"TABLE|P10b|first call incl. server start: jp mcp + sandboxed server vs bare server|{s_jp:.1f} ms|{s_bare:.1f} ms|{s_jp / s_bare:.2f}x|-|info")
