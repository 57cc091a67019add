"""P1, our side: a VFS tool (stdlib only) that reads one file `n` times through `fs.read`.

Each round trip is timed inside the tool with perf_counter_ns: serialise the request, write it
to the host, read the response line, parse it. Our side of each round trip includes the host's
whole path: protocol decode, the AccessPolicy decision (as written and as resolved), the
sandboxed read of the file (openat2 beneath the root) and the Scrubber over the content. The
tool itself runs under Landlock + seccomp. Result: JSON with every sample in nanoseconds.
"""

import json
import sys
import time

stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
WARMUP = 200


def send(message):
    stdout.write(json.dumps(message).encode() + b"\n")
    stdout.flush()


def response(want_id):
    """The response to `want_id`; notifications (e.g. `pending`) are skipped."""
    while True:
        line = stdin.readline()
        if not line:
            sys.exit("host closed stdin")
        message = json.loads(line)
        if message.get("id") == want_id:
            global reply_bytes
            reply_bytes = len(line)
            return message


init = json.loads(stdin.readline())
args = init["params"]["tool"]["arguments"]
path, n = args["path"], int(args["n"])
reply_bytes = 0
# Warm-up, not timed (as on the baseline's side): caches, the interpreter, the host's path.
for i in range(n + 1, n + 1 + WARMUP):
    send({"jsonrpc": "2.0", "id": i, "method": "fs.read", "params": {"path": path}})
    response(i)
samples = []
for i in range(1, n + 1):
    t = time.perf_counter_ns()
    send({"jsonrpc": "2.0", "id": i, "method": "fs.read", "params": {"path": path}})
    reply = response(i)
    samples.append(time.perf_counter_ns() - t)
    if "error" in reply:
        send({"jsonrpc": "2.0", "method": "error", "params": {"message": reply["error"]["message"]}})
        sys.exit(0)
    size = len(reply["result"]["content"])
send({"jsonrpc": "2.0", "method": "result", "params": {"content": json.dumps({"size": size, "ns": samples, "reply_bytes": reply_bytes})}})
