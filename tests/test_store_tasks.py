"""The home and its task directories: ids validated before they are paths, prefixes, modes."""

from __future__ import annotations

import json
import os
import stat
from datetime import timedelta
from pathlib import Path

import pytest

from magent.errors import (
    AmbiguousTaskIdError, InvalidTaskIdError, StoreError, SymlinkError, TaskNotFoundError,
)
from magent.ids import new_id, now
from magent.models import SCHEMA_VERSION, Task, TaskStatus
from magent.store.tasks import Store, TaskDir
from magent.store.home import init_home
from magent.store.listing import list_rows
from magent.trace.build import write_trace
from support.homes import HomeBuilder, snapshot_tree, standard_home, unwritable_home  # noqa: F401


def _id_with_prefix(prefix: str) -> str:
    """A valid UUID v4 starting with ``prefix`` (hex, at most 8 characters)."""
    base = new_id()
    return prefix + base[len(prefix):]


# ids and prefixes -------------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "../../etc", "..", ".", "/etc/passwd", "/", "tasks/../..", "abc/def", "~root", "",
    "   ", "a" * 37, "zzzz", "ABCD\x00", "g1234567",
])
def test_resolve_refuses_anything_that_is_not_a_hex_prefix(text):
    HomeBuilder().task()
    with pytest.raises(InvalidTaskIdError):
        Store().resolve(text)


@pytest.mark.parametrize("text", ["../../etc", "/etc", "E03D69A7-8DF7-40E4-A79C-58D4819236D0", "1234"])
def test_task_dir_refuses_non_uuid4_ids(text):
    with pytest.raises(InvalidTaskIdError):
        TaskDir(Store(), text)


def test_unique_prefix_resolves_and_full_ids_too():
    home = HomeBuilder()
    a = home.task(task_id=_id_with_prefix("abc1")).id
    b = home.task(task_id=_id_with_prefix("abd2")).id
    store = Store()
    assert store.resolve("abc") == a
    assert store.resolve("abd2") == b
    assert store.resolve(a) == a
    assert store.resolve(a.upper()) == a          # case does not matter
    assert store.resolve(f"  {a[:6]} ") == a       # nor surrounding spaces
    assert store.task(a[:5]).id == a


def test_ambiguous_prefix_lists_the_candidates():
    home = HomeBuilder()
    ids = sorted(home.task(task_id=_id_with_prefix("ab" + c)).id for c in "0123456789")
    with pytest.raises(AmbiguousTaskIdError) as exc:
        Store().resolve("ab")
    msg = str(exc.value)
    assert msg.startswith("'ab' matches 10 tasks: ")
    for i in ids[:8]:
        assert i[:13] in msg
    assert "and 2 more" in msg and "give more characters" in msg


def test_unknown_id_or_prefix_is_not_found():
    HomeBuilder().task(task_id=_id_with_prefix("aaaa"))
    with pytest.raises(TaskNotFoundError, match="no task matches 'bbbb'"):
        Store().resolve("bbbb")
    with pytest.raises(TaskNotFoundError, match="no task "):
        Store().resolve(new_id())


def test_symlinked_task_dirs_are_ignored(tmp_path):
    home = HomeBuilder()
    real = home.task("real")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "task.json").write_text(real.path.joinpath("task.json").read_text())
    fake_id = _id_with_prefix("feed")
    os.symlink(outside, home.store.tasks_dir / fake_id)
    store = Store()
    assert store.task_ids() == [real.id]
    # refused, and named as the link it is rather than "no task" (issue 10, case 15)
    with pytest.raises(SymlinkError, match=f"{fake_id} is a symbolic link"):
        store.resolve("feed")
    with pytest.raises(SymlinkError, match=f"{fake_id} is a symbolic link"):
        store.resolve(fake_id)  # a full id through a symlink is refused too
    assert [r.id for r in list_rows()] == [real.id]


def test_listing_skips_names_that_are_not_task_ids(magent_home):
    home = HomeBuilder()
    real = home.task("real")
    tasks = home.store.tasks_dir
    (tasks / "notes.txt").write_text("x")
    (tasks / "not-a-uuid").mkdir()
    (tasks / ".new-partial").mkdir()
    (tasks / str(new_id())).write_text("a file, not a dir")
    assert Store().task_ids() == [real.id]


# task.json --------------------------------------------------------------------------------

def test_task_json_round_trips_with_schema_version():
    t = HomeBuilder().task("round trip", tags=["a", "b"], status="running")
    doc = json.loads((t.path / "task.json").read_text())
    assert doc["schema_version"] == SCHEMA_VERSION and doc["id"] == t.id
    loaded = t.dir.load_task()
    assert loaded.description == "round trip" and loaded.tags == ["a", "b"]
    assert loaded.status is TaskStatus.running


def test_save_task_updates_updated_at_and_replaces_atomically():
    t = HomeBuilder().task("x")
    before = t.dir.load_task().updated_at
    t.update(status="completed", result="done")
    after = t.dir.load_task()
    assert after.status is TaskStatus.completed and after.result == "done"
    assert after.updated_at >= before
    assert [p.name for p in t.path.iterdir()] == ["task.json"]


def test_create_task_twice_is_refused():
    home = HomeBuilder()
    t = home.task("once")
    with pytest.raises(StoreError, match="already exists"):
        home.store.create_task(t.task)
    assert t.dir.load_task().description == "once"


def test_create_task_leaves_no_staging_directory():
    home = HomeBuilder()
    home.task("x")
    assert [p.name for p in home.store.tasks_dir.iterdir()] == [home.tasks[0].id]


