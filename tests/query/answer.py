"""Drive `jp query` on a real pseudo-terminal and answer its permission question.

Usage: answer.py JP QUESTION ANSWER ARGS... — runs `JP ARGS...` on a pty, waits until what it
wrote holds QUESTION (the end of the question), types ANSWER and Enter, waits for jp to exit, and
prints one JSON line: jp's exit code, everything it wrote, and whether the question was seen."""
import json
import sys
import time

from pty_session import PtySession

jp, question, answer, args = sys.argv[1], sys.argv[2].encode(), sys.argv[3].encode(), sys.argv[4:]
session = PtySession(jp, args)
asked = False
deadline = time.time() + 30
while time.time() < deadline:
    if question in session.output:
        asked = True
        session.write(answer + b"\n")
        break
    if not session.pump(0.1):
        break
code = session.wait()
print(json.dumps({"exit": code, "output": session.text(), "asked": asked}))
