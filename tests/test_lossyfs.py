"""The lossy disk the power-cut tests run on (tests/support/lossyfs.py) keeps what its model says
a disk keeps after a power loss, and nothing more."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from magent.store.files import fsync_dir as _fsync
from support.powercut import LossyDisk

pytestmark = pytest.mark.slow  # (a run without FUSE stops at once: conftest's PREREQUISITES)


def _fsync_quietly(path: Path) -> None:
    try:
        _fsync(path)
    except OSError:
        pass


def _write(path: Path, data: bytes, *, sync: bool) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def _image(disk: LossyDisk) -> dict[str, bytes | None]:
    return {str(p.relative_to(disk.image)): (p.read_bytes() if p.is_file() else None)
            for p in sorted(disk.image.rglob("*"))}


@pytest.fixture
def disk(tmp_path: Path):
    disk = LossyDisk(tmp_path / "disk")
    disk.backing.mkdir(parents=True)
    (disk.backing / "before").write_bytes(b"made before the mount")
    disk.start()
    yield disk
    disk.stop()


def test_only_what_was_synced_survives_a_cut(disk: LossyDisk) -> None:
    m = disk.mount
    _write(m / "named_not_synced", b"data", sync=True)        # content synced, name never
    _write(m / "synced", b"kept", sync=True)
    os.mkdir(m / "sub")
    _write(m / "sub" / "in_new_dir", b"x", sync=True)
    _fsync(m / "sub")                                          # sub's names, but not sub's own
    _write(m / "unsynced_data", b"lost", sync=False)
    _fsync(m)
    os.remove(m / "synced")                                    # an unlink not synced: undone
    os.rename(m / "unsynced_data", m / "renamed")              # a rename not synced: undone
    _write(m / "late", b"late", sync=True)
    disk.cut(seed=1)
    assert disk.cut_seen()
    disk.stop()
    assert _image(disk) == {"before": b"made before the mount", "named_not_synced": b"data",
                            "sub": None, "sub/in_new_dir": b"x", "synced": b"kept",
                            "unsynced_data": b""}


def test_a_directory_made_since_its_parent_was_synced_is_gone(disk: LossyDisk) -> None:
    os.makedirs(disk.mount / "a" / "b")
    _write(disk.mount / "a" / "b" / "f", b"x", sync=True)
    _fsync(disk.mount / "a" / "b")
    _fsync(disk.mount / "a")
    disk.cut(seed=1)
    disk.stop()
    assert _image(disk) == {"before": b"made before the mount"}


def test_an_unsynced_append_comes_back_whole_gone_or_torn_at_a_sector(tmp_path: Path) -> None:
    seen = set()
    for seed in range(12):
        disk = LossyDisk(tmp_path / f"disk{seed}")
        disk.start()
        try:
            _write(disk.mount / "log", b"a" * 700, sync=True)
            _fsync(disk.mount)
            _write(disk.mount / "log", b"b" * 2000, sync=False)
            disk.cut(seed=seed)
        finally:
            disk.stop()
        data = (disk.image / "log").read_bytes()
        assert data == b"a" * 700 or (len(data) % 512 == 0 and data == (b"a" * 700 + b"b" * 2000)[:len(data)])
        seen.add(len(data))
    assert 700 in seen and len(seen) > 1, seen


def test_the_power_goes_right_after_the_kth_sync(disk: LossyDisk) -> None:
    disk.arm("syncs", 2, seed=0)
    _write(disk.mount / "f", b"one", sync=True)               # sync 1
    second = threading.Thread(target=_fsync_quietly, args=(disk.mount,), daemon=True)
    second.start()                                             # sync 2: applied, never answered
    assert disk.cut_seen(timeout=10)
    disk.stop()                                                # (then it fails: the power is off)
    second.join(timeout=10)
    assert _image(disk) == {"before": b"made before the mount", "f": b"one"}
