"""``magent migrate``: a task written by an older schema (the fixtures of test_store_old_schemas)
is rewritten in the plain form; it reads back as before, validates against the published schemas
and continues; a kill at any point leaves it readable and a second migrate finishes the job."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest

from magent.models import SCHEMA_VERSION
from magent.store.tasks import Store
from support.cli import invoke, run
from support.holders import Holder
from support.homes import snapshot_tree
from test_published_schemas import Checker
from test_store_old_schemas import install, old_task, version  # noqa: F401  (fixtures)


@pytest.fixture
def task17(magent_home: Path, tmp_path: Path) -> Path:
    """The schema-17 task alone: it has every kind of file to rewrite."""
    return install(magent_home, tmp_path, 17)


def _read_all(task: Path) -> dict[str, Any]:
    """What magent reads of the task: task, checkpoints, entries, events and the trace shown."""
    td = Store().task(task.name)
    checkpoints = {n: td.checkpoints.read(n).model_dump(mode="json", exclude={"sha256"})
                   for n in td.checkpoints.numbers()}
    trace = invoke("trace", task.name, "--json")
    assert trace.code == 0, trace.err
    shown = json.loads(trace.out)
    shown.pop("updated_at", None)
    problems: list[str] = []
    read = {"task": td.load_task().model_dump(mode="json"), "checkpoints": checkpoints,
            "entries": {k: e.model_dump(mode="json") for k, e in td.entries.load(problems).items()},
            "events": [e.model_dump(mode="json") for e in td.read_events(problems)],
            "trace": shown, "trace_notes": trace.err}
    assert problems == []
    return read


def _contents(task: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(task.iterdir()) if p.is_file()}


def test_an_old_task_migrates_reads_as_before_and_validates(old_task: Path, magent_home: Path) -> None:
    before = _read_all(old_task)
    done = invoke("migrate", old_task.name[:8])
    assert done.code == 0, done.err
    assert done.out.splitlines()[0].startswith(f"{old_task.name[:8]}  migrated: task.json, 7 checkpoints")
    assert done.out.splitlines()[-1] == "1 task: 1 migrated, 0 already current"

    for path in [old_task / "task.json", old_task / "trace.json", *old_task.glob("checkpoint_*.json")]:
        assert json.loads(path.read_text())["schema_version"] == SCHEMA_VERSION, path.name
    assert _read_all(old_task) == before      # every checkpoint verifies and reads as it did
    checker = Checker(magent_home)
    checker.check_task(old_task)
    assert checker.problems == [], checker.summary()
    assert {"task", "checkpoint", "trace", "entry", "event"} <= set(checker.seen)

    resumed = invoke("resume", old_task.name, "--approve", "--no-input")
    assert resumed.code == 0, resumed.out + resumed.err
    assert Store().task(old_task.name).load_task().result == "The tally is 2."


def test_a_second_migrate_finds_it_current_and_changes_nothing(old_task: Path, magent_home: Path) -> None:
    assert invoke("migrate", "--all").code == 0
    tree = snapshot_tree(magent_home)
    again = invoke("migrate", "--all", "--json")
    assert again.code == 0
    report = json.loads(again.out)
    assert [t["outcome"] for t in report["tasks"]] == ["current"]
    assert report["summary"] == {"migrated": 0, "current": 1, "skipped": 0, "failed": 0}
    assert invoke("migrate", old_task.name).out.startswith(f"{old_task.name[:8]}  already current\n")
    assert snapshot_tree(magent_home) == tree


def test_a_dry_run_says_what_would_change_and_writes_nothing(old_task: Path, magent_home: Path,
                                                              version: int) -> None:
    tree = snapshot_tree(magent_home)
    dry = invoke("migrate", "--all", "--dry-run")
    assert dry.code == 0, dry.err
    line = dry.out.splitlines()[0]
    assert line.startswith(f"{old_task.name[:8]}  would migrate: task.json, 7 checkpoints")
    if version == 17:   # lines that left out what the line before, or their parent, told
        assert "entries.jsonl (3 lines), events.jsonl (15 lines), trace.json" in line
    assert dry.out.splitlines()[-1].endswith("(dry run: nothing written)")
    report = json.loads(invoke("migrate", old_task.name, "--dry-run", "--json").out)
    assert report["dry_run"] is True and report["tasks"][0]["checkpoints"] == 7
    assert snapshot_tree(magent_home) == tree


@pytest.mark.slow
def test_a_kill_between_any_two_files_leaves_them_readable_and_a_rerun_finishes(
        task17: Path, magent_home: Path, tmp_path: Path) -> None:
    old_task = task17
    originals = _contents(old_task)
    before = _read_all(old_task)
    assert invoke("migrate", old_task.name).code == 0
    migrated = _contents(old_task)
    files = [name for name in migrated if migrated[name] != originals[name]]
    assert len(files) == 11      # task.json, 7 checkpoints, entries, events, trace

    for nth in range(1, len(files)):
        for name, data in originals.items():     # back to the schema 17 task
            (old_task / name).write_bytes(data)
        killed = run("migrate", old_task.name, env={"MAGENT_FAILPOINT": f"migrate_between_files@{nth}"})
        assert killed.code == -signal.SIGKILL, (nth, killed.err)
        now = _contents(old_task)
        changed = [name for name in now if now[name] != originals[name]]
        assert len(changed) == nth and all(now[name] == migrated[name] for name in changed), nth
        assert _read_all(old_task) == before, nth          # half old, half new: read as one task
        finished = run("migrate", old_task.name)
        assert finished.code == 0, finished.err
        assert "migrated" in finished.out
        assert _contents(old_task) == migrated, nth


def test_a_running_task_is_refused_when_named_and_skipped_with_all(old_task: Path, magent_home: Path) -> None:
    tree = snapshot_tree(magent_home / "tasks")
    holder = Holder(magent_home / "locks", old_task.name, f"task {old_task.name}")
    try:
        named = invoke("migrate", old_task.name[:8])
        assert named.code == 2 and named.out == ""
        assert named.err.count("\n") == 1 and old_task.name in named.err
        assert f"is running (in use by pid {holder.pid}" in named.err
        every = invoke("migrate", "--all")
        assert every.code == 0, every.err
        assert every.out.splitlines()[0].startswith(f"{old_task.name[:8]}  skipped: running (in use by pid")
        assert every.out.splitlines()[-1] == "1 task: 0 migrated, 0 already current, 1 skipped"
    finally:
        holder.kill()
    assert snapshot_tree(magent_home / "tasks") == tree


def test_unknown_ids_and_no_task_named_are_refused_before_anything_is_written(old_task: Path,
                                                                            magent_home: Path) -> None:
    tree = snapshot_tree(magent_home)
    unknown = invoke("migrate", old_task.name, "0e0e0e0e")
    assert unknown.code == 2 and unknown.out == ""
    assert unknown.err.strip() == f"magent: error: no task matches '0e0e0e0e' in {magent_home / 'tasks'}"
    for args in ((), (old_task.name, "--all")):
        bad = invoke("migrate", *args)
        assert bad.code == 2 and "name the tasks to migrate, or give --all" in bad.err
    assert snapshot_tree(magent_home) == tree


def test_damage_is_kept_byte_for_byte_and_reported(task17: Path, magent_home: Path) -> None:
    old_task = task17
    bad_checkpoint = old_task / "checkpoint_002.json"
    damaged = bad_checkpoint.read_bytes().replace(b'"position":"count"', b'"position":"tally"')
    assert damaged != bad_checkpoint.read_bytes()
    bad_checkpoint.write_bytes(damaged)
    events = old_task / "events.jsonl"
    lines = events.read_bytes().split(b"\n")
    lines[4] = b'{"seq": 5, "this line is not JSON'
    events.write_bytes(b"\n".join(lines) + b'{"seq":99,"torn')

    done = invoke("migrate", old_task.name, "--json")
    assert done.code == 0, done.err
    kept = json.loads(done.out)["tasks"][0]["kept"]
    assert any(k.startswith("checkpoint_002.json: ") and "sha256" in k for k in kept), kept
    assert "events.jsonl:5: cannot be read; kept as it is" in kept
    assert any("torn last line" in k for k in kept)
    assert bad_checkpoint.read_bytes() == damaged
    after = events.read_bytes().split(b"\n")
    assert after[4] == lines[4] and after[-1] == b'{"seq":99,"torn'
    assert json.loads(after[5])["ts"]       # the line after the damage: written whole
    shown = invoke("migrate", old_task.name)
    assert "warning: task" in shown.err and "events.jsonl:5" in shown.err
