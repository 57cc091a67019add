"""P9: `tools/call` of a 4 KiB read through `jp mcp` (fs_read_file: policy-checked, in-process on
the builtin runtime, OS sandbox available for subprocess tools) against `read_text_file` of the
reference @modelcontextprotocol/server-filesystem, both over stdio, driven by the same raw
JSON-RPC client (no SDK) in this one script. Calls alternate in blocks between the two servers so
that machine noise hits both alike. Prints the medians, their ratio, and one
`TABLE|…` line for tests/bench. Asserts nothing about time.

Usage: mcp_compare.py JP SERVER_INDEX_JS N
"""

import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from mcp_raw_client import Server, alternate  # noqa: E402

jp, server_js, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
GOAL = 2.0
BLOCK = 100


with tempfile.TemporaryDirectory() as ws:
    ws = os.path.realpath(ws)
    content = ("0123456789abcdef" * 63 + "012345678901234\n") * 4  # 4 KiB of text
    with open(os.path.join(ws, "data.txt"), "w") as f:
        f.write(content)
    ours = Server([jp, "mcp"], ws, "fs_read_file", {"path": "data.txt"})
    ref = Server(["node", server_js, ws], ws, "read_text_file", {"path": os.path.join(ws, "data.txt")})
    alternate([ours, ref], n, BLOCK, content)

med = lambda s: statistics.median(s) / 1000
m_ours, m_ref = med(ours.samples), med(ref.samples)
ratio = m_ref / m_ours
print(f"p9: jp mcp fs_read_file 4 KiB: median {m_ours:.1f} µs, p90 {statistics.quantiles(ours.samples, n=10)[8]/1000:.1f} µs ({n} calls)")
print(f"p9: server-filesystem read_text_file 4 KiB: median {m_ref:.1f} µs, p90 {statistics.quantiles(ref.samples, n=10)[8]/1000:.1f} µs ({n} calls)")
print(f"p9: jp is {ratio:.2f}x faster at the median")
status = "met" if ratio >= GOAL else "NOT met"
print(f"TABLE|P9|tools/call 4 KiB read over MCP stdio ({n} calls each)|{m_ours:.1f} µs|MCP server-filesystem {m_ref:.1f} µs|{ratio:.1f}x faster|>= {GOAL:.0f}x faster|{status}")
