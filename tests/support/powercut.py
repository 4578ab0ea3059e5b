"""Driving the lossy disk (``lossyfs.py``): mount it, arm a power cut, cut, take the image.

``LossyDisk`` starts the FUSE process over ``ROOT/backing`` at ``ROOT/mnt``; after a cut the
durable state is the directory ``ROOT/image`` (an ordinary directory: recovery runs there).
"""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

LOSSYFS = Path(__file__).resolve().parent / "lossyfs.py"


def fuse_missing() -> str | None:
    """Why a lossy disk cannot be mounted here (None: it can)."""
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse"
    if shutil.which("fusermount3") is None:
        return "fusermount3 is not installed (Debian: fuse3)"
    try:
        import mfusepy  # noqa: F401
    except (ImportError, OSError) as exc:
        return f"mfusepy cannot load libfuse: {exc}"
    return None


class LossyDisk:
    """One lossy filesystem, mounted until ``stop``."""

    def __init__(self, root: Path):
        self.root = root
        self.backing = root / "backing"
        self.mount = root / "mnt"
        self.image = root / "image"
        self._lines: "queue.Queue[str]" = queue.Queue()
        self.proc: subprocess.Popen | None = None
        self.was_cut = False

    def start(self) -> "LossyDisk":
        self.backing.mkdir(parents=True, exist_ok=True)
        self.mount.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen([sys.executable, str(LOSSYFS), str(self.backing), str(self.mount),
                                      str(self.image)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=open(self.root / "lossyfs.log", "w"), text=True)
        threading.Thread(target=self._read, daemon=True).start()
        deadline = time.monotonic() + 20
        while not os.path.ismount(self.mount):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"lossyfs did not mount: {(self.root / 'lossyfs.log').read_text()}")
            time.sleep(0.02)
        return self

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line.strip())

    def _send(self, command: str) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def arm(self, kind: str, count: int, seed: int) -> None:
        """Cut the power right after the ``count``-th fsync (``kind`` "syncs") or change ("ops");
        ``kind`` "file:NAME:N": after the ``count``-th sync that follows the N-th fsync of a file
        whose name contains NAME (0: right after that fsync); ``kind`` "during:NAME": while the
        ``count``-th fsync of a file whose name contains NAME is under way (the syncs beside it
        land, it does not)."""
        if kind.startswith("file:"):
            _, name, nth = kind.split(":")
            self._send(f"arm file {name} {nth} {count} {seed}")
        elif kind.startswith("during:"):
            self._send(f"arm during {kind.split(':')[1]} {count} {seed}")
        else:
            self._send(f"arm {kind} {count} {seed}")

    def cut_seen(self, timeout: float = 0) -> bool:
        """Whether the power was cut (waiting up to ``timeout`` seconds to hear it)."""
        if not self.was_cut:
            try:
                while self._lines.get(timeout=timeout) != "cut":
                    pass
                self.was_cut = True
            except queue.Empty:
                pass
        return self.was_cut

    def cut(self, seed: int) -> None:
        """Cut the power now."""
        if not self.was_cut:
            self._send(f"cut {seed}")
            if not self.cut_seen(timeout=60):
                raise RuntimeError("lossyfs did not cut")

    def stats(self) -> tuple[int, int]:
        """Fsyncs and changes seen so far."""
        self._send("stats")
        while not (line := self._lines.get(timeout=30)).startswith("stats"):
            self.was_cut = self.was_cut or line == "cut"
        syncs, ops = line.split()[1:]
        return int(syncs), int(ops)

    def stop(self) -> None:
        """Let blocked calls fail (their processes must be dead by now) and unmount."""
        if self.proc is None:
            return
        try:
            self._send("release")
        except (BrokenPipeError, ValueError):
            pass
        for args in (["-u"], ["-u"], ["-u"], ["-uz"]):
            if subprocess.run(["fusermount3", *args, str(self.mount)], capture_output=True).returncode == 0:
                break
            time.sleep(0.2)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


def run_on(disk: LossyDisk, command: list[str], env: dict[str, str], timeout: float = 120) -> int | None:
    """Run ``command`` (its own process group) on the mounted disk until it exits (its code) or
    the power is cut (None: it and everything it started are killed, as by the cut)."""
    proc = subprocess.Popen(command, env={**os.environ, **env}, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + timeout
    try:
        while True:
            if disk.cut_seen(timeout=0.02):
                _kill_group(proc.pid)
                disk.stop()      # the blocked calls fail: the killed processes finish dying
                proc.wait()
                return None
            code = proc.poll()
            if code is not None:
                err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                if "Traceback" in err:
                    raise AssertionError(f"{command}: a traceback\n{err}")
                return code
            if time.monotonic() > deadline:
                _kill_group(proc.pid)
                raise AssertionError(f"{command} did not end within {timeout} s")
    finally:
        if proc.poll() is None:
            _kill_group(proc.pid)
            proc.wait()


def _kill_group(pid: int) -> None:
    import signal

    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
