"""The fast task listing (``store.listing``) agrees with the full models and reports broken files."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from magent.models import SCHEMA_VERSION, TaskStatus
from magent.store import Store
from magent import paths
from magent.store import listing, taskindex
from magent.store.listing import TASK_SCHEMA_VERSION, TASK_STATUSES, list_rows
from magent.store.taskindex import index_file
from support.homes import HomeBuilder, standard_home, unwritable


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


# The task index (store/taskindex.py): a cache of what the listing read, never a source of truth.

def _fresh_rows():
    """The rows as the listing makes them with no index at all."""
    index = index_file(paths.home())
    saved = index.read_bytes() if index.exists() else None
    index.unlink(missing_ok=True)
    try:
        return list_rows()
    finally:
        if saved is not None:
            index.write_bytes(saved)


def test_a_second_listing_reads_no_task_json_that_did_not_change(monkeypatch):
    home = HomeBuilder()
    for n in range(4):
        home.task(f"task {n}")
    first = list_rows()
    assert index_file(paths.home()).is_file()
    read = []
    real = listing.read_bytes
    monkeypatch.setattr(listing, "read_bytes", lambda p: read.append(str(p)) or real(p))
    assert list_rows() == first
    assert not [p for p in read if p.endswith("task.json")]


def test_the_index_follows_every_change_to_the_tasks():
    home = HomeBuilder()
    a, b, c = home.task("alpha"), home.task("bravo"), home.task("charlie", status="pending")
    list_rows()
    shutil.rmtree(c.path)                                                 # removed by hand
    assert [r.id for r in list_rows()] == [b.id, a.id]
    assert sorted(json.loads(index_file(paths.home()).read_text())["tasks"]) == sorted([a.id, b.id])
    a.update(status="failed", result=None, error="it broke")             # replaced by rename
    raw = (b.path / "task.json").read_bytes()
    with open(b.path / "task.json", "r+b") as fh:                         # edited in place, same size
        fh.write(raw.replace(b'"bravo"', b'"BRAVO"'))
    d = home.task("delta")                                                # new
    rows = list_rows()
    assert {r.id: (r.status, r.description) for r in rows} == {
        a.id: ("failed", "alpha"), b.id: ("completed", "BRAVO"), d.id: ("completed", "delta")}
    assert rows == _fresh_rows()
    kept = json.loads(index_file(paths.home()).read_text())["tasks"]
    assert sorted(kept) == sorted([a.id, b.id, d.id])


def test_a_task_nobody_runs_stays_interrupted_from_the_index():
    t = HomeBuilder().task("left running", status="running")
    for _ in range(3):   # the row shown changes its document: the index must keep the stored one
        (row,) = list_rows()
        assert row.status == "interrupted"
    index = taskindex.TaskIndex(paths.home())
    assert index.get(t.id, taskindex.identity(str(t.path / "task.json")))[0]["status"] == "running"


@pytest.mark.parametrize("planted", [b"", b"{not json", b'{"version": 99, "tasks": {}}', b"[1, 2]",
                                     b'{"version": 2, "shapes": [["id"]], "tasks": {"x": 1}}',
                                     b'{"version": 2, "shapes": [1], "tasks": {}}'])
def test_a_damaged_index_is_read_as_none_and_rewritten(planted):
    home = HomeBuilder()
    home.task("one"), home.task("two")
    expected = _fresh_rows()
    index_file(paths.home()).write_bytes(planted)
    assert list_rows() == expected
    assert json.loads(index_file(paths.home()).read_text())["version"] == taskindex.VERSION


def test_an_index_row_that_makes_no_row_is_read_from_the_file():
    t = HomeBuilder().task("one")
    list_rows()
    index = json.loads(index_file(paths.home()).read_text())
    entry = index["tasks"][t.id]
    entry[3][index["shapes"][entry[2]].index("description")] = 5
    index_file(paths.home()).write_text(json.dumps(index))
    problems: list[str] = []
    (row,) = list_rows(problems=problems)
    assert row.description == "one" and problems == []


def test_a_planted_index_link_is_neither_read_nor_written_through(tmp_path):
    home = HomeBuilder()
    t = home.task("one")
    elsewhere = tmp_path / "elsewhere.json"
    doc = {"description": "planted", "status": "failed", "id": t.id, "workflow": "w",
           "created_at": "2026-01-01T00:00:00Z"}
    ident = taskindex.identity(str(t.path / "task.json"))
    elsewhere.write_text(json.dumps({"version": taskindex.VERSION, "shapes": [list(doc)],
                                     "tasks": {t.id: [ident, [], 0, list(doc.values())]}}))
    before = elsewhere.read_bytes()
    index_file(paths.home()).parent.mkdir(exist_ok=True)
    index_file(paths.home()).symlink_to(elsewhere)
    (row,) = list_rows()
    assert row.description == "one"
    assert elsewhere.read_bytes() == before
    assert not index_file(paths.home()).is_symlink()


def test_a_home_that_cannot_take_the_index_still_lists():
    home = HomeBuilder()
    home.task("one")
    with unwritable(paths.home() / "cache"):
        (row,) = list_rows()
        (again,) = list_rows()
    assert row == again and row.description == "one"
