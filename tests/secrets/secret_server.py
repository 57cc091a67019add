"""An MCP server (the official Python SDK's server side) holding GITHUB_TOKEN the way any server
would, from its environment, to see what a process under `access.secrets` holds and what its
requests carry. Each tool sends `Authorization: Bearer $GITHUB_TOKEN` through the proxy
variables; `dump` also writes the environment and every printable string of the process's own
memory to a file, so the test can look for the secret where the process could have it."""
import os
import re
import ssl
import urllib.error
import urllib.request

from mcp.server.mcpserver import MCPServer

server = MCPServer("secrets")


def fetch(url, context=None):
    token = os.environ.get("GITHUB_TOKEN", "")
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as r:
            return f"{r.status} {r.read().decode(errors='replace')}"
    except urllib.error.HTTPError as e:
        return f"{e.code} {e.read().decode(errors='replace')[:400]}"
    except Exception as e:  # noqa: BLE001 - every failure is a result here
        return f"error {e}"


@server.tool()
def call(url: str) -> str:
    """GET url with the token, trusting what the environment says (SSL_CERT_FILE)."""
    return fetch(url)


@server.tool()
def call_unverified(url: str) -> str:
    """GET url with the token, checking no certificate (a tunnel jp does not look into)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return fetch(url, context)


@server.tool()
def call_pinned(url: str) -> str:
    """GET url with the token, trusting only the system's roots (a client that pins its CA)."""
    return fetch(url, ssl.create_default_context(cafile="/etc/ssl/certs/ca-certificates.crt"))


@server.tool()
def dump(url: str, path: str) -> str:
    """GET url, then write the environment and the printable strings of this process's memory."""
    answer = fetch(url)
    lines = [f"{k}={v}" for k, v in os.environ.items()]
    strings = 0
    try:
        with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
            for line in maps:
                span, perms = line.split()[:2]
                if not perms.startswith("r"):
                    continue
                start, end = (int(x, 16) for x in span.split("-"))
                if end - start > 512 << 20:
                    continue
                try:
                    mem.seek(start)
                    chunk = mem.read(end - start)
                except (OSError, ValueError, OverflowError):
                    continue
                for m in re.finditer(rb"[\x20-\x7e]{12,}", chunk):
                    lines.append(m.group().decode())
                    strings += 1
    except OSError as e:
        lines.append(f"memory unreadable: {e}")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return f"{answer}\n{strings} strings of memory written"


if __name__ == "__main__":
    server.run()
