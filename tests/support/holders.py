"""A separate live process holding a lock, as a run holds its task's lock.

The holder keeps the lock until the test kills it (or the test process goes away and
its stdin closes), never for a fixed time: a test that asserts "fails at once, naming
the holder" then cannot pass or fail by the speed of the machine — a contender that
waited for the lock would simply never return.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

HOLDER = """\
import sys
from pathlib import Path
from magent.store.locks import Lock
lock = Lock(Path(sys.argv[1]), sys.argv[2], sys.argv[3]).acquire()  # kept referenced: held
print("ready", flush=True)
sys.stdin.read()  # until the test closes our stdin or kills us
"""


class Holder:
    def __init__(self, locks_dir: Path, name: str, what: str):
        self.proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(locks_dir), name, what],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "ready"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def kill(self) -> None:
        """SIGKILL: no cleanup runs in the holder, the kernel releases the flock."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(60)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()

    def __enter__(self) -> "Holder":
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()


def hold_task(task_id: str) -> Holder:
    """Hold task ``task_id``'s lock in another process (as ``TaskDir.lock`` names it)."""
    from magent import paths

    return Holder(paths.locks_dir(), task_id, f"task {task_id}")
