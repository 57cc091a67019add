"""A stateful VFS tool for the MCP tests (RFD 009): asks about each line of `path` (waiting), then
writes the accepted lines to staged.txt and stops. Its pid goes into its first state's content.
The same program is `hang` (waits forever) and `count` (writes `times` to counted.txt; its
schema says `"minimum": 1`, which the host checks before it runs)."""
import json, os, sys

def send(m):
    print(json.dumps(m), flush=True)

def recv():
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)
    return json.loads(line)

init = recv()
tool = init["params"]["tool"]
if tool.get("action") == "schema":
    send({"jsonrpc": "2.0", "method": "result", "params": {"content": [{"type": "text", "text": json.dumps({"tools": [
        {"name": "stager", "summary": "Stage lines of a file one by one.",
         "parameters": {"path": {"type": "string", "summary": "File whose lines to stage.", "required": True}}},
        {"name": "hang", "summary": "Write its pid to hang.pid, then wait forever.", "parameters": {}},
        {"name": "count", "summary": "Write `times` to counted.txt.",
         "parameters": {"times": {"type": "integer", "minimum": 1, "summary": "How many; at least 1."}}}]})}]}})
    sys.exit(0)
if tool["name"] == "hang":
    send({"jsonrpc": "2.0", "id": 1, "method": "fs.write", "params": {"path": "hang.pid", "content": str(os.getpid())}})
    recv()
    while True:
        msg = recv()
        if msg.get("method") == "cancel":
            # A tool that ignores cancel: the host must escalate to SIGTERM/SIGKILL.
            pass
if tool["name"] == "count":
    times = tool["arguments"]["times"]
    send({"jsonrpc": "2.0", "id": 1, "method": "fs.write", "params": {"path": "counted.txt", "content": str(times)}})
    recv()
    send({"jsonrpc": "2.0", "method": "result", "params": {"content": [{"type": "text", "text": f"counted {times}"}]}})
    sys.exit(0)
path = tool["arguments"]["path"]
send({"jsonrpc": "2.0", "id": 1, "method": "fs.read", "params": {"path": path}})
lines = recv()["result"]["content"].splitlines()
staged = []
for i, line in enumerate(lines):
    send({"jsonrpc": "2.0", "method": "state", "params": {"type": "waiting", "content": f"pid {os.getpid()}\n",
          "question": {"id": f"hunk{i}", "text": f"Stage {line!r}?", "answer_type": "boolean"}}})
    msg = recv()
    while msg.get("method") != "apply":
        if msg.get("method") == "cancel":
            sys.exit(0)
        msg = recv()
    if msg["params"]["input"] in (True, "y"):
        staged.append(line)
send({"jsonrpc": "2.0", "id": 2, "method": "fs.write", "params": {"path": "staged.txt", "content": "\n".join(staged) + "\n"}})
recv()
send({"jsonrpc": "2.0", "method": "state", "params": {"type": "stopped", "result": f"Staged {len(staged)} of {len(lines)} changes."}})
