"""A lossy disk for power-cut tests: a FUSE filesystem that forgets what was not made durable.

The mount passes every call through to a backing directory (the *volatile* state: what the
running processes see, like a page cache that never writes back on its own) and keeps, beside
it, the *durable* state: what a disk would still hold after the power went. The model is the
one fsync(2) and the POSIX rename/link rules promise, nothing more (strictly weaker than ext4
with ``data=ordered``, the common default, which in addition commits a new file's name with
its data and often writes data back within seconds):

- a file's **content** is durable as of its last ``fsync``/``fdatasync``; one never synced
  comes back empty (ext4's delayed allocation does the same: the zero-length file);
- a **name** (create, mkdir, rename, link, unlink, rmdir) is durable only once its directory
  was fsynced; then the directory holds exactly the names it had at that fsync, each pointing
  at the file (inode) it named then, with that file's durable content;
- a directory made since the last sync of its parent does not exist after the cut, nor
  anything in it, whatever was synced inside it;
- at the cut a file whose current content extends its durable content may keep part of the
  unsynced tail, cut at a 512-byte sector boundary (the file is then *torn*: the usual state
  of a log whose last append was being written back when the power went);
- what existed in the backing directory when it was mounted is durable.

A power cut freezes the filesystem at once (every later call blocks, so no process makes any
more progress on it), writes the durable state into a fresh directory (the *image*), and says
so. The controller then kills the processes that used it, lets the blocked calls fail with
EIO, and unmounts; recovery runs on the image, an ordinary directory.

Run as ``python lossyfs.py BACKING MOUNT IMAGE``; commands, one per line on stdin:
``cut SEED`` (now), ``arm syncs K SEED`` (after the K-th fsync or fsyncdir, which is applied
and never answered), ``arm ops N SEED`` (after the N-th call that changes something),
``arm file NAME N K SEED`` (after the K-th sync that follows the N-th fsync of a file whose
name contains NAME; K = 0: that fsync itself), ``arm during NAME N SEED`` (while the N-th
fsync of a file whose name contains NAME is slow: the syncs made beside it in the next
``HELD`` seconds are applied, it is not),
``release`` (after a cut: blocked calls fail), ``stats``. It prints ``cut`` once the image is
written, and ``stats SYNCS OPS`` on request. ``LossyDisk`` (``tests/support/powercut.py``)
drives it.
"""

from __future__ import annotations

import errno
import os
import random
import stat
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import mfusepy
from mfusepy import FuseOSError, Operations

SECTOR = 512
HELD = 0.5
"""How long an fsync ``arm during`` holds back runs before the power goes (the syncs made
beside it land meanwhile, as beside a slow flush)."""
TRACE = bool(os.environ.get("LOSSYFS_TRACE"))
"""Print each sync to stderr (``ROOT/lossyfs.log``), to see where a cut came."""


