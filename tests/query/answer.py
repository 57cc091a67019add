"""Drive `jp query` on a real pseudo-terminal and answer its permission question.

Usage: answer.py JP QUESTION ANSWER ARGS... — runs `JP ARGS...` on a pty, waits until what it
wrote holds QUESTION (the end of the question), types ANSWER and Enter, waits for jp to exit, and
prints one JSON line: jp's exit code, everything it wrote, and whether the question was seen."""
import json
import os
import pty
import select
import sys
import time

jp, question, answer, args = sys.argv[1], sys.argv[2].encode(), sys.argv[3].encode(), sys.argv[4:]
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


asked = False
deadline = time.time() + 30
while time.time() < deadline:
    if question in output:
        asked = True
        os.write(fd, answer + b"\n")
        break
    if not pump(0.1):
        break
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
print(json.dumps({"exit": os.waitstatus_to_exitcode(status), "output": output.decode(errors="replace"), "asked": asked}))
