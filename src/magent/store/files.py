"""Durable file primitives: atomic replace, immutable create, JSON Lines append.

Why each step: the temp file lives in the target's directory so ``os.replace``
is a rename within one filesystem (atomic); the data is fsynced before the
rename so the new name never points at unwritten blocks; the directory is
fsynced after it so the rename itself survives a power loss.

Nothing under the home is read or written through a symbolic link: files are opened
with ``O_NOFOLLOW`` and a target that is a link is refused (``SymlinkError`` naming
it), so a link planted in a task directory cannot make magent print, load or append
to a file elsewhere.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import secrets
import stat
import sys
from pathlib import Path
from typing import Any, Iterator

from magent import failpoints
from magent.errors import StoreError, SymlinkError

DIR_MODE = 0o700
FILE_MODE = 0o600
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
LINK_HINT = "put the real file back, or delete the task"


def link_error(path: Path | str, hint: str = LINK_HINT) -> SymlinkError:
    return SymlinkError(f"{path} is a symbolic link; magent never reads or writes through a link "
                        f"under its home ({hint})")


def refuse_link(path: Path | str) -> None:
    """Raise ``SymlinkError`` if ``path`` is a symbolic link (a missing path is fine)."""
    if os.path.islink(path):
        raise link_error(path)


def open_nofollow(path: Path | str, flags: int, mode: int = FILE_MODE) -> int:
    """``os.open`` that refuses a symbolic link as the last component (``SymlinkError``)."""
    try:
        return os.open(path, flags | NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP and os.path.islink(path):
            raise link_error(path) from None
        raise


def read_bytes(path: Path | str) -> bytes:
    """The content of a regular file, never read through a link.

    ``FileNotFoundError`` and ``IsADirectoryError`` as ``open`` raises them; ``SymlinkError``
    for a link; ``StoreError`` for a FIFO or device (opened without blocking, never read).
    """
    fd = open_nofollow(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", str(path))
        if not stat.S_ISREG(mode):
            raise StoreError(f"{path} is not a regular file")
        return fh.read()


def ensure_dir(path: Path) -> Path:
    """Create ``path`` (and parents) with mode 0700. Raises ``StoreError`` if it cannot.

    Each folder made is durable when this returns: a new name lasts a power loss only once
    its parent is synced (fsync(2)), and a home that vanished would take its tasks with it."""
    missing = []
    folder = path
    while not os.path.lexists(folder) and folder.parent != folder:
        missing.append(folder)
        folder = folder.parent
    try:
        path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        for made in reversed(missing):
            fsync_dir(made.parent)
    except FileExistsError:
        raise StoreError(f"{path} exists and is not a directory") from None
    except PermissionError:
        raise StoreError(f"cannot create {path}: permission denied (set MAGENT_HOME to a writable "
                         "directory)") from None
    except OSError as exc:
        raise StoreError(f"cannot create {path}: {exc.strerror}") from None
    if not path.is_dir():
        raise StoreError(f"{path} exists and is not a directory")
    return path


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


TEMP_NAME = re.compile(r"^\..+\.\d+\.[0-9a-f]{8}\.tmp$")
"""Names of the temp files ``atomic_write`` and ``create_immutable`` write before renaming."""


def temp_files(directory: Path) -> list[Path]:
    """Temp files left in ``directory`` and its ``artifacts/`` by writes that were killed.

    Only the holder of a task's lock writes in its directory, so under that lock every one
    of them is stale. Symlinks and directories with such names are not listed, and a folder
    that is a symlink is not looked into (what is removed stays inside the root).
    """
    found: list[Path] = []
    for folder in (directory, directory / "artifacts"):
        if os.path.islink(folder):
            continue
        try:
            it = os.scandir(folder)
        except OSError:
            continue
        with it:
            found.extend(Path(e.path) for e in it
                         if TEMP_NAME.fullmatch(e.name) and e.is_file(follow_symlinks=False))
    return sorted(found)


def remove_temp_files(directory: Path) -> list[Path]:
    """Remove the stale temp files of ``directory`` (see ``temp_files``); returns those removed."""
    removed = []
    for path in temp_files(directory):
        try:
            os.unlink(path)
        except FileNotFoundError:
            continue
        removed.append(path)
    return removed


def _write_temp(path: Path, data: bytes, mtime_ns: int | None = None) -> Path:
    fd, tmp = write_temp(path, data)
    try:
        if mtime_ns is not None:
            os.utime(fd, ns=(mtime_ns, mtime_ns))
        os.fsync(fd)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        os.close(fd)
    return tmp


def write_temp(path: Path, data: bytes) -> tuple[int, Path]:
    """Write ``data`` to a new temp file beside ``path``, not synced; returns its open
    descriptor (the caller syncs and closes it) and its path."""
    fd, tmp = create_temp(path)
    fill_temp(fd, tmp, data)
    return fd, tmp


def create_temp(path: Path) -> tuple[int, Path]:
    """A new empty temp file beside ``path`` (named after it), open for writing."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE), tmp