class Lossy(Operations):
    """Passthrough to ``backing``; the durable state kept in memory (see the module's text)."""

    use_ns = True

    def __init__(self, backing: str, image: str):
        self.root = os.path.realpath(backing)
        self.image = image
        self.mutex = threading.Lock()
        self.released = threading.Event()
        self.cut = False
        self.syncs = 0
        self.ops = 0
        self.arm: tuple[str, int] | None = None
        self.file_arm: tuple[str, int, int] | None = None
        """(name, n, k): cut at the k-th sync after the n-th fsync of a file so named."""
        self.during_arm: tuple[str, int] | None = None
        """(name, n): cut during the n-th fsync of a file so named."""
        self.rng = random.Random(0)
        self._next_id = 0
        self.ids: dict[int, int] = {}
        """Backing inode -> file identity (a reused inode number gets a new identity)."""
        self.dirs: dict[int, dict[str, int]] = {}
        """Durable names of each directory (by identity): name -> identity."""
        self.data: dict[int, bytes] = {}
        """Durable content of each file (by identity); a file not here is durably empty."""
        self.kinds: dict[int, int] = {}
        """Identity -> st_mode of the file (type and permissions)."""
        self._adopt_all()

    # identities and the durable state
    def _new_id(self, path: str) -> int:
        st = os.lstat(path)
        self._next_id += 1
        self.ids[st.st_ino] = self._next_id
        self.kinds[self._next_id] = st.st_mode
        return self._next_id

    def _id(self, path: str) -> int:
        st = os.lstat(path)
        found = self.ids.get(st.st_ino)
        return found if found is not None else self._new_id(path)

    def _adopt_all(self) -> None:
        """Everything in the backing directory at the start is durable."""
        root_id = self._new_id(self.root)
        self.root_id = root_id
        for folder, subdirs, files in os.walk(self.root):
            names = {n: self._id(os.path.join(folder, n)) for n in subdirs + files}
            self.dirs[self._id(folder)] = names
            for name in files:
                full = os.path.join(folder, name)
                if stat.S_ISREG(os.lstat(full).st_mode):
                    with open(full, "rb") as fh:
                        self.data[self._id(full)] = fh.read()

    def _sync_file(self, fd: int) -> None:
        ino = os.fstat(fd).st_ino
        ident = self.ids.get(ino)
        if ident is None:
            return
        reader = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY)
        try:
            self.data[ident] = _read_all(reader)
        finally:
            os.close(reader)

    def _sync_dir(self, path: str) -> None:
        names = {}
        for entry in os.scandir(path):
            names[entry.name] = self._id(entry.path)
        self.dirs[self._id(path)] = names

    # the cut
    def _counted(self, kind: str, path: str | None = None) -> None:
        """(Under the mutex, after the call's effect) cut if the armed count is reached."""
        if kind == "sync":
            self.syncs += 1
            if self.file_arm is not None and self.file_arm[1] > 0:
                name, nth, offset = self.file_arm
                if path is not None and name in os.path.basename(path):
                    nth -= 1
                if nth == 0:   # from here on, count ``offset`` more syncs
                    self.arm = ("syncs", self.syncs + offset)
                self.file_arm = (name, nth, offset)
        self.ops += 1
        if self.arm is not None and (self.arm[0] == "syncs" and self.syncs >= self.arm[1]
                                     or self.arm[0] == "ops" and self.ops >= self.arm[1]):
            self._cut()

    def _cut(self) -> None:
        if self.cut:
            return
        self.cut = True
        self._write_image()
        _say("cut")

    def _write_image(self) -> None:
        """The durable state as a directory tree at ``self.image``."""
        volatile = {}
        for folder, subdirs, files in os.walk(self.root):
            for name in files:
                full = os.path.join(folder, name)
                ident = self.ids.get(os.lstat(full).st_ino)
                if ident is not None:
                    volatile[ident] = full
        os.makedirs(self.image, mode=0o700)
        self._write_dir(self.root_id, self.image, volatile)

    def _write_dir(self, ident: int, target: str, volatile: dict[int, str]) -> None:
        for name, child in self.dirs.get(ident, {}).items():
            mode = self.kinds.get(child, stat.S_IFREG | 0o600)
            out = os.path.join(target, name)
            if stat.S_ISDIR(mode):
                os.mkdir(out, stat.S_IMODE(mode))
                self._write_dir(child, out, volatile)
            elif stat.S_ISREG(mode):
                content = self._torn(self.data.get(child, b""), volatile.get(child))
                fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, stat.S_IMODE(mode))
                with os.fdopen(fd, "wb") as fh:
                    fh.write(content)

    def _torn(self, durable: bytes, live_path: str | None) -> bytes:
        """``durable``, or with part of the unsynced tail appended since (cut at a sector)."""
        if live_path is None or self.rng.random() < 0.5:
            return durable
        try:
            with open(live_path, "rb") as fh:
                live = fh.read()
        except OSError:
            return durable
        if len(live) <= len(durable) or not live.startswith(durable):
            return durable
        cuts = range((len(durable) // SECTOR + 1) * SECTOR, len(live), SECTOR)
        return live[:self.rng.choice(cuts)] if cuts else durable

    # commands (the controller's, on stdin)
    def command(self, line: str) -> None:
        words = line.split()
        if not words:
            return
        if words[0] == "release":
            self.released.set()
            return
        with self.mutex:
            if words[0] == "cut":
                self.rng.seed(int(words[1]))
                self._cut()
            elif words[0] == "arm" and words[1] == "file":
                self.file_arm = (words[2], int(words[3]), int(words[4]))
                self.rng.seed(int(words[5]))
            elif words[0] == "arm" and words[1] == "during":
                self.during_arm = (words[2], int(words[3]))
                self.rng.seed(int(words[4]))
            elif words[0] == "arm":
                self.arm = (words[1], int(words[2]))
                self.rng.seed(int(words[3]))
                if self.ops >= self.arm[1] or self.arm[0] == "syncs" and self.syncs >= self.arm[1]:
                    self._cut()
            elif words[0] == "stats":
                _say(f"stats {self.syncs} {self.ops}")

    # the calls (each under the mutex; after a cut, blocked until released, then EIO)
    def _full(self, path: str) -> str:
        return self.root + path

    def _enter(self) -> None:
        self.mutex.acquire()
        if self.cut:
            self.mutex.release()
            self.released.wait()
            raise FuseOSError(errno.EIO)

    def getattr(self, path: str, fh: int | None = None) -> dict[str, Any]:
        self._enter()
        try:
            st = os.fstat(fh) if fh is not None else os.lstat(self._full(path))
        finally:
            self.mutex.release()
        keys = ("st_mode", "st_nlink", "st_uid", "st_gid", "st_size", "st_atime_ns", "st_mtime_ns",
                "st_ctime_ns", "st_ino")
        out = {k: getattr(st, k) for k in keys}
        for k in ("st_atime", "st_mtime", "st_ctime"):
            out[k] = out.pop(k + "_ns")
        return out

    def readdir(self, path: str, fh: int) -> list[tuple[str, dict[str, int], int]]:
        def listing() -> list[tuple[str, dict[str, int], int]]:
            here = os.lstat(self._full(path))
            out = [(n, {"st_mode": here.st_mode, "st_ino": here.st_ino}, 0) for n in (".", "..")]
            for entry in os.scandir(self._full(path)):
                st = entry.stat(follow_symlinks=False)
                out.append((entry.name, {"st_mode": st.st_mode, "st_ino": st.st_ino}, 0))
            return out
        return self._plain(listing)

    def readlink(self, path: str) -> str:
        return self._plain(lambda: os.readlink(self._full(path)))

    def statfs(self, path: str) -> dict[str, int]:
        st = self._plain(lambda: os.statvfs(self._full(path)))
        return {k: getattr(st, k) for k in ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail",
                                             "f_ffree", "f_files", "f_flag", "f_frsize", "f_namemax")}

    def open(self, path: str, flags: int) -> int:
        return self._plain(lambda: os.open(self._full(path), flags & ~os.O_CREAT))

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        return self._plain(lambda: os.pread(fh, size, offset))

    def flush(self, path: str, fh: int) -> int:
        return 0

    def release(self, path: str, fh: int) -> int:
        os.close(fh)   # (also after a cut: a dying process's files are closed)
        return 0

    # the calls that change something
    def create(self, path: str, mode: int, flags: int = os.O_WRONLY) -> int:
        def make() -> int:
            fd = os.open(self._full(path), flags | os.O_CREAT, mode)
            self._new_id(self._full(path))
            return fd
        return self._change(make)

    def mkdir(self, path: str, mode: int) -> int:
        return self._change(lambda: (os.mkdir(self._full(path), mode), self._new_id(self._full(path)))[0])

    def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
        return self._change(lambda: os.pwrite(fh, data, offset))

    def truncate(self, path: str, length: int, fh: int | None = None) -> int:
        return self._change(lambda: os.truncate(fh if fh is not None else self._full(path), length))

    def unlink(self, path: str) -> int:
        return self._change(lambda: os.unlink(self._full(path)))

    def rmdir(self, path: str) -> int:
        return self._change(lambda: os.rmdir(self._full(path)))

    def rename(self, old: str, new: str) -> int:
        return self._change(lambda: os.rename(self._full(old), self._full(new)))

    def link(self, target: str, source: str) -> int:
        return self._change(lambda: os.link(self._full(source), self._full(target)))

    def symlink(self, target: str, source: str) -> int:
        def make() -> None:
            os.symlink(source, self._full(target))
            self._new_id(self._full(target))
        return self._change(make)

    def chmod(self, path: str, mode: int) -> int:
        return self._change(lambda: os.chmod(self._full(path), mode))

    def chown(self, path: str, uid: int, gid: int) -> int:
        return self._change(lambda: os.chown(self._full(path), uid, gid))

    def utimens(self, path: str, times: tuple[int, int] | None = None) -> int:
        return self._change(lambda: os.utime(self._full(path), ns=times) if times else os.utime(self._full(path)))

    def fsync(self, path: str, datasync: int, fh: int) -> int:
        if TRACE:
            print(f"fsync {self.syncs + 1} {path} {os.fstat(fh).st_size}", file=sys.stderr, flush=True)
        if self._held(path):
            time.sleep(HELD)
            with self.mutex:
                self._cut()
            self.released.wait()
            raise FuseOSError(errno.EIO)
        return self._change(lambda: self._sync_file(fh), kind="sync", path=path)

    def _held(self, path: str | None) -> bool:
        """Whether this fsync of ``path`` is the one ``arm during`` waits for."""
        with self.mutex:
            if self.during_arm is None or path is None or self.during_arm[0] not in os.path.basename(path):
                return False
            name, nth = self.during_arm
            self.during_arm = (name, nth - 1) if nth > 1 else None
            return nth == 1

    def fsyncdir(self, path: str, datasync: int, fh: int) -> int:
        if TRACE:
            print(f"fsyncdir {self.syncs + 1} {path}", file=sys.stderr, flush=True)
        return self._change(lambda: self._sync_dir(self._full(path)), kind="sync")

    def _plain(self, call: Callable[[], Any]) -> Any:
        self._enter()
        try:
            return call()
        finally:
            self.mutex.release()

    def _change(self, call: Callable[[], Any], kind: str = "change", path: str | None = None) -> Any:
        """Run a call that changes the volatile (or, for a sync, the durable) state and count
        it; when it reaches the armed count the power is cut there, and the caller never hears
        back (it blocks until released, then gets EIO: it was dead by then)."""
        self._enter()
        try:
            result = call()
            self._counted(kind, path)
            cut = self.cut
        finally:
            self.mutex.release()
        if cut:
            self.released.wait()
            raise FuseOSError(errno.EIO)
        return 0 if result is None else result


def _read_all(fd: int) -> bytes:
    chunks, offset = [], 0
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def main(backing: str, mount: str, image: str) -> None:
    fs = Lossy(backing, image)

    def commands() -> None:
        for line in sys.stdin:
            fs.command(line)
        fs.released.set()   # the controller is gone: let everything fail

    threading.Thread(target=commands, daemon=True).start()
    mfusepy.FUSE(fs, mount, foreground=True, nothreads=False, hard_remove=True, use_ino=True)


if __name__ == "__main__":
    main(*sys.argv[1:4])
