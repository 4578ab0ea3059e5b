"""Group commit (store/commit.py): what waits for the disk, what is shared, and in which order.

fsync itself cannot be observed without pulling the power, so these tests watch what the
committer asks of the operating system (``os.fsync`` and ``os.link`` wrapped to record their
calls) and what a reader of the task directory sees.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from magent.models import Checkpoint, State
from magent.store import commit as commit_mod
from magent.store.checkpoints import CheckpointLog
from magent.store.commit import Committer
from magent.store.files import JsonlWriter

TASK = "0b7f0d5e-5a4e-4d8e-9a43-0e1c0d4f5a61"


def checkpoint(seq: int) -> Checkpoint:
    from magent.ids import new_id, now

    return Checkpoint(checkpoint_id=new_id(), task_id=TASK, sequence=seq, parent_id=None,
                      position="n", created_at=now(), reason="llm_turn", state=State(),
                      leaf_entry_id=None, entry_count=0)


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Every fsync (by the file it syncs) and link the committer makes, in order."""
    calls: list[tuple[str, str]] = []
    real_fsync, real_link = os.fsync, os.link

    def fsync(fd: int, what: str) -> None:
        calls.append(("fsync", Path(what).name))
        real_fsync(fd)

    def link(src: object, dst: object) -> None:
        calls.append(("link", Path(str(dst)).name))
        real_link(src, dst)

    monkeypatch.setattr(commit_mod, "_fsync", fsync)
    monkeypatch.setattr(commit_mod.os, "link", link)
    return calls


def setup(tmp_path: Path, mode: str) -> tuple[JsonlWriter, CheckpointLog, Committer]:
    log = JsonlWriter(tmp_path / "entries.jsonl")
    checkpoints = CheckpointLog(tmp_path, TASK)
    committer = Committer(tmp_path, lambda: [log], mode)
    checkpoints.committer = committer
    return log, checkpoints, committer


def test_a_commit_syncs_entries_then_checkpoints_and_their_names(tmp_path: Path, recorded) -> None:
    log, checkpoints, committer = setup(tmp_path, "sync")
    log.append({"id": "e1"})
    checkpoints.write(checkpoint(0))
    assert (tmp_path / "checkpoint_000.json").exists()      # linked at once: a kill -9 keeps it
    assert recorded == [("link", "checkpoint_000.json")]    # but nothing forced to the disk yet
    assert committer.pending()
    asyncio.run(committer.durable())
    assert recorded[1] == ("fsync", "entries.jsonl")        # what the checkpoint points at first
    assert {name for kind, name in recorded[2:]} == {"checkpoint_000.json", tmp_path.name}
    assert len(recorded) == 4 and not committer.pending()
    asyncio.run(committer.durable())
    assert len(recorded) == 4                               # nothing left: no syscall at all


def test_sessions_waiting_at_once_share_one_commit_and_names_appear_in_order(tmp_path: Path, recorded) -> None:
    log, checkpoints, committer = setup(tmp_path, "sync")

    async def session(n: int) -> None:
        log.append({"id": f"e{n}"})
        checkpoints.write(checkpoint(n))
        await committer.durable()

    async def main() -> None:
        await asyncio.gather(*(session(n) for n in range(10)))

    asyncio.run(main())
    links = [name for kind, name in recorded if kind == "link"]
    assert links == [f"checkpoint_{n:03d}.json" for n in range(10)]
    entry_syncs = [name for kind, name in recorded if name == "entries.jsonl"]
    assert len(entry_syncs) == 1               # ten sessions, one sync of the entries for all
    assert checkpoints.numbers() == list(range(10))
    assert [checkpoints.read(n).sequence for n in range(10)] == list(range(10))


def test_a_reader_sees_every_checkpoint_written(tmp_path: Path, recorded) -> None:
    log, checkpoints, committer = setup(tmp_path, "step")
    checkpoints.write(checkpoint(0))
    checkpoints.write(checkpoint(1))
    assert checkpoints.read(1).sequence == 1   # a read commits what waits first
    committer.flush()
    assert not committer.pending()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_exit_mode_links_at_once_and_syncs_only_when_asked(tmp_path: Path, recorded) -> None:
    log, checkpoints, committer = setup(tmp_path, "exit")
    log.append({"id": "e1"})
    checkpoints.write(checkpoint(0))
    assert (tmp_path / "checkpoint_000.json").exists()      # visible (a kill -9 keeps it)
    assert [kind for kind, _ in recorded] == ["link"]        # but nothing forced to the disk
    committer.flush()                                        # the end of the run
    synced = {name for kind, name in recorded if kind == "fsync"}
    assert synced == {"entries.jsonl", "checkpoint_000.json", tmp_path.name}
    assert not committer.pending()


