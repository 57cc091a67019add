"""P8: a VFS tool (stdlib only) that reads one file through `fs.read` and answers with its size,
so the only large message of the call is the host's `fs.read` response."""

import base64
import json
import sys

stdin, stdout = sys.stdin.buffer, sys.stdout.buffer


def send(message):
    stdout.write(json.dumps(message).encode() + b"\n")
    stdout.flush()


path = json.loads(stdin.readline())["params"]["tool"]["arguments"]["path"]
send({"jsonrpc": "2.0", "id": 1, "method": "fs.read", "params": {"path": path}})
reply = json.loads(stdin.readline())
if "error" in reply:
    send({"jsonrpc": "2.0", "method": "error", "params": {"message": reply["error"]["message"]}})
    sys.exit(0)
result = reply["result"]
encoding = result.get("encoding", "text")
data = base64.b64decode(result["content"]) if encoding == "base64" else result["content"].encode()
send({"jsonrpc": "2.0", "method": "result", "params": {"content": f"read {len(data)} bytes ({encoding})"}})