@pytest.mark.parametrize("content,words", [
    (b"{not json", "unreadable"),
    (b"[]", "not a JSON object"),
    (json.dumps({"id": "x"}).encode(), "task.json: "),
])
def test_damaged_task_json_is_a_store_error(content, words):
    t = HomeBuilder().task("x")
    (t.path / "task.json").write_bytes(content)
    with pytest.raises(StoreError) as exc:
        t.dir.load_task()
    assert words in str(exc.value) and t.id in str(exc.value)


def test_task_json_naming_another_task_is_refused():
    home = HomeBuilder()
    a, b = home.task("a"), home.task("b")
    (a.path / "task.json").write_bytes((b.path / "task.json").read_bytes())
    with pytest.raises(StoreError, match="names another task"):
        a.dir.load_task()


def test_task_json_from_a_newer_magent_is_refused():
    t = HomeBuilder().task("x")
    doc = json.loads((t.path / "task.json").read_text())
    doc["schema_version"] = SCHEMA_VERSION + 1
    (t.path / "task.json").write_text(json.dumps(doc))
    with pytest.raises(StoreError, match="newer magent"):
        t.dir.load_task()


def test_missing_task_json_is_not_found():
    t = HomeBuilder().task("x")
    (t.path / "task.json").unlink()
    with pytest.raises(TaskNotFoundError, match="task.json is missing"):
        t.dir.load_task()


# listing ----------------------------------------------------------------------------------

def test_list_tasks_newest_first_and_by_status():
    std = standard_home()
    assert [r.id for r in list_rows()] == [t.id for t in reversed(std.all)]
    assert [r.id for r in list_rows(status="completed")] == [std.forked.id, std.completed.id]
    assert [r.id for r in list_rows(status="awaiting_human")] == [std.paused.id]
    assert list_rows(status="cancelled") == []


def test_empty_or_missing_home_lists_nothing_and_creates_nothing(magent_home):
    assert list_rows() == []
    assert not magent_home.exists()


def test_home_that_is_a_file_is_a_store_error(magent_home):
    magent_home.write_text("oops")
    with pytest.raises(StoreError, match="not a directory"):
        Store().task_ids()
    with pytest.raises(StoreError, match="not a directory"):
        Store().ensure()
    with pytest.raises(StoreError, match="not a directory"):
        Store().resolve(new_id())


# events and trace -------------------------------------------------------------------------

def test_events_append_and_read_back():
    t = HomeBuilder().task("x")
    t.event("run_started", workflow="demo")
    t.event("node_started", node="writer")
    t.close()
    events = t.dir.read_events()
    assert [(e.seq, e.type, e.node) for e in events] == [(1, "run_started", None), (2, "node_started", "writer")]
    assert events[0].field("workflow") == "demo"
    with open(t.events_file, "ab") as fh:
        fh.write(b'{"seq": 3, "ts": "x", "ty')
    problems: list[str] = []
    assert len(t.dir.read_events(problems)) == 2 and "torn" in problems[0]
    t.event("run_finished")  # the new writer repairs the tail
    t.close()
    assert [e.type for e in t.dir.read_events()] == ["run_started", "node_started", "run_finished"]


def test_trace_is_written_with_schema_version():
    t = HomeBuilder().task("x")
    write_trace(t.dir)
    doc = json.loads(t.dir.trace_file.read_text())
    assert doc["schema_version"] == SCHEMA_VERSION and doc["task_id"] == t.id


# modes ------------------------------------------------------------------------------------

@pytest.mark.parametrize("umask", [0o000, 0o022, 0o077])
def test_everything_the_store_creates_is_0700_or_0600(magent_home, umask):
    old = os.umask(umask)
    try:
        std = standard_home()
        write_trace(std.completed.dir)
        std.paused.dir.lock().acquire().release()
        lock = std.failed.dir.lock().acquire()
        data = std.forked.checkpoint_file(2).read_bytes()
        std.forked.checkpoint_file(2).write_bytes(data[:10])
        std.forked.dir.checkpoints.latest(repair=True)      # makes a .corrupt file
        init_home()
    finally:
        os.umask(old)
    seen: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(magent_home):
        for name in dirnames:
            assert stat.S_IMODE(os.lstat(Path(dirpath, name)).st_mode) == 0o700, (dirpath, name)
        for name in filenames:
            p = Path(dirpath, name)
            assert stat.S_IMODE(os.lstat(p).st_mode) == 0o600, p
            seen.add(str(p.relative_to(magent_home)))
    assert stat.S_IMODE(magent_home.stat().st_mode) == 0o700
    c, f = std.completed.id, std.forked.id
    assert seen >= {"config/mcp_servers.yaml", "config/retention_policy.yaml",
                    f"tasks/{c}/task.json", f"tasks/{c}/checkpoint_000.json",
                    f"tasks/{c}/entries.jsonl", f"tasks/{c}/events.jsonl", f"tasks/{c}/trace.json",
                    f"tasks/{f}/checkpoint_002.json.corrupt"}
    assert {p.name for p in (magent_home / "locks").iterdir()} >= {
        f"{std.failed.id}.lock", f"{std.failed.id}.holder.json"}
    lock.release()


# unwritable home --------------------------------------------------------------------------

def test_unwritable_home_is_a_store_error(unwritable_home):
    before = snapshot_tree(unwritable_home)
    with pytest.raises(StoreError) as exc:
        init_home()
    assert "cannot create" in str(exc.value)
    assert str(unwritable_home) in str(exc.value)
    with pytest.raises(StoreError):
        Store().create_task(Task(id=new_id(), description="x", assigned_agent="a", workflow="w"))
    assert snapshot_tree(unwritable_home) == before


def test_old_created_at_sorts_last():
    home = HomeBuilder()
    old = home.task("old", created_at=now() - timedelta(days=30))
    new = home.task("new")
    assert [r.id for r in list_rows()] == [new.id, old.id]
