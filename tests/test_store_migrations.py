"""Documents written by an older magent are read through named migrations, never rejected."""

from __future__ import annotations

import json

import pytest

from magent.ids import new_id
from magent.models import SCHEMA_VERSION
from magent.store.tasks import Store, TaskDir
from magent.store.checkpoints import canonical_hash
from support.cli import invoke
from support.homes import HomeBuilder


def old_checkpoint(version: int, status: str, **fields) -> TaskDir:
    """A task whose one checkpoint is written at schema ``version`` with ``fields``."""
    home = HomeBuilder(init=True)
    task = home.task("old task", status=status)
    task.say("user", "hello")
    task.close()
    td = Store().task(task.id)
    doc = {"schema_version": version, "checkpoint_id": new_id(), "task_id": task.id, "sequence": 0,
           "position": "ask", "state": {"current_agent": "a", "metadata": {}}, **fields}
    doc["sha256"] = canonical_hash(doc)
    td.checkpoints.path(0).write_text(json.dumps(doc))
    return td


def test_a_version_1_checkpoint_with_total_usage_still_loads(magent_home) -> None:
    td = old_checkpoint(1, "awaiting_human", reason="pause",
                        usage_by_model={"openai/gpt-4o": {"input": 10, "output": 5, "cost": 0.01, "calls": 1}},
                        total_usage={"input": 10, "output": 5, "cost": 0.01, "calls": 1})
    cp = td.checkpoints.read(0)
    assert cp.total_usage.input == 10 and cp.total_usage.calls == 1     # derived now
    assert cp.schema_version == SCHEMA_VERSION
    latest, notes = td.checkpoints.latest(repair=True)
    assert latest is not None and notes == []                            # not moved aside
    shown = invoke("checkpoints", "show", td.id, "0", "--json")
    assert shown.code == 0 and json.loads(shown.out)["position"] == "ask"


@pytest.mark.parametrize("version", [1, 2, 3])
def test_an_older_task_json_still_loads(magent_home, version: int) -> None:
    """Before version 4 a task.json had ``steps`` (a count of model calls; ``usage.calls`` holds it)."""
    home = HomeBuilder(init=True)
    task = home.task("old task", status="completed")
    task.close()
    path = Store().task(task.id).task_file
    doc = json.loads(path.read_text())
    doc.update(schema_version=version, steps=3)
    path.write_text(json.dumps(doc))
    loaded = Store().task(task.id).load_task()
    assert loaded.description == "old task" and loaded.schema_version == SCHEMA_VERSION
    assert "steps" not in loaded.model_dump()
    assert invoke("tasks", "show", task.id).code == 0
    assert [t["id"] for t in json.loads(invoke("tasks", "list", "--json").out)] == [task.id]


def test_a_schema_13_progress_reads_as_the_kind_its_keys_tell(magent_home) -> None:
    """Before schema 19 progress was untyped keys: an agent's loop is told by its own (the null
    flags the 13-to-14 migration writes, and the first magents' ``accepted_pins``, read as absent)."""
    td = old_checkpoint(13, "interrupted", reason="llm_turn", turn_index=2,
                        node_progress={"iteration": 2, "accepted_pins": ["tb.echo"]})
    shown = invoke("checkpoints", "show", td.id, "0", "--json")
    assert shown.code == 0, shown.err
    progress = json.loads(shown.out)["node_progress"]
    assert (progress["kind"], progress["iteration"], progress["entered"]) == ("agent", 2, False)
    assert "accepted_pins" not in progress