def fill_temp(fd: int, tmp: Path, data: bytes) -> None:
    """Write ``data`` to the temp file ``tmp`` open as ``fd``; on failure it is closed and removed."""
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise


def write_cache(path: Path, data: bytes, *, folders: int = 1) -> bool:
    """Replace ``path`` (a cache file under the home) with ``data``: renamed into place, not
    synced. The last ``folders`` folders of its path are made (0700) when missing; the home
    itself never is, and a folder that is a planted link or not a folder is left alone.
    False when nothing was written (that, or a read-only or full home): a cache goes without."""
    made = [path.parents[i] for i in reversed(range(folders))]
    try:
        if not made[0].parent.is_dir():
            return False
        for folder in made:
            if not folder.exists():
                folder.mkdir(mode=0o700)
            if not stat.S_ISDIR(os.stat(folder, follow_symlinks=False).st_mode):
                return False
        fd, tmp = write_temp(path, data)
        os.close(fd)
        try:
            os.replace(tmp, path)   # replaces a planted link itself, never writes through it
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    except OSError:
        return False
    return True


def _store_error(exc: OSError, verb: str, path: Path) -> StoreError:
    reason = "permission denied" if isinstance(exc, PermissionError) else (exc.strerror or str(exc))
    return StoreError(f"cannot {verb} {path}: {reason}")


def atomic_write(path: Path, data: bytes, *, mtime_ns: int | None = None) -> None:
    """Replace ``path`` with ``data`` so readers see the old or the new file, never a mix.
    With ``mtime_ns`` the new file has that modification time from the moment it has the name
    (set on the temp file, so no crash leaves it with another).

    Raises ``StoreError`` when the directory cannot be written (read-only, full...), and
    ``SymlinkError`` when ``path`` is a link (replacing it would hide what was planted there).
    """
    refuse_link(path)
    try:
        tmp = _write_temp(path, data, mtime_ns)
        try:
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        fsync_dir(path.parent)
    except OSError as exc:
        raise _store_error(exc, "write", path) from None


def write_output(path: Path, data: bytes) -> None:
    """A file the user named (``--html``, ``--output``) written as ``atomic_write`` does; a link
    is refused in words for a file outside the home (replacing it would drop the link)."""
    if os.path.islink(path):
        raise SymlinkError(f"{path} is a symbolic link; name the file it leads to, or another file "
                           "(magent writes a file whole by replacing it, which would replace the link)")
    atomic_write(path, data)


def create_immutable(path: Path, data: bytes) -> None:
    """Create ``path`` atomically; fails with ``FileExistsError`` if it exists (never overwrites).

    Other failures (read-only, full disk) raise ``StoreError``.
    """
    try:
        tmp = _write_temp(path, data)
    except OSError as exc:
        raise _store_error(exc, "write", path) from None
    failpoints.hit("before_link")
    try:
        os.link(tmp, path)  # link(2) refuses to replace an existing name
    except FileExistsError:
        raise
    except OSError as exc:
        raise _store_error(exc, "write", path) from None
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(path.parent)


_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
"""What ``json.dumps(obj, ensure_ascii=False, separators=(",", ":"))`` makes for every call, made once."""


def plain_json(value: Any, floats: str = "any") -> bool:
    """Whether ``value`` is made of JSON's own types only: texts, integers, booleans, None, lists
    and dicts with text keys, and floats as ``floats`` says: ``"any"``, ``"finite"`` (pydantic's
    JSON mode writes NaN and the infinities as null) or ``"none"`` (pydantic writes some floats
    other than ``json`` does: ``1e-05`` as ``0.00001``). Such a value needs no model to be
    written as its model would write it."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return True
    if kind is float:
        return floats == "any" or (floats == "finite" and math.isfinite(value))
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str or not plain_json(item, floats):
                return False
        return True
    if kind is list:
        for item in value:
            if not plain_json(item, floats):
                return False
        return True
    return False


def dumps(obj: Any, *, indent: int | None = None) -> bytes:
    if indent is None:
        return _COMPACT.encode(obj).encode()
    return (json.dumps(obj, ensure_ascii=False, indent=indent) + "\n").encode()


def write_json(path: Path, obj: Any, *, indent: int | None = 2) -> None:
    atomic_write(path, dumps(obj, indent=indent))


def loads(data: bytes | str) -> Any:
    """``json.loads`` for what a file under the home holds: ``ValueError`` for anything that is
    not JSON, a file nested deeper than the parser's stack included (``RecursionError``), so
    a crafted file is reported like a damaged one, never as an internal error.

    Once pydantic is loaded (every command loads it, typer converts parameters with it), its
    parser reads first: a 10 KB tool result's line takes it a third of what ``json`` takes,
    and a resume reads a thousand of them. What it parses, it gives as ``json`` does
    (tests/test_store_files.py holds the two to the same values); what it refuses (a lone
    surrogate, a byte-order mark, JSON nested past 200 levels, anything not JSON) goes to
    ``json``, whose answer or error is the one given. The listing used on its own
    (``import magent.store.listing``) still loads nothing of pydantic."""
    global _from_json
    if _from_json is None:
        core = sys.modules.get("pydantic_core")
        _from_json = core.from_json if core is not None else None
    if _from_json is not None:
        try:
            return _from_json(data)
        except (ValueError, TypeError):  # (TypeError: a text holding a lone surrogate)
            pass
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("nested too deeply to be read") from None


_from_json: Any = None
"""pydantic's ``from_json``, once something has loaded pydantic."""


