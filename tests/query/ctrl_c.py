"""Drive `jp query` on a real pseudo-terminal and press Ctrl-C once the tool it runs has started.

Usage: ctrl_c.py JP PIDFILE ARGS... — runs `JP ARGS...` on a pty, waits until PIDFILE holds the
tool's pid, waits a little longer, writes ^C to the terminal (the line discipline turns it into
SIGINT for jp), and prints one JSON line: jp's exit code, everything it wrote, and the pid."""
import json
import os
import pty
import select
import sys
import time

jp, pidfile, args = sys.argv[1], sys.argv[2], sys.argv[3:]
pid, fd = pty.fork()
if pid == 0:
    os.execv(jp, [jp, *args])

output = b""


def pump(seconds):
    global output
    end = time.time() + seconds
    while time.time() < end:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return False
            if not chunk:
                return False
            output += chunk
    return True


deadline = time.time() + 30
while not os.path.exists(pidfile) and time.time() < deadline:
    pump(0.1)
pump(1.0)
os.write(fd, b"\x03")
status = None
deadline = time.time() + 30
while time.time() < deadline:
    pump(0.1)
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
else:
    os.kill(pid, 9)
    _, status = os.waitpid(pid, 0)
pump(0.2)
tool = int(open(pidfile).read().strip()) if os.path.exists(pidfile) else 0
print(json.dumps({"exit": os.waitstatus_to_exitcode(status), "output": output.decode(errors="replace"), "pid": tool}))
