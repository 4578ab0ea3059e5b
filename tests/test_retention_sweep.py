"""``magent retention sweep`` and ``show`` in-process: what goes, what stays, and deletion safety."""

from __future__ import annotations

import json
import os
import re
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from magent.ids import new_id
from magent.models import ForkRef
from magent.store.tasks import Store
from magent.store.files import write_json
from support.cli import invoke
from support.homes import HomeBuilder, TaskBuilder, snapshot_tree

POLICY = """\
default_days: 10
by_task:
  critical: 30
  debug: 2
by_status:
  failed: 20
"""


def ago(days: float) -> datetime:
    return datetime.now(timezone.utc) - timedelta(days=days)


def write_policy(root: Path, text: str = POLICY) -> None:
    (root / "config").mkdir(parents=True, exist_ok=True)
    (root / "config" / "retention_policy.yaml").write_text(text)


def make_task(home: HomeBuilder, status: str = "completed", *, done_days: float | None = None,
              updated_days: float | None = None, **fields) -> TaskBuilder:
    """A task finished ``done_days`` ago, or (unfinished) last updated ``updated_days`` ago."""
    t = home.task(status=status, completed_at=ago(done_days) if done_days is not None else None,
                  **fields)
    if updated_days is not None:  # save_task stamps updated_at with now(): write it by hand
        doc = json.loads(t.dir.task_file.read_text())
        doc["updated_at"] = ago(updated_days).isoformat()
        write_json(t.dir.task_file, doc)
    t.dir.lock().acquire().release()  # a run leaves its lock file behind, as real ones do
    return t


def task_ids(root: Path) -> set[str]:
    return set(Store(root).task_ids())


def test_a_home_of_every_status_and_age_is_swept_exactly_per_the_policy(magent_home: Path):
    write_policy(magent_home)
    home = HomeBuilder()
    go, stay = [], []
    # default_days 10
    go.append(make_task(home, "completed", done_days=11))
    stay.append(make_task(home, "completed", done_days=9))
    go.append(make_task(home, "cancelled", done_days=10.5))
    go.append(make_task(home, "pending", updated_days=12))          # clock: updated_at
    stay.append(make_task(home, "pending", updated_days=8))
    # by_status failed: 20
    go.append(make_task(home, "failed", done_days=21))
    stay.append(make_task(home, "failed", done_days=15))            # would go by default_days
    # tags beat the status; the longest tag wins
    go.append(make_task(home, "failed", done_days=3, tags=["debug"]))
    stay.append(make_task(home, "completed", done_days=25, tags=["debug", "critical"]))
    go.append(make_task(home, "completed", done_days=31, tags=["critical", "other"]))
    # the task's own days beat everything
    go.append(make_task(home, "completed", done_days=1.5, tags=["critical"], retention_days=1))
    stay.append(make_task(home, "completed", done_days=11, tags=["debug"], retention_days=60))
    go.append(make_task(home, "completed", done_days=0.01, retention_days=0))
    # running (a live run) and paused are protected whatever their age, tags or own days
    running = make_task(home, "running", updated_days=400, tags=["debug"])
    stay.append(running)
    stay.append(make_task(home, "awaiting_human", updated_days=400, retention_days=0))
    # a running task whose process died is interrupted: not protected, it goes by the precedence
    go.append(make_task(home, "running", updated_days=3, tags=["debug"]))
    stay.append(make_task(home, "running", updated_days=5))
    home.close()

    with running.dir.lock():
        r = invoke("retention", "sweep")
    assert r.code == 0, r.err
    assert task_ids(magent_home) == {t.id for t in stay}
    line = r.out.strip()
    assert len(r.out.splitlines()) == 1
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d retention sweep: ", line)
    assert (f"scanned {len(go) + len(stay)} tasks: removed {len(go)} (" in line
            and ", kept 6, skipped 2 (1 paused, 1 running)" in line), line
    for t in go:  # the task's lock files go with it
        assert not list((magent_home / "locks").glob(f"{t.id}.*"))
    assert not (magent_home / "locks" / f"{stay[0].id}.lock").exists()  # only a held lock has files
    assert not [n for n in os.listdir(magent_home / "tasks") if n.startswith(".trash-")]
    # a second sweep has nothing to do
    with running.dir.lock():
        r = invoke("retention", "sweep")
    assert r.code == 0 and "removed 0 (0 B), kept 6, skipped 2" in r.out


