"""Task files crafted to break magent (issue 10, cases 15 and 16): nothing under the home is read
or written through a symbolic link, and JSON nested past the parser's stack is a damaged file.

A paused run of examples/workflows/triage.yaml leaves every kind of task file: task.json,
numbered checkpoints, entries.jsonl, events.jsonl, kv.jsonl, tool_pins.jsonl, trace.json. Each in turn is
replaced by a link to a copy of itself outside the home, as someone with write access to the
task directory could do; then every command that opens the task must refuse it with one line
naming the file (exit 2), print nothing of the outside file, and leave that file as it was.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from support.cli import UUID, invoke, run

ROOT = Path(__file__).resolve().parent.parent
TRIAGE = ROOT / "examples" / "workflows" / "triage.yaml"
OUTSIDE_MARKER = "written-outside-the-home"


def paused_triage() -> tuple[str, Path]:
    r = invoke("run", str(TRIAGE), "-t", "the app crashes", "--set", "priority=high",
               "--set", f"ticket=crash on start {OUTSIDE_MARKER}", "--no-input")
    assert r.code == 3, r.out + r.err
    task_id = UUID.search(r.out).group(0)
    return task_id, Path(os.environ["MAGENT_HOME"]) / "tasks" / task_id


def fingerprint(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


def link_outside(task_dir: Path, name: str, outside: Path) -> tuple[Path, Path]:
    """Replace ``task_dir/name`` by a symlink to a byte-identical copy outside the home."""
    inside = task_dir / name
    outside.mkdir(exist_ok=True)
    target = outside / name
    target.write_bytes(inside.read_bytes())
    inside.unlink()
    inside.symlink_to(target)
    return inside, target


def latest_checkpoint(task_dir: Path) -> str:
    return sorted(p.name for p in task_dir.glob("checkpoint_*.json"))[-1]


FILES = ["task.json", "events.jsonl", "entries.jsonl", "kv.jsonl", "tool_pins.jsonl", "trace.json", "checkpoint"]
COMMANDS = [
    ("trace", "{id}"),
    ("trace", "{id}", "--json"),
    ("tasks", "show", "{id}"),
    ("tasks", "cancel", "{id}"),
    ("checkpoints", "list", "{id}"),
    ("checkpoints", "show", "{id}"),
    ("resume", "{id}", "--approve"),
    ("resume", "{id}", "--from-checkpoint", "1"),
]


@pytest.mark.parametrize("name", FILES)
def test_a_linked_task_file_is_refused_by_every_command(name, tmp_path):
    task_id, task_dir = paused_triage()
    name = latest_checkpoint(task_dir) if name == "checkpoint" else name
    inside, target = link_outside(task_dir, name, tmp_path / "outside")
    before = fingerprint(target)
    tasks_before = sorted(p.name for p in task_dir.parent.iterdir())
    for command in COMMANDS:
        args = [a.format(id=task_id) for a in command]
        r = invoke(*args)
        assert r.code == 2, (args, r.code, r.out, r.err)
        lines = r.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("magent: error: "), (args, r.err)
        assert f"{inside} is a symbolic link" in lines[0], (args, lines[0])
        assert OUTSIDE_MARKER not in r.out + r.err, args
        assert fingerprint(target) == before, f"{' '.join(args)} wrote through the link to {name}"
    assert sorted(p.name for p in task_dir.parent.iterdir()) == tasks_before  # no fork was made
    assert inside.is_symlink()  # left for the person to look at


def test_a_linked_task_file_in_a_real_process(tmp_path):
    task_id, task_dir = paused_triage()
    inside, target = link_outside(task_dir, "events.jsonl", tmp_path / "outside")
    before = fingerprint(target)
    for args in (("trace", task_id), ("tasks", "cancel", task_id), ("resume", task_id, "--approve")):
        r = run(*args)
        assert r.code == 2 and r.out == "", (args, r.out, r.err)
        assert r.err.strip() == (f"magent: error: {inside} is a symbolic link; magent never reads or "
                                 "writes through a link under its home (put the real file back, or "
                                 "delete the task)"), r.err
    assert fingerprint(target) == before


def test_tasks_list_names_a_task_whose_task_json_is_a_link(tmp_path):
    task_id, task_dir = paused_triage()
    inside, _ = link_outside(task_dir, "task.json", tmp_path / "outside")
    r = invoke("tasks", "list")
    assert r.code == 0
    assert task_id not in r.out
    assert f"{inside} is a symbolic link" in r.err


def test_a_linked_artifacts_directory_is_refused(tmp_path):
    task_id, task_dir = paused_triage()
    outside = tmp_path / "outside-artifacts"
    outside.mkdir()
    (task_dir / "artifacts").symlink_to(outside, target_is_directory=True)
    r = invoke("resume", task_id, "--approve")
    assert r.code == 2 and f"{task_dir / 'artifacts'} is a symbolic link" in r.err
    assert list(outside.iterdir()) == []


# the lock file ----------------------------------------------------------------------------------

@pytest.mark.parametrize("command", [("resume", "{id}", "--approve"), ("tasks", "cancel", "{id}")])
def test_a_linked_lock_file_is_a_clear_error(command, tmp_path):
    task_id, _ = paused_triage()
    lock = Path(os.environ["MAGENT_HOME"]) / "locks" / f"{task_id}.lock"
    target = tmp_path / "elsewhere.txt"
    target.write_text("not a lock\n")
    lock.unlink(missing_ok=True)
    lock.symlink_to(target)
    r = run(*[a.format(id=task_id) for a in command])
    assert r.code == 2, (r.code, r.err)
    assert "internal error" not in r.err and "Errno" not in r.err
    assert r.err.strip() == (f"magent: error: {lock} is a symbolic link; magent never reads or writes "
                             "through a link under its home (remove it: lock files are made afresh)")
    assert target.read_text() == "not a lock\n"


# files nested deeper than the JSON parser's stack -----------------------------------------------

DEEP = "[" * 100_000


@pytest.mark.parametrize("name,command,words", [
    ("task.json", ("tasks", "show", "{id}"), ["task.json is unreadable", "nested too deeply"]),
    ("checkpoint", ("checkpoints", "show", "{id}", "{n}"), ["not valid JSON"]),
])
def test_a_file_nested_too_deeply_is_reported_not_an_internal_error(name, command, words, tmp_path):
    task_id, task_dir = paused_triage()
    if name == "checkpoint":
        name = latest_checkpoint(task_dir)
    (task_dir / name).write_text(DEEP)
    n = name.split("_")[-1].split(".")[0].lstrip("0") or "0"
    r = invoke(*[a.format(id=task_id, n=n) for a in command])
    assert r.code == 2, (r.code, r.err)
    assert "internal error" not in r.err and "RecursionError" not in r.err
    for word in words:
        assert word in r.err, r.err


def test_a_deep_line_in_the_events_is_skipped_like_a_damaged_one(tmp_path):
    task_id, task_dir = paused_triage()
    with open(task_dir / "events.jsonl", "a") as fh:
        fh.write(DEEP + "\n")
    # As after a run killed before it rewrote trace.json: the trace is built from the events.
    # (Only appending left it to the clock whether events.jsonl looked newer than trace.json.)
    (task_dir / "trace.json").unlink()
    r = invoke("trace", task_id)
    assert r.code == 0, r.err
    assert "events.jsonl" in r.err and "not valid JSON, skipped" in r.err
    resumed = invoke("resume", task_id, "--approve")
    assert resumed.code == 0, resumed.err


# the task directory itself ----------------------------------------------------------------------

def test_a_task_directory_that_is_a_link_is_named_not_unknown(tmp_path):
    """A task's directory moved outside the home and linked back: never followed, and every
    command says why rather than "no task"; tasks list names it; retention leaves it alone."""
    task_id, task_dir = paused_triage()
    outside = tmp_path / "outside" / task_id
    outside.parent.mkdir()
    task_dir.rename(outside)
    task_dir.symlink_to(outside, target_is_directory=True)
    before = {p.name: fingerprint(p) for p in outside.iterdir()}
    said = (f"magent: error: {task_dir} is a symbolic link; magent never reads or writes through a "
            "link under its home (move the real directory back in its place, or remove the link)")
    for args in (("trace", task_id), ("tasks", "show", task_id[:8]), ("tasks", "cancel", task_id),
                 ("checkpoints", "list", task_id), ("resume", task_id, "--approve")):
        r = invoke(*args)
        assert (r.code, r.err.strip()) == (2, said), (args, r.code, r.err)
    listed = invoke("tasks", "list")
    assert listed.code == 0 and f"{task_dir} is a symbolic link" in listed.err
    assert invoke("retention", "sweep").code == 0
    assert task_dir.is_symlink() and {p.name: fingerprint(p) for p in outside.iterdir()} == before


def test_a_fifo_as_the_lock_file_does_not_hang_the_trace(tmp_path):
    """Whether a running task is live is probed on its lock file: a FIFO there blocked that
    probe (and `magent trace`) until some writer opened it."""
    import json

    task_id, task_dir = paused_triage()
    doc = json.loads((task_dir / "task.json").read_text())
    (task_dir / "task.json").write_text(json.dumps({**doc, "status": "running"}))
    lock = Path(os.environ["MAGENT_HOME"]) / "locks" / f"{task_id}.lock"
    lock.unlink(missing_ok=True)
    os.mkfifo(lock)
    r = run("trace", task_id, timeout=120)  # only a hang hits the timeout
    assert r.code == 0, r.err
    assert "interrupted" in r.out.splitlines()[0]  # nobody holds it


def test_names_with_a_trailing_newline_are_other_names(tmp_path):
    """A file whose name is a checkpoint's plus a newline (``$`` in a regex lets one through) is
    not a checkpoint: the task's numbering goes on from its real last checkpoint."""
    task_id, task_dir = paused_triage()
    last = latest_checkpoint(task_dir)
    number = int(last[len("checkpoint_"):-len(".json")])
    (task_dir / "checkpoint_099.json\n").write_bytes((task_dir / last).read_bytes())
    assert invoke("resume", task_id, "--approve", "--quiet").code == 0
    numbers = sorted(int(p.name[len("checkpoint_"):-len(".json")]) for p in task_dir.glob("checkpoint_*.json"))
    assert numbers == list(range(numbers[-1] + 1)) and numbers[-1] > number
