"""An MCP server (the official Python SDK's server side) whose one tool runs `probe.py`'s probe
from inside the server process, so the egress test sees what a sandboxed server can reach."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from mcp.server.mcpserver import MCPServer  # noqa: E402

from probe import probe as run_probe  # noqa: E402

server = MCPServer("egress")


@server.tool()
def probe(a: int, b: int, c_host: str, u: int) -> str:
    """Try every way out; report what happened."""
    return json.dumps(run_probe(a, b, c_host, u))


if __name__ == "__main__":
    server.run()