def test_bytes_freed_are_the_sizes_of_the_removed_files(magent_home: Path):
    write_policy(magent_home)
    t = make_task(HomeBuilder(), done_days=11)
    (t.path / "artifacts").mkdir()
    (t.path / "artifacts" / "big.bin").write_bytes(b"x" * 2_000_000)
    expected = sum(p.lstat().st_size for p in t.path.rglob("*") if not p.is_dir())
    assert "would remove 1 (2.0 MB)" in invoke("retention", "sweep", "--dry-run").out
    r = invoke("retention", "sweep", "--json")
    doc = json.loads(r.out)
    assert r.code == 0 and doc["removed"] == 1 and doc["bytes_freed"] == expected
    assert [x["task_id"] for x in doc["tasks"] if x["action"] == "remove"] == [t.id]
    assert not t.path.exists()


def test_dry_run_lists_what_would_go_and_why_and_changes_nothing(magent_home: Path):
    write_policy(magent_home)
    home = HomeBuilder()
    old = make_task(home, "completed", done_days=3, tags=["debug"])
    young = make_task(home, "completed", done_days=1)
    (magent_home / "tasks" / f".trash-{new_id()}-0badf00d").mkdir()
    before = snapshot_tree(magent_home)
    r = invoke("retention", "sweep", "--dry-run")
    assert r.code == 0, r.err
    assert snapshot_tree(magent_home) == before
    lines = r.out.splitlines()
    assert lines[0].startswith(f"would remove  {old.id}  completed")
    assert lines[0].endswith("; tag debug: 2d") and "finished " in lines[0]
    assert lines[1].startswith("would clear   tasks/.trash-")
    assert "retention sweep (dry run): scanned 2 tasks: would remove 1 (" in lines[-1]
    assert "would clear 1 left by an interrupted sweep" in lines[-1]
    assert young.id not in r.out
    doc = json.loads(invoke("retention", "sweep", "--dry-run", "--json").out)
    assert doc["dry_run"] is True and doc["removed"] == 1 and doc["kept"] == 1
    assert snapshot_tree(magent_home) == before


def test_show_explains_the_rule_and_when_each_task_becomes_eligible(magent_home: Path):
    write_policy(magent_home)
    home = HomeBuilder()
    due = make_task(home, "failed", done_days=3, tags=["debug"])
    later = make_task(home, "completed", done_days=4)
    paused = make_task(home, "awaiting_human", updated_days=50)
    (magent_home / "tasks" / new_id()).mkdir()  # half-written: no task.json
    before = snapshot_tree(magent_home)
    r = invoke("retention", "show")
    assert r.code == 0, r.err
    assert snapshot_tree(magent_home) == before
    assert "by_task           critical 30d, debug 2d" in r.out
    assert "never swept       running, awaiting_human" in r.out
    rows = {line[:8]: line for line in r.out.splitlines()}
    assert "tag debug: 2d" in rows[due.id[:8]] and "(now)" in rows[due.id[:8]]
    assert "default_days: 10d" in rows[later.id[:8]] and "(in 5d)" in rows[later.id[:8]]
    assert "protected" in rows[paused.id[:8]] and "never (awaiting_human is protected)" in rows[paused.id[:8]]
    assert "task.json is missing" in r.out
    doc = json.loads(invoke("retention", "show", "--json").out)
    by_id = {t["task_id"]: t for t in doc["tasks"]}
    assert by_id[later.id]["rule"] == "default" and by_id[later.id]["days"] == 10
    assert by_id[paused.id]["eligible_at"] is None and doc["policy"]["by_task"]["debug"] == 2


