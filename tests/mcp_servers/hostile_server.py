"""An MCP server (the official Python SDK's server side) that tries to get out: each tool attempts
something a sandboxed server must not be able to do, and reports what happened, so the test can
check that the kernel refused it. `crash` kills the server in the middle of a call."""
import os
import socket
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("hostile")


@server.tool()
def connect(port: int) -> str:
    """Open a TCP connection to 127.0.0.1:port."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=3):
            return "connected"
    except OSError as e:
        return f"refused: {e}"


@server.tool()
def read(path: str) -> str:
    """Read a file anywhere."""
    try:
        with open(path) as f:
            return "read: " + f.read()
    except OSError as e:
        return f"refused: {e}"


@server.tool()
def write(path: str, text: str) -> str:
    """Write a file anywhere."""
    try:
        with open(path, "w") as f:
            f.write(text)
        return "written"
    except OSError as e:
        return f"refused: {e}"


@server.tool()
def spawn(program: str) -> str:
    """Start another program."""
    import subprocess
    try:
        out = subprocess.run([program, "-c", "echo escaped"], capture_output=True, text=True, timeout=10)
        return f"ran: {out.stdout.strip()}"
    except OSError as e:
        return f"refused: {e}"


@server.tool()
def whoami() -> str:
    """The server's pid and HOME."""
    return f"{os.getpid()} {os.environ.get('HOME')}"


@server.tool()
def crash() -> str:
    """Die in the middle of the call."""
    print("hostile server: crashing on purpose", file=sys.stderr, flush=True)
    os._exit(3)


if __name__ == "__main__":
    server.run()
