"""A magent process on a pseudo-terminal, driven like a person at the keyboard."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time


class Terminal:
    """A process attached to a pseudo-terminal, driven like a person at the keyboard."""

    def __init__(self, *args: str):
        self.master, slave = os.openpty()
        self.proc = subprocess.Popen([sys.executable, "-m", "magent", *args], stdin=slave, stdout=slave,
                                     stderr=slave, env={**os.environ, "COLUMNS": "120"}, close_fds=True)
        os.close(slave)
        self.seen = ""

    def expect(self, text: str, timeout: float = 60) -> None:
        deadline = time.time() + timeout
        while text not in self.seen:
            left = deadline - time.time()
            assert left > 0, f"never saw {text!r}; screen:\n{self.seen}"
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    self.seen += os.read(self.master, 4096).decode(errors="replace")
                except OSError:
                    break
        assert text in self.seen, self.seen

    def type(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())

    def finish(self) -> int:
        code = self.proc.wait(timeout=60)
        os.close(self.master)
        return code
