"""Tasks written by earlier magents still list, trace, show their checkpoints, resume and fork:
their files are read through the named migrations, never rewritten. Each fixture is the same run (a
scripted agent that set and read a key-value entry over three tool calls, then paused at an
approval gate), written at schema version 4 (``tests/fixtures/schema4``) and at schema version 17
(``tests/fixtures/schema17``, the last compact form: fields left out when the line before, the
file's name or other fields told them)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from magent.models import SCHEMA_VERSION
from magent.store.tasks import Store
from support.cli import invoke

FIXTURES = Path(__file__).resolve().parent / "fixtures"
TASKS = {4: "6d418b72-3052-4547-84d3-4c0e4bbe93a8", 17: "88cac5a2-ce6e-4e19-8cb5-58557cb09489"}


@pytest.fixture(params=sorted(TASKS), ids=lambda v: f"schema{v}")
def version(request: pytest.FixtureRequest) -> int:
    return request.param


@pytest.fixture
def old_task(magent_home: Path, tmp_path: Path, version: int) -> Path:
    return install(magent_home, tmp_path, version)


def install(magent_home: Path, tmp_path: Path, version: int) -> Path:
    """The task written at schema ``version`` in a fresh home, its definitions beside it (the
    snapshot's paths are where they were when it ran, so they are pointed at the copies)."""
    FIXTURE = FIXTURES / f"schema{version}"
    defs = tmp_path / "defs"
    shutil.copytree(FIXTURE / "defs", defs)
    folder = magent_home / "tasks" / TASKS[version]
    shutil.copytree(FIXTURE / "task", folder)
    task = folder / "task.json"
    task.write_text(task.read_text().replace("/tmp/fx/defs", str(defs)))
    # As the run left it: trace.json written after the last event (a checkout sets any times).
    events = os.stat(folder / "events.jsonl").st_mtime
    os.utime(folder / "trace.json", (events + 1, events + 1))
    return folder


def test_the_fixtures_are_of_their_schema(version: int) -> None:
    for name in ("task.json", "trace.json", "checkpoint_003.json"):
        assert json.loads((FIXTURES / f"schema{version}" / "task" / name).read_text())["schema_version"] == version
    assert SCHEMA_VERSION > version


def test_a_old_task_lists_traces_and_shows_its_checkpoints(old_task: Path) -> None:
    TASK_ID = old_task.name
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
    # what a schema 9-17 turn checkpoint left to its other fields, read back
    turn = json.loads(invoke("checkpoints", "show", TASK_ID, "3", "--json").out)
    assert (turn["sequence"], turn["reason"], turn["state"]["current_agent"]) == (3, "llm_turn", "counter")
    assert turn["turn_index"] == turn["node_progress"]["iteration"] == 2
    assert turn["spent"]["task"]["model_calls"] == 2 and turn["spent"]["agent:counter"] == turn["spent"]["task"]


def test_a_old_task_resumes(old_task: Path) -> None:
    TASK_ID = old_task.name
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


def test_a_old_task_forks_from_an_old_checkpoint(old_task: Path) -> None:
    TASK_ID = old_task.name
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
