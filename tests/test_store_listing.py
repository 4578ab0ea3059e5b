"""The fast task listing (``store.listing``) agrees with the full models and reports broken files."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from magent.models import SCHEMA_VERSION, TaskStatus
from magent.store import Store
from magent.store.listing import TASK_SCHEMA_VERSION, TASK_STATUSES, list_rows
from support.homes import HomeBuilder, standard_home


def test_constants_match_the_models():
    assert TASK_STATUSES == tuple(s.value for s in TaskStatus)
    assert TASK_SCHEMA_VERSION == SCHEMA_VERSION


def test_rows_agree_with_the_validated_tasks():
    standard_home()
    rows, tasks = list_rows(), Store().list_tasks()
    assert [r.id for r in rows] == [t.id for t in tasks]
    for r, t in zip(rows, tasks):
        assert (r.status, r.workflow, r.description, r.created_at, r.calls, r.cost) == (
            t.status.value, t.workflow, t.description, t.created_at, t.usage.calls, t.usage.cost)
        assert r.doc == t.model_dump(mode="json", exclude={"config_snapshot"})


@pytest.mark.parametrize("status", TASK_STATUSES)
def test_status_filter_agrees(status):
    standard_home()
    assert [r.id for r in list_rows(status=status)] == [
        t.id for t in Store().list_tasks(TaskStatus(status))]


def test_config_snapshot_is_left_out():
    HomeBuilder().task("x", config_snapshot={"agents": {"a": {"raw": {"system_prompt": "long"}}}})
    (row,) = list_rows()
    assert "config_snapshot" not in row.doc


def _rewrite(t, **changes):
    doc = json.loads((t.path / "task.json").read_text())
    for key, value in changes.items():
        if value is None:
            doc.pop(key, None)
        else:
            doc[key] = value
    (t.path / "task.json").write_text(json.dumps(doc))


@pytest.mark.parametrize("changes,words", [
    ({"status": "paused"}, "status: 'paused' is not a status"),
    ({"created_at": "yesterday"}, "created_at: 'yesterday' is not a timestamp"),
    ({"workflow": None}, "workflow: not a string"),
    ({"usage": {"calls": "3"}}, "usage.calls: '3' is not a whole number"),
    ({"usage": {"cost": "free"}}, "usage.cost: 'free' is not a number"),
    ({"schema_version": SCHEMA_VERSION + 1}, "written by a newer magent"),
    ({"id": "00000000-0000-4000-8000-000000000000"}, "names another task"),
])
def test_a_broken_task_json_is_reported_and_skipped(changes, words):
    home = HomeBuilder()
    good, bad = home.task("good"), home.task("bad")
    _rewrite(bad, **changes)
    problems: list[str] = []
    assert [r.id for r in list_rows(problems=problems)] == [good.id]
    assert len(problems) == 1 and problems[0].startswith(f"task {bad.id}: ") and words in problems[0]


@pytest.mark.parametrize("content,words", [(b"{", "unreadable"), (b"[1]", "not a JSON object")])
def test_an_unparsable_task_json_is_reported(content, words):
    t = HomeBuilder().task("x")
    (t.path / "task.json").write_bytes(content)
    problems: list[str] = []
    assert list_rows(problems=problems) == [] and words in problems[0]


def test_listing_does_not_import_pydantic_or_the_models(magent_home):
    """Only typer's own parameter handling brings pydantic into ``magent tasks list``."""
    standard_home()
    code = ("import sys; from magent.store.listing import list_rows; from magent.store.locks import Lock; "
            "rows = list_rows(); print(len(rows), sorted(m for m in sys.modules "
            "if m.startswith(('pydantic', 'magent.models', 'filelock'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "5 []"