def test_a_commit_that_fails_says_which_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from magent.errors import StoreError

    log, checkpoints, committer = setup(tmp_path, "sync")
    log.append({"id": "e1"})

    def broken(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(commit_mod.os, "fsync", broken)
    with pytest.raises(StoreError, match="entries.jsonl.*Input/output error"):
        asyncio.run(committer.durable())


def test_what_a_failed_commit_held_is_synced_by_the_next_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A commit whose fsync of the entries fails leaves nothing of it known durable, and does
    not go on to the checkpoint that points at them: the next commit syncs the entries, the
    checkpoint (by its name: the failed commit closed its descriptor) and the directory."""
    from magent.errors import StoreError

    log, checkpoints, committer = setup(tmp_path, "sync")
    log.append({"id": "e1"})
    checkpoints.write(checkpoint(0))
    calls: list[str] = []
    failures = [1]
    real = commit_mod._fsync

    def failing_once(fd: int, what: str) -> None:
        calls.append(Path(what).name)
        if failures and Path(what).name == "entries.jsonl":
            failures.pop()
            raise StoreError(f"cannot make {what} durable: Input/output error")
        real(fd, what)

    monkeypatch.setattr(commit_mod, "_fsync", failing_once)
    with pytest.raises(StoreError, match="Input/output error"):
        asyncio.run(committer.durable())
    assert committer.pending()
    assert calls == ["entries.jsonl"]
    calls.clear()
    asyncio.run(committer.durable())
    assert set(calls) == {"entries.jsonl", "checkpoint_000.json", tmp_path.name}
    assert not committer.pending()


def test_a_checkpoint_is_synced_after_the_lines_a_commit_under_way_syncs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fsyncs side by side land in any order, and the power can go between them: a checkpoint
    must reach the disk after the entries it points at, even when a commit begun before it (a
    reply's, say) is still syncing them. Here that commit's fsync of the entries is slow."""
    log, checkpoints, committer = setup(tmp_path, "sync")
    done: list[str] = []
    real = commit_mod._fsync

    def slow_entries(fd: int, what: str) -> None:
        if Path(what).name == "entries.jsonl" and "entries.jsonl" not in done:
            time.sleep(0.3)
        real(fd, what)
        done.append(Path(what).name)

    monkeypatch.setattr(commit_mod, "_fsync", slow_entries)

    async def main() -> None:
        log.append({"id": "e1"})
        committer.begin()                      # the reply's commit, under way
        checkpoints.write(checkpoint(0))      # a checkpoint whose leaf is e1
        await committer.durable()

    asyncio.run(main())
    assert done.index("checkpoint_000.json") > done.index("entries.jsonl")
    assert not committer.pending()


def test_a_commit_makes_the_next_checkpoints_file_ready_and_closing_removes_an_unused_one(
        tmp_path: Path, recorded) -> None:
    """Creating a file is the costliest call of a step's writes: a commit's thread makes the
    next checkpoint's temp file once its syncs are done, the checkpoint is written into it and
    linked to its name, and the end of the run removes one left unused."""
    def temps() -> list[Path]:
        return [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]

    log, checkpoints, committer = setup(tmp_path, "sync")
    log.append({"id": "e1"})
    checkpoints.write(checkpoint(0))
    asyncio.run(committer.durable())
    committer.flush()                                  # waits for the commit's thread too
    [spare] = temps()
    assert spare.stat().st_size == 0
    checkpoints.write(checkpoint(1))
    assert temps() == [] and checkpoints.read(1).sequence == 1
    asyncio.run(committer.durable())
    assert ("fsync", "checkpoint_001.json") in recorded
    committer.flush()
    assert len(temps()) == 1
    committer.close()
    assert temps() == []


def test_a_commit_begun_early_is_the_one_the_next_wait_waits_for(tmp_path: Path, recorded) -> None:
    """``begin`` starts the fsyncs of what is written at once (a lone session's step, while it
    builds its next request); the wait that follows finds it all covered and starts no commit
    of its own, and a waiter that is cancelled leaves the commit to finish."""
    log, checkpoints, committer = setup(tmp_path, "sync")

    async def main() -> None:
        log.append({"id": "e1"})
        checkpoints.write(checkpoint(0))
        committer.begin()
        assert {name for kind, name in recorded if kind == "fsync"} <= {
            "entries.jsonl", "checkpoint_000.json", tmp_path.name}
        assert committer._running                          # under way before anyone waits
        waiter = asyncio.ensure_future(committer.durable())
        await asyncio.sleep(0)
        waiter.cancel()
        await committer.durable()

    asyncio.run(main())
    synced = [name for kind, name in recorded if kind == "fsync"]
    assert sorted(synced) == sorted(["entries.jsonl", "checkpoint_000.json", tmp_path.name])  # one commit
    assert not committer.pending()


def test_a_failed_fsync_at_the_end_of_a_run_reaches_the_caller(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``flush`` (no event loop: the end of a run) runs its fsyncs side by side in the commit's
    threads; the first that fails is raised to the caller, and nothing is taken as durable."""
    from magent.errors import StoreError

    log, checkpoints, committer = setup(tmp_path, "exit")
    log.append({"id": "e1"})
    checkpoints.write(checkpoint(0))

    def broken(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(commit_mod.os, "fsync", broken)
    with pytest.raises(StoreError, match="No space left on device"):
        committer.flush()
    assert committer.pending()
    monkeypatch.undo()
    committer.flush()
    assert not committer.pending()


def test_a_forked_child_commits_with_threads_of_its_own(tmp_path: Path) -> None:
    """The threads that wait for fsyncs are not inherited by a forked child: its commits start
    threads of their own rather than waiting on its parent's, which it does not have."""
    (tmp_path / "parent").mkdir()
    log, _, committer = setup(tmp_path / "parent", "sync")
    for n in range(3):  # the parent's threads are started and idle
        log.append({"id": f"e{n}"})
        asyncio.run(committer.durable())
    pid = os.fork()
    if pid == 0:  # the child: one commit, or a non-zero status
        status = 1
        try:
            import signal

            signal.alarm(20)  # a commit waiting on threads that do not exist would hang
            folder = tmp_path / "child"
            folder.mkdir()
            child_log, _, child = setup(folder, "sync")
            child_log.append({"id": "c1"})
            asyncio.run(child.durable())
            status = 0 if not child.pending() else 2
        finally:
            os._exit(status)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