def read_json(path: Path) -> Any:
    return loads(read_bytes(path))


class JsonlWriter:
    """Appends one JSON object per line, each with a single ``write(2)``.

    Opening repairs a torn tail left by a crash mid-append (a last line without
    its newline) by truncating it away, so the next line starts clean. The
    caller must hold the task's lock: one writer per file.
    """

    def __init__(self, path: Path):
        self.path = path
        self.named = os.path.lexists(path)
        """Whether the file's name is known durable: one this writer creates is not, until its
        directory is synced (``sync`` does it with the first lines, a group commit with its own)."""
        try:
            self._fd = open_nofollow(path, os.O_RDWR | os.O_CREAT | os.O_APPEND)
        except OSError as exc:
            raise _store_error(exc, "open", path) from None
        self._repair_tail()
        self.appended = 0
        """Lines appended so far; ``synced`` of them are known durable."""
        self.synced = 0

    def _repair_tail(self) -> None:
        size = os.fstat(self._fd).st_size
        if size == 0 or os.pread(self._fd, 1, size - 1) == b"\n":
            return
        # Scan back for the last complete line; everything after it is the torn one.
        pos, chunk = size, 65536
        keep = 0
        while pos > 0:
            start = max(0, pos - chunk)
            block = os.pread(self._fd, pos - start, start)
            idx = block.rfind(b"\n")
            if idx >= 0:
                keep = start + idx + 1
                break
            pos = start
        os.ftruncate(self._fd, keep)
        os.fsync(self._fd)

    def append(self, obj: Any) -> None:
        self.append_line(dumps(obj))

    def append_line(self, line: bytes) -> None:
        """Append one line of JSON already made (``line`` without its newline)."""
        view = memoryview(line + b"\n")
        try:
            while view:
                n = os.write(self._fd, view)
                view = view[n:]
        except OSError as exc:
            raise _store_error(exc, "append to", self.path) from None
        self.appended += 1

    @property
    def fd(self) -> int:
        return self._fd

    @property
    def dirty(self) -> bool:
        """True when a line appended is not known to be durable yet."""
        return self._fd >= 0 and self.appended > self.synced

    def synced_up_to(self, count: int) -> None:
        """Note that the first ``count`` lines appended are durable (a group commit synced them)."""
        self.synced = max(self.synced, count)

    def sync(self) -> None:
        """Make everything appended so far durable."""
        if self.dirty:
            count = self.appended
            os.fsync(self._fd)
            self.synced_up_to(count)
            if not self.named:  # lines a power loss keeps are no use under a name it loses
                fsync_dir(self.path.parent)
                self.named = True

    def close(self) -> None:
        if self._fd >= 0:
            self.sync()
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> "JsonlWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_jsonl(path: Path, problems: list[str] | None = None) -> Iterator[dict[str, Any]]:
    """Yield each object of a JSON Lines file.

    A torn last line (no newline, or not JSON) is skipped silently: it is what a
    crash mid-append leaves. A bad line elsewhere is skipped and reported in
    ``problems``.
    """
    try:
        data = read_bytes(path)
    except FileNotFoundError:
        return
    lines = data.split(b"\n")
    torn_tail = lines[-1]  # b"" when the file ends with a newline
    for number, line in enumerate(lines[:-1], start=1):
        if not line.strip():
            continue
        try:
            obj = loads(line)
        except ValueError:
            if problems is not None:
                problems.append(f"{path.name}:{number}: not valid JSON, skipped")
            continue
        if isinstance(obj, dict):
            yield obj
        elif problems is not None:
            problems.append(f"{path.name}:{number}: not a JSON object, skipped")
    if torn_tail.strip() and problems is not None:
        problems.append(f"{path.name}: torn last line ignored (a crash mid-write)")


class AppendLog:
    """A task's JSON Lines log that opens its ``JsonlWriter`` on the first append (a task that
    never writes to the log never creates it); subclasses say what a line holds."""

    def __init__(self, path: Path):
        self.path = path
        self._writer: JsonlWriter | None = None

    def _append(self, doc: dict[str, Any]) -> None:
        self._append_line(dumps(doc))

    def _append_line(self, line: bytes) -> None:
        """Append one line of JSON already made (without its newline)."""
        if self._writer is None:
            self._writer = JsonlWriter(self.path)
        self._writer.append_line(line)

    @property
    def writer(self) -> JsonlWriter | None:
        """The open appender (None before the first append)."""
        return self._writer

    def sync(self) -> None:
        if self._writer is not None:
            self._writer.sync()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
