"""Running magent in a pseudo-terminal, as a person at the keyboard would."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time


class Terminal:
    """A process attached to a pseudo-terminal ``columns`` wide, driven like a person at the keyboard."""

    def __init__(self, *args: str, columns: int = 120, env: dict[str, str] | None = None):
        self.master, slave = os.openpty()
        self.proc = subprocess.Popen([sys.executable, "-m", "magent", *args], stdin=slave, stdout=slave,
                                     stderr=slave, env={**os.environ, "COLUMNS": str(columns), **(env or {})},
                                     close_fds=True)
        os.close(slave)
        self.seen = ""

    def _read(self, timeout: float) -> bool:
        """Read what is there within ``timeout``; False once the terminal is closed."""
        ready, _, _ = select.select([self.master], [], [], timeout)
        if ready:
            try:
                chunk = os.read(self.master, 4096)
            except OSError:
                return False
            if not chunk:
                return False
            self.seen += chunk.decode(errors="replace")
        return True

    def expect(self, text: str, timeout: float = 60) -> None:
        deadline = time.time() + timeout
        while text not in self.seen:
            left = deadline - time.time()
            assert left > 0, f"never saw {text!r}; screen:\n{self.seen}"
            if not self._read(left):
                break
        assert text in self.seen, self.seen

    def expect_times(self, text: str, count: int, timeout: float = 60) -> None:
        """Read until ``text`` has appeared ``count`` times (a prompt asked again, say)."""
        deadline = time.time() + timeout
        while self.seen.count(text) < count:
            left = deadline - time.time()
            assert left > 0, f"saw {text!r} {self.seen.count(text)} times, not {count}; screen:\n{self.seen}"
            assert self._read(left), f"the terminal closed; screen:\n{self.seen}"

    def type(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())

    def finish(self, timeout: float = 60) -> int:
        """Read what the process prints until it exits; its exit code."""
        deadline = time.time() + timeout
        while self._read(max(deadline - time.time(), 0.01)):
            assert time.time() < deadline, f"the process did not finish; screen:\n{self.seen}"
        code = self.proc.wait(timeout=timeout)
        os.close(self.master)
        return code

    def screen(self, timeout: float = 60) -> str:
        """Everything the process printed until it exited (lines without their carriage returns)."""
        self.finish(timeout)
        return self.seen.replace("\r\n", "\n")
