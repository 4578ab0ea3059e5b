"""A task written by magent at schema version 4 (``tests/fixtures/schema4``: a scripted agent that
set and read a key-value entry over three tool calls, then paused at an approval gate) still lists,
traces, shows its checkpoints, resumes and forks: its files are read through the named migrations,
never rewritten."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from magent.models import SCHEMA_VERSION
from magent.store import Store
from support.cli import invoke

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "schema4"
TASK_ID = "6d418b72-3052-4547-84d3-4c0e4bbe93a8"


@pytest.fixture
def old_task(magent_home: Path, tmp_path: Path) -> Path:
    """The schema-4 task in a fresh home, its definitions beside it (the snapshot's paths are
    where they were when it ran, so they are pointed at the copies)."""
    defs = tmp_path / "defs"
    shutil.copytree(FIXTURE / "defs", defs)
    folder = magent_home / "tasks" / TASK_ID
    shutil.copytree(FIXTURE / "task", folder)
    task = folder / "task.json"
    task.write_text(task.read_text().replace("/tmp/fx/defs", str(defs)))
    # As the run left it: trace.json written after the last event (a checkout sets any times).
    events = os.stat(folder / "events.jsonl").st_mtime
    os.utime(folder / "trace.json", (events + 1, events + 1))
    return folder


def test_the_fixture_is_of_schema_4() -> None:
    for name in ("task.json", "trace.json", "checkpoint_003.json"):
        assert json.loads((FIXTURE / "task" / name).read_text())["schema_version"] == 4
    assert SCHEMA_VERSION > 4


def test_a_schema_4_task_lists_traces_and_shows_its_checkpoints(old_task: Path) -> None:
    listed = json.loads(invoke("tasks", "list", "--json").out)
    assert [(t["id"], t["status"]) for t in listed] == [(TASK_ID, "awaiting_human")]

    trace = invoke("trace", TASK_ID, "--json")
    assert trace.code == 0, trace.err
    assert "schema version" not in trace.err and "built from events" not in trace.err
    doc = json.loads(trace.out)
    calls = [c for s in doc["steps"] for c in s["tool_calls"]]
    assert [f"{c['server']}.{c['tool']}" for c in calls] == ["kv.set", "kv.set", "kv.get"]
    assert calls[2]["result"]["text"].startswith("tally two and more")     # the preview, restored
    assert len(calls[2]["result"]["text"]) > 300
    assert [a["tool_calls"][0]["name"] for a in doc["actions"][:3]] == ["kv.set", "kv.set", "kv.get"]
    shown = invoke("trace", TASK_ID)
    assert shown.code == 0 and "kv.get" in shown.out

    listing = invoke("checkpoints", "list", TASK_ID, "--json")
    assert listing.code == 0
    rows = json.loads(listing.out)["checkpoints"]
    assert len(rows) == 7 and not any(r["corrupt"] for r in rows)
    cp = json.loads(invoke("checkpoints", "show", TASK_ID, "6", "--json").out)
    assert cp["task_id"] == TASK_ID and cp["awaiting_human"] is True
    assert cp["journals"]["kv.jsonl"] > 0 and cp["spent"]["agent:counter"]["tool_calls"] == 3


def test_a_schema_4_task_resumes(old_task: Path) -> None:
    before = {p.name: p.read_bytes() for p in old_task.glob("checkpoint_*.json")}
    done = invoke("resume", TASK_ID, "--approve", "--no-input")
    assert done.code == 0, done.out + done.err
    td = Store().task(TASK_ID)
    assert td.load_task().result == "The tally is 2."
    for name, data in before.items():                     # old checkpoints are never rewritten
        assert (old_task / name).read_bytes() == data
    numbers = td.checkpoints.numbers()
    assert numbers[:7] == list(range(7)) and len(numbers) > 7
    newest = json.loads((old_task / f"checkpoint_{numbers[-1]:03d}.json").read_text())
    assert newest["schema_version"] == SCHEMA_VERSION
    assert [td.checkpoints.read(n).task_id for n in numbers] == [TASK_ID] * len(numbers)
    trace = invoke("trace", TASK_ID, "--json")
    assert trace.code == 0 and json.loads(trace.out)["steps"][-1]["step_name"] != ""


def test_a_schema_4_task_forks_from_an_old_checkpoint(old_task: Path) -> None:
    td = Store().task(TASK_ID)
    first_turn = next(n for n in td.checkpoints.numbers() if td.checkpoints.read(n).reason == "llm_turn")
    forked = invoke("resume", TASK_ID, "--from-checkpoint", str(first_turn), "--no-input")
    assert forked.code == 3, forked.out + forked.err             # paused at the gate again
    child = Store().task(forked.out.split()[1])
    assert child.load_task().parent_task_id == TASK_ID
    # the key-value store as it was at that checkpoint (tally 1), then the fork's own writes
    kv = [json.loads(line) for line in (child.path / "kv.jsonl").read_text().splitlines()]
    assert [c.get("value", "")[:9] for c in kv] == ["1", "tally two"]
    trace = json.loads(invoke("trace", child.id, "--json").out)
    gets = [c for s in trace["steps"] for c in s["tool_calls"] if c["tool"] == "get"]
    assert gets and gets[-1]["result"]["text"].startswith("tally two")
