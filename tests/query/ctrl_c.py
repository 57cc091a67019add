"""Drive `jp query` on a real pseudo-terminal and press Ctrl-C once the tool it runs has started.

Usage: ctrl_c.py JP PIDFILE ARGS... — runs `JP ARGS...` on a pty, waits until PIDFILE holds the
tool's pid, waits a little longer, writes ^C to the terminal (the line discipline turns it into
SIGINT for jp), and prints one JSON line: jp's exit code, everything it wrote, and the pid."""
import json
import os
import sys
import time

from pty_session import PtySession

jp, pidfile, args = sys.argv[1], sys.argv[2], sys.argv[3:]
session = PtySession(jp, args)
deadline = time.time() + 30
while not os.path.exists(pidfile) and time.time() < deadline:
    session.pump(0.1)
session.pump(1.0)
session.write(b"\x03")
code = session.wait()
tool = int(open(pidfile).read().strip()) if os.path.exists(pidfile) else 0
print(json.dumps({"exit": code, "output": session.text(), "pid": tool}))