def test_a_symlink_planted_inside_a_task_is_removed_not_followed(magent_home: Path, tmp_path: Path):
    write_policy(magent_home)
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "keep.txt").write_text("do not delete")
    t = make_task(HomeBuilder(), done_days=11)
    os.symlink(outside, t.path / "artifacts")            # a directory link
    os.symlink(outside / "keep.txt", t.path / "file-link")  # a file link
    (t.path / "sub").mkdir()
    os.symlink(outside, t.path / "sub" / "deeper")
    r = invoke("retention", "sweep")
    assert r.code == 0 and "removed 1" in r.out
    assert not t.path.exists()
    assert (outside / "keep.txt").read_text() == "do not delete"
    assert sorted(os.listdir(outside)) == ["keep.txt"]


def test_a_task_directory_that_is_a_symlink_is_left_alone(magent_home: Path, tmp_path: Path):
    write_policy(magent_home)
    HomeBuilder()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "task.json").write_text("{}")
    link = magent_home / "tasks" / new_id()
    os.symlink(outside, link)
    r = invoke("retention", "sweep")
    assert r.code == 0 and "skipped 1 (1 unreadable)" in r.out and "is a symlink" in r.err
    assert link.is_symlink() and (outside / "task.json").exists()


@pytest.mark.parametrize("linked", ["tasks", "locks"])
def test_a_tasks_or_locks_dir_that_is_a_symlink_is_refused(magent_home: Path, tmp_path: Path, linked):
    make_task(HomeBuilder(), done_days=400)
    real = tmp_path / "real"
    shutil.move(magent_home / linked, real)
    os.symlink(real, magent_home / linked)
    before = snapshot_tree(real)
    for args in (("sweep",), ("sweep", "--dry-run"), ("show",)):
        r = invoke("retention", *args)
        assert r.code == 2 and f"{magent_home / linked} is a symlink" in r.err
    assert snapshot_tree(real) == before


def test_corrupt_and_half_written_task_dirs_are_reported_and_kept(magent_home: Path):
    write_policy(magent_home)
    home = HomeBuilder()
    old = make_task(home, done_days=11)
    empty = magent_home / "tasks" / new_id()
    empty.mkdir()
    garbage = make_task(home, done_days=11)
    (garbage.path / "task.json").write_bytes(b'{"id": "' + garbage.id.encode())  # torn
    wrong = make_task(home, done_days=11)
    (wrong.path / "task.json").write_text(json.dumps({"id": wrong.id, "status": 7}))
    r = invoke("retention", "sweep")
    assert r.code == 0 and "Traceback" not in r.err
    assert "removed 1" in r.out and "skipped 3 (3 unreadable)" in r.out
    assert f"task {empty.name}: task.json is missing" in r.err
    assert f"task {garbage.id}: task.json is unreadable" in r.err
    assert f"task {wrong.id}: task.json: unknown status 7" in r.err
    assert not old.path.exists() and empty.exists() and garbage.path.exists() and wrong.path.exists()


def test_an_interrupted_removal_never_leaves_a_half_deleted_task(magent_home: Path, monkeypatch):
    write_policy(magent_home)
    home = HomeBuilder()
    t = make_task(home, done_days=11)
    for n in range(5):
        (t.path / f"file{n}").write_text("x" * 100)
    real_rmtree = shutil.rmtree

    def crash_half_way(path, *a, **kw):  # removes some files, then the process "dies"
        for name in sorted(os.listdir(path))[:3]:
            os.unlink(Path(path) / name)
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(shutil, "rmtree", crash_half_way)
    r = invoke("retention", "sweep")
    assert r.code == 1 and "could not finish removing .trash-" in r.err and "1 error (see stderr)" in r.out
    assert t.id not in task_ids(magent_home)             # never visible as a task
    assert invoke("tasks", "list", "--json").out.strip() == "[]"
    assert invoke("retention", "show").out.strip().endswith("no tasks")
    monkeypatch.setattr(shutil, "rmtree", real_rmtree)
    r = invoke("retention", "sweep")
    assert r.code == 0 and "cleared 1 left by an interrupted sweep" in r.out
    assert os.listdir(magent_home / "tasks") == []


