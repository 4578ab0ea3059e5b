"""One writer per task: a second holder fails at once naming the first; a killed holder releases."""

from __future__ import annotations

import json
import os
import signal

import pytest

from magent.errors import TaskLockedError
from magent.store.tasks import Store
from support.holders import hold_task
from support.homes import HomeBuilder


@pytest.fixture
def task_id():
    return HomeBuilder().task("locked").id


def test_second_acquire_in_process_fails_at_once(task_id):
    td = Store().task(task_id)
    first = td.lock().acquire()
    try:
        with pytest.raises(TaskLockedError) as exc:  # at once: a waiting acquire would never return
            td.lock().acquire()
        assert f"task {task_id} is in use by pid {os.getpid()}" in str(exc.value)
    finally:
        first.release()
    td.lock().acquire().release()  # free again


def test_a_killed_holder_releases_the_lock(task_id):
    td = Store().task(task_id)
    with hold_task(task_id) as holder:
        assert not td.lock().is_free()
        with pytest.raises(TaskLockedError) as exc:  # at once: the holder never lets go by itself
            td.lock().acquire()
        msg = str(exc.value)
        assert f"pid {holder.pid} on " in msg and "-c" in msg and "since " in msg
    assert holder.proc.returncode == -signal.SIGKILL
    # no cleanup ran in the holder, yet the kernel released the lock
    assert td.lock().is_free()
    lock = td.lock().acquire()
    try:
        holder = json.loads(lock.holder_path.read_text())
        assert holder["pid"] == os.getpid()  # the stale note was replaced
    finally:
        lock.release()
    assert not lock.holder_path.exists()


def test_locks_live_outside_the_task_directory(task_id):
    store = Store()
    lock = store.task(task_id).lock().acquire()
    try:
        assert lock.path.parent == store.locks_dir == store.root / "locks"
        assert sorted(p.name for p in (store.tasks_dir / task_id).iterdir()) == ["task.json"]
    finally:
        lock.release()


def test_locks_of_different_tasks_are_independent():
    home = HomeBuilder()
    a, b = home.task("a"), home.task("b")
    with a.dir.lock():
        with b.dir.lock():
            assert not a.dir.lock().is_free() and not b.dir.lock().is_free()
    assert a.dir.lock().is_free() and b.dir.lock().is_free()


def test_is_free_does_not_create_lock_files(task_id):
    store = Store()
    assert store.task(task_id).lock().is_free()
    assert not (store.locks_dir / f"{task_id}.lock").exists()


def test_holder_note_unreadable_still_names_something(task_id):
    td = Store().task(task_id)
    first = td.lock().acquire()
    first.holder_path.write_text("{garbage")
    try:
        with pytest.raises(TaskLockedError, match="in use by another process"):
            td.lock().acquire()
    finally:
        first.release()
