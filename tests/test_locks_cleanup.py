"""``locks/`` does not grow with every task ever run: a lock's files exist only while it is
held, what a killed run left goes at the task's next release or at a sweep, and removing the
file on release never lets two holders in."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from filelock import FileLock

from magent.errors import TaskLockedError
from magent.ids import new_id
from magent.store.tasks import Store
from magent.store.locks import Lock, clear_dead
from support.cli import invoke
from support.holders import hold_task
from support.homes import HomeBuilder

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _lock_files(home: Path) -> list[str]:
    locks = home / "locks"
    return sorted(os.listdir(locks)) if locks.exists() else []


def test_finished_and_paused_runs_leave_no_lock_files(magent_home: Path) -> None:
    for target, code in (("agents/note_taker.yaml", 0), ("workflows/publish.yaml", 3),
                         ("workflows/write_review.yaml", 0)):
        result = invoke("run", str(EXAMPLES / target), "-t", "go", "--no-input")
        assert result.code == code, result.err
    assert len(os.listdir(magent_home / "tasks")) == 3
    assert _lock_files(magent_home) == []
    paused = next(t for t in os.listdir(magent_home / "tasks")
                  if '"awaiting_human"' in (magent_home / "tasks" / t / "task.json").read_text())
    assert invoke("resume", paused, "--approve").code == 0
    assert _lock_files(magent_home) == []


def test_the_files_exist_while_held_and_a_second_holder_is_refused(magent_home: Path) -> None:
    task = HomeBuilder().task("held")
    with hold_task(task.id) as holder:
        assert _lock_files(magent_home) == [f"{task.id}.holder.json", f"{task.id}.lock"]
        with pytest.raises(TaskLockedError, match=f"in use by pid {holder.pid}"):
            task.dir.lock().acquire()


def test_what_a_killed_holder_left_goes_at_the_next_release(magent_home: Path) -> None:
    task = HomeBuilder().task("crashed")
    holder = hold_task(task.id)
    holder.kill()  # SIGKILL: no cleanup ran, the files stay
    assert _lock_files(magent_home) == [f"{task.id}.holder.json", f"{task.id}.lock"]
    task.dir.lock().acquire().release()
    assert _lock_files(magent_home) == []


@pytest.mark.parametrize("reader", [("tasks", "list"), ("tasks", "show"), ("trace",)])
def test_a_killed_runs_lock_files_go_when_a_reader_finds_nobody_holds_them(
        magent_home: Path, reader: tuple[str, ...]) -> None:
    task = HomeBuilder().task("crashed", status="running")
    other = HomeBuilder().task("still running", status="running")
    holder = hold_task(task.id)
    holder.kill()  # SIGKILL: no cleanup ran, the files stay
    with hold_task(other.id):
        assert _lock_files(magent_home) == sorted([f"{task.id}.holder.json", f"{task.id}.lock",
                                                   f"{other.id}.holder.json", f"{other.id}.lock"])
        args = [*reader, task.id] if reader != ("tasks", "list") else list(reader)
        result = invoke(*args)
        assert result.code == 0, result.err
        assert "interrupted" in result.out
        # the dead run's files are gone; a live holder's stay
        assert _lock_files(magent_home) == sorted([f"{other.id}.holder.json", f"{other.id}.lock"])


def test_a_run_taking_the_lock_while_dead_files_are_cleared_waits_for_it(magent_home: Path) -> None:
    """``clear_dead`` holds the lock for a moment without a holder note: a run asking then waits
    instead of being told the task is in use."""
    task = HomeBuilder().task("crashed")
    lock_file = magent_home / "locks" / f"{task.id}.lock"
    blocker = FileLock(lock_file, timeout=0, is_singleton=False, thread_local=False)
    blocker.acquire()           # as clear_dead holds it: no note beside it
    assert clear_dead(magent_home / "locks", task.id) is False   # held: left alone
    timer = threading.Timer(0.2, blocker.release)
    timer.start()
    taken = task.dir.lock().acquire()
    timer.join()
    taken.release()
    assert _lock_files(magent_home) == []


def test_a_sweep_clears_old_orphan_lock_files_only(magent_home: Path) -> None:
    home = HomeBuilder()
    kept = home.task("still here")
    locks = magent_home / "locks"
    old, fresh, held = new_id(), new_id(), new_id()
    for orphan in (old, fresh):  # as a killed run leaves them, for tasks since removed by hand
        (locks / f"{orphan}.lock").write_text("")
        (locks / f"{orphan}.holder.json").write_text("{}")
    (locks / f"{kept.id}.lock").write_text("")  # its task exists and nobody holds it: cleared
    two_hours_ago = time.time() - 7200
    os.utime(locks / f"{old}.lock", (two_hours_ago, two_hours_ago))
    with hold_task(held):
        os.utime(locks / f"{held}.lock", (two_hours_ago, two_hours_ago))
        result = invoke("retention", "sweep")
        assert result.code == 0, result.err
        left = _lock_files(magent_home)
    assert f"{old}.lock" not in left and f"{old}.holder.json" not in left
    assert {f"{fresh}.lock", f"{fresh}.holder.json", f"{held}.lock"} <= set(left)
    assert f"{kept.id}.lock" not in left


def test_removing_the_file_on_release_never_lets_two_holders_in(magent_home: Path) -> None:
    """Threads take and release one lock as fast as they can; flock and filelock's check of a
    file that lost its name keep them apart however they interleave."""
    locks = Store().locks_dir
    inside, most, errors = [0], [0], []
    guard = threading.Lock()

    def worker() -> None:
        for _ in range(300):
            try:
                lock = Lock(locks, "contended", "the contended lock").acquire()
            except TaskLockedError:
                continue
            with guard:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            with guard:
                inside[0] -= 1
            try:
                lock.release()
            except OSError as exc:  # pragma: no cover - would be the bug
                errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == [] and most[0] == 1
    assert not (locks / "contended.lock").exists()