def test_leftovers_of_a_killed_sweep_are_cleared_with_their_lock_files(magent_home: Path, tmp_path):
    HomeBuilder()
    task_id = new_id()
    trash = magent_home / "tasks" / f".trash-{task_id}-deadbeef"
    (trash / "artifacts").mkdir(parents=True)
    (trash / "task.json").write_text("{}")
    os.symlink(tmp_path, trash / "artifacts" / "out")
    (magent_home / "locks" / f"{task_id}.lock").write_text("")
    r = invoke("retention", "sweep")
    assert r.code == 0 and "cleared 1 left by an interrupted sweep" in r.out
    assert not trash.exists() and not (magent_home / "locks" / f"{task_id}.lock").exists()
    assert tmp_path.exists()


def test_no_home_means_nothing_to_do_and_nothing_created(magent_home: Path):
    r = invoke("retention", "sweep")
    assert r.code == 0 and "scanned 0 tasks" in r.out
    assert not magent_home.exists()


# keep_checkpoints
def checkpoints_of(t: TaskBuilder) -> list[int]:
    return t.dir.checkpoints.numbers()


def with_checkpoints(home: HomeBuilder, n: int, status: str = "completed", **fields) -> TaskBuilder:
    t = make_task(home, status, done_days=1, **fields)
    for i in range(n):
        t.say("user", f"message {i}")
        t.checkpoint("agent")
    return t


def test_keep_checkpoints_keeps_the_newest_and_those_forks_depend_on(magent_home: Path):
    write_policy(magent_home, POLICY + "keep_checkpoints: 2\n")
    home = HomeBuilder()
    plain = with_checkpoints(home, 6)
    child_id = new_id()
    forked = with_checkpoints(home, 6, forks=[ForkRef(task_id=child_id, checkpoint=1)])
    # a fork recorded only on the child's side is honoured too
    parent = with_checkpoints(home, 5)
    make_task(home, "completed", done_days=1, parent_task_id=parent.id, parent_checkpoint=0)
    short = with_checkpoints(home, 2)
    home.close()
    r = invoke("retention", "sweep", "--dry-run")
    assert f"would trim    {plain.id}" in r.out and "checkpoints 0-3 (keep_checkpoints)" in r.out
    assert "checkpoints 0,2-3 (keep_checkpoints)" in r.out
    assert checkpoints_of(plain) == [0, 1, 2, 3, 4, 5]
    r = invoke("retention", "sweep")
    assert r.code == 0, r.err
    assert "trimmed 9 checkpoints in 3 tasks" in r.out
    assert checkpoints_of(plain) == [4, 5]
    assert checkpoints_of(forked) == [1, 4, 5]
    assert checkpoints_of(parent) == [0, 3, 4]
    assert checkpoints_of(short) == [0, 1]
    assert plain.dir.checkpoints.read(5).sequence == 5  # what is left still verifies
    assert invoke("checkpoints", "list", plain.id).code == 0


def test_trimming_a_checkpoint_that_is_a_symlink_removes_only_the_link(magent_home: Path,
                                                                       tmp_path: Path):
    write_policy(magent_home, "keep_checkpoints: 1\n")
    t = with_checkpoints(HomeBuilder(), 3)
    t.close()
    target = tmp_path / "outside.json"
    target.write_text("precious")
    t.checkpoint_file(0).unlink()
    os.symlink(target, t.checkpoint_file(0))
    r = invoke("retention", "sweep")
    assert r.code == 0 and "trimmed 2 checkpoints in 1 task" in r.out
    assert checkpoints_of(t) == [2] and target.read_text() == "precious"


def test_keep_checkpoints_never_drops_the_pause_a_task_waits_on(magent_home: Path):
    write_policy(magent_home, "keep_checkpoints: 1\n")
    home = HomeBuilder()
    paused = with_checkpoints(home, 3, "awaiting_human")
    paused.checkpoint("review", reason="pause", awaiting_human=True, node_done=False,
                      human_request={"kind": "human_node", "node": "review", "question": "ok?"})
    paused.checkpoint("review")  # a newer file that turns out corrupt
    home.close()
    paused.checkpoint_file(4).write_text('{"truncated": ')
    r = invoke("retention", "sweep")
    assert r.code == 0, r.err
    assert checkpoints_of(paused) == [3, 4]
    assert paused.dir.checkpoints.latest(repair=False)[0].awaiting_human
