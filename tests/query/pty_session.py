"""A program on a real pseudo-terminal, for the `jp query` drivers (answer.py, ctrl_c.py):
start it, read what it writes, write to its terminal, wait for its end."""
import os
import pty
import select
import time


class PtySession:
    def __init__(self, program, args):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execv(program, [program, *args])
        self.output = b""

    def pump(self, seconds):
        """Read what it writes for `seconds`; False once its terminal closed."""
        end = time.time() + seconds
        while time.time() < end:
            ready, _, _ = select.select([self.fd], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:
                    return False
                if not chunk:
                    return False
                self.output += chunk
        return True

    def write(self, data):
        os.write(self.fd, data)

    def wait(self, seconds=30):
        """Its exit code, once it ended (killed after `seconds`)."""
        status = None
        deadline = time.time() + seconds
        while time.time() < deadline:
            self.pump(0.1)
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                break
        else:
            os.kill(self.pid, 9)
            _, status = os.waitpid(self.pid, 0)
        self.pump(0.2)
        return os.waitstatus_to_exitcode(status)

    def text(self):
        return self.output.decode(errors="replace")
