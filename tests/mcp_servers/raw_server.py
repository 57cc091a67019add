"""A bare MCP server over stdio (no SDK: it writes the JSON-RPC itself), for the relay of
`jp mcp`: it says which request id each call came with, answers with `structuredContent`, can
answer a call with a result that is not an object or with a JSON-RPC error, can hang until
cancelled, and reports the hanging calls and the cancellations it received."""
import json
import sys
import threading

cancelled = []
hanging = []
lock = threading.Lock()


def send(message):
    with lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


TOOLS = [
    {"name": name, "description": text, "inputSchema": {"type": "object", "properties": props}}
    for name, text, props in [
        ("echo", "Echo `text`, saying which request id the call had.", {"text": {"type": "string"}}),
        ("not_an_object", "Answer with a result that is not an object.", {}),
        ("fail", "Answer with a JSON-RPC error.", {}),
        ("hang", "Never answer (until cancelled).", {}),
        ("cancellations", "The ids of the hanging calls and of the cancelled requests.", {}),
    ]
]


def call(request):
    rid, params = request["id"], request.get("params", {})
    name, args = params.get("name"), params.get("arguments") or {}
    if name == "echo":
        text = f"{args.get('text', '')} (id {json.dumps(rid)})"
        send({"jsonrpc": "2.0", "id": rid, "result": {
            "content": [{"type": "text", "text": text}],
            "structuredContent": {"echo": args.get("text", ""), "id": rid},
        }})
    elif name == "not_an_object":
        send({"jsonrpc": "2.0", "id": rid, "result": 42})
    elif name == "fail":
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32000, "message": "failing on purpose"}})
    elif name == "hang":
        hanging.append(rid)
    elif name == "cancellations":
        seen = {"hanging": hanging, "cancelled": cancelled}
        send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": json.dumps(seen)}]}})
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": f"no tool {name}"}})


for line in sys.stdin:
    message = json.loads(line)
    method = message.get("method")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": message["id"], "result": {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw", "version": "0"},
        }})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": message["id"], "result": {"tools": TOOLS}})
    elif method == "tools/call":
        call(message)
    elif method == "notifications/cancelled":
        cancelled.append(message["params"]["requestId"])
    elif "id" in message and method is not None:
        send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": f"no method {method}"}})
