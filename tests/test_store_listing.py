"""The fast task listing (``store.listing``) agrees with the full models and reports broken files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from magent.models import SCHEMA_VERSION, TaskStatus
from magent.store.tasks import Store
from magent import paths
from magent.store import listing, taskindex
from magent.store.listing import TASK_STATUSES, list_rows
from magent.store.taskindex import index_file, rows_file
from support.homes import HomeBuilder, standard_home, unwritable, validated_tasks


def test_constants_match_the_models():
    assert TASK_STATUSES == tuple(s.value for s in TaskStatus)


def test_rows_agree_with_the_validated_tasks():
    standard_home()
    rows, tasks = list_rows(), validated_tasks()
    assert [r.id for r in rows] == [t.id for t in tasks]
    for r, t in zip(rows, tasks):
        assert (r.status, r.workflow, r.description, r.created_at, r.calls, r.cost) == (
            t.status.value, t.workflow, t.description, t.created_at, t.usage.calls, t.usage.cost)
        assert r.doc == t.model_dump(mode="json", exclude={"config_snapshot"})


@pytest.mark.parametrize("status", TASK_STATUSES)
def test_status_filter_agrees(status):
    standard_home()
    assert [r.id for r in list_rows(status=status)] == [
        t.id for t in validated_tasks(TaskStatus(status))]


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


# The task indexes (store/taskindex.py): caches of what the listing read, never a source of truth.
# cache/task-rows.json holds the rows every listing reads; cache/tasks.json the documents, read
# only when they are wanted (--json, --search, TaskRow.doc).

def _caches() -> list:
    return [rows_file(paths.home()), index_file(paths.home())]


def _fresh_rows(**kwargs):
    """The rows (with their documents) as the listing makes them with no index at all."""
    saved = {f: f.read_bytes() for f in _caches() if f.exists()}
    for f in _caches():
        f.unlink(missing_ok=True)
    try:
        rows = list_rows(**kwargs)
        return rows, [r.doc for r in rows]
    finally:
        for f in _caches():
            f.unlink(missing_ok=True)
        for f, data in saved.items():
            f.write_bytes(data)


def _reads(monkeypatch) -> list[str]:
    """The task.json files read from now on."""
    read: list[str] = []
    real = listing.read_bytes
    monkeypatch.setattr(listing, "read_bytes", lambda p: read.append(str(p)) or real(p))
    return read


def test_a_second_listing_reads_no_task_json_that_did_not_change(monkeypatch):
    home = HomeBuilder()
    for n in range(4):
        home.task(f"task {n}", tags=["x"])
    first, docs = _fresh_rows()
    list_rows()
    assert rows_file(paths.home()).is_file() and not index_file(paths.home()).exists()
    read = _reads(monkeypatch)
    again = list_rows()
    assert again == first and not [p for p in read if p.endswith("task.json")]
    assert [r.doc for r in again] == docs   # read when asked: there is no document index yet
    assert len([p for p in read if p.endswith("task.json")]) == 4
    list_rows(documents=True)               # (reads them once more, and keeps them)
    read.clear()
    whole = list_rows(documents=True)
    assert whole == first and [r.doc for r in whole] == docs
    lazy = list_rows()
    assert [r.doc for r in lazy] == docs
    assert not [p for p in read if p.endswith("task.json")]


def test_the_indexes_follow_every_change_to_the_tasks():
    home = HomeBuilder()
    a, b, c = home.task("alpha"), home.task("bravo"), home.task("charlie", status="pending")
    list_rows(documents=True)
    shutil.rmtree(c.path)                                                 # removed by hand
    assert [r.id for r in list_rows()] == [b.id, a.id]
    assert sorted(json.loads(rows_file(paths.home()).read_text())["tasks"]) == sorted([a.id, b.id])
    a.update(status="failed", result=None, error="it broke")             # replaced by rename
    raw = (b.path / "task.json").read_bytes()
    with open(b.path / "task.json", "r+b") as fh:                         # edited in place, same size
        fh.write(raw.replace(b'"bravo"', b'"BRAVO"'))
    d = home.task("delta")                                                # new
    for documents in (False, True, False):
        rows = list_rows(documents=documents)
        assert {r.id: (r.status, r.description) for r in rows} == {
            a.id: ("failed", "alpha"), b.id: ("completed", "BRAVO"), d.id: ("completed", "delta")}
        assert (rows, [r.doc for r in rows]) == _fresh_rows()
        assert [r.doc["error"] for r in rows if r.id == a.id] == ["it broke"]
    for cache in _caches():
        assert sorted(json.loads(cache.read_text())["tasks"]) == sorted([a.id, b.id, d.id])


def test_a_task_nobody_runs_stays_interrupted_from_the_index():
    t = HomeBuilder().task("left running", status="running")
    for documents in (False, False, True, True, False):
        (row,) = list_rows(documents=documents)   # the row shown changes: the indexes keep what is stored
        assert row.status == "interrupted" and row.doc["status"] == "interrupted"
        assert row.doc["usage"] == {"input": 0, "output": 0, "cost": 0.0, "calls": 0, "unpriced": 0}
    assert json.loads(rows_file(paths.home()).read_text())["tasks"][t.id][4] == "running"
    index = taskindex.TaskIndex(paths.home())
    assert index.get(t.id, taskindex.ident_of(os.stat(t.path / "task.json")))[0]["status"] == "running"


def test_a_dead_run_without_a_lock_file_is_not_probed(monkeypatch):
    from magent.store import locks

    home = HomeBuilder()
    dead = home.task("killed", status="running")
    live = home.task("running now", status="pending")
    probed = []
    real = locks.is_held
    monkeypatch.setattr(locks, "is_held", lambda path: probed.append(str(path)) or real(path))
    with live.dir.lock():
        rows = {r.id: r.status for r in list_rows()}
    assert rows == {dead.id: "interrupted", live.id: "pending"}
    assert probed == [str(paths.locks_dir() / f"{live.id}.lock")]


def test_a_run_that_takes_its_lock_while_the_listing_reads_shows_as_running(monkeypatch):
    t = HomeBuilder().task("just started", status="running")
    looks = []
    real = listing._lock_files

    def lock_files(locks_dir):   # the lock files as they were before the run took its lock
        looks.append(locks_dir)
        return set() if len(looks) == 1 else real(locks_dir)

    monkeypatch.setattr(listing, "_lock_files", lock_files)
    with t.dir.lock():
        (row,) = list_rows()
    assert len(looks) == 2 and row.status == "running" and row.doc["status"] == "running"


@pytest.mark.parametrize("which", [0, 1])
@pytest.mark.parametrize("planted", [b"", b"{not json", b'{"version": 99, "tasks": {}}', b"[1, 2]",
                                     b'{"version": 2, "shapes": [["id"]], "tasks": {"x": 1}}',
                                     b'{"version": 2, "shapes": [1], "tasks": {}}',
                                     b'{"version": 1, "tasks": {"x": 1}}', b'{"version": 1, "tasks": []}'])
def test_a_damaged_index_is_read_as_none_and_rewritten(planted, which):
    home = HomeBuilder()
    home.task("one"), home.task("two")
    expected = _fresh_rows()
    cache = _caches()[which]
    cache.parent.mkdir(exist_ok=True)
    cache.write_bytes(planted)
    rows = list_rows(documents=bool(which))
    assert (rows, [r.doc for r in rows]) == expected
    version = taskindex.ROWS_VERSION if which == 0 else taskindex.VERSION
    assert json.loads(cache.read_text())["version"] == version


def test_an_old_index_is_not_read_as_rows():
    """The index of the magent before this one (documents in cache/tasks.json): listing still
    reads the tasks' rows right, and keeps it as the document index it is."""
    t = HomeBuilder().task("one")
    list_rows(documents=True)
    rows_file(paths.home()).unlink()
    _rewrite(t, description="changed")
    (row,) = list_rows()
    assert row.description == "changed" and row.doc["description"] == "changed"


@pytest.mark.parametrize("field,value", [
    ("description", 5), ("status", "paused"), ("created_at", "2026-01-01T00:00:00"), ("created_at", 5),
    ("calls", "3"), ("cost", 1), ("models", [1]), ("tags", "x"), ("tags", [["x"]]), (None, None),
])
def test_an_index_row_that_makes_no_row_is_read_from_the_file(field, value):
    t = HomeBuilder().task("one", tags=["x"])
    list_rows()
    index = json.loads(rows_file(paths.home()).read_text())
    entry = index["tasks"][t.id]
    names = ["status", "workflow", "description", "created_at", "calls", "cost", "unpriced", "tokens",
             "models", "tags"]
    if field is None:
        entry.pop()
    else:
        entry[4 + names.index(field)] = value
    rows_file(paths.home()).write_text(json.dumps(index))
    problems: list[str] = []
    (row,) = list_rows(problems=problems)
    assert (row.description, row.status, row.tags) == ("one", "completed", ("x",)) and problems == []
    assert row == _fresh_rows()[0][0]


def test_a_planted_index_link_is_neither_read_nor_written_through(tmp_path):
    home = HomeBuilder()
    t = home.task("one")
    ident = taskindex.ident_of(os.stat(t.path / "task.json"))
    doc = {"description": "planted", "status": "failed", "id": t.id, "workflow": "w",
           "created_at": "2026-01-01T00:00:00Z"}
    planted = {
        index_file(paths.home()): {"version": taskindex.VERSION, "shapes": [list(doc)],
                                   "tasks": {t.id: [ident, [], 0, list(doc.values())]}},
        rows_file(paths.home()): {"version": taskindex.ROWS_VERSION, "tasks": {t.id: ident + [
            "failed", "w", "planted", "2026-01-01T00:00:00+00:00", 0, 0.0, 0, 0, [], []]}},
    }
    index_file(paths.home()).parent.mkdir(exist_ok=True)
    for n, (cache, content) in enumerate(planted.items()):
        elsewhere = tmp_path / f"elsewhere{n}.json"
        elsewhere.write_text(json.dumps(content))
        cache.symlink_to(elsewhere)
    before = {p: p.read_bytes() for p in tmp_path.glob("elsewhere*.json")}
    (row,) = list_rows()
    assert row.description == "one" and row.doc["description"] == "one"
    (row,) = list_rows(documents=True)
    assert row.description == "one" and row.doc["description"] == "one"
    assert {p: p.read_bytes() for p in tmp_path.glob("elsewhere*.json")} == before
    assert not any(cache.is_symlink() for cache in planted)


def test_a_home_that_cannot_take_the_index_still_lists():
    home = HomeBuilder()
    home.task("one")
    with unwritable(paths.home() / "cache"):
        (row,) = list_rows()
        (again,) = list_rows(documents=True)
    assert row == again and row.description == "one" and row.doc == again.doc


def test_a_document_is_read_when_first_asked_for(monkeypatch):
    """A row from the index reads its document only when asked, and once."""
    home = HomeBuilder()
    a, b = home.task("alpha", result="the answer"), home.task("bravo")
    list_rows()
    read = _reads(monkeypatch)
    rows = {r.id: r for r in list_rows()}
    assert read == []
    assert rows[a.id].doc["result"] == "the answer" and rows[a.id].doc is rows[a.id].doc
    assert [p for p in read if p.endswith("task.json")] == [str(a.path / "task.json")]


def test_search_reads_the_documents():
    home = HomeBuilder()
    a, _ = home.task("alpha", result="the NEEDLE"), home.task("bravo", result="hay")
    list_rows()
    assert [r.id for r in list_rows(where=listing.TaskFilter(search="needle"))] == [a.id]
    assert index_file(paths.home()).is_file()


def _usage(row) -> tuple[int, int, float]:
    return row.calls, row.tokens, row.cost


def test_a_dead_runs_usage_is_counted_from_where_the_last_listing_stopped():
    """A task left running shows the usage of its llm_call events (task.json has none yet).
    Each listing goes on from where the last one stopped; what changed otherwise is counted again."""
    t = HomeBuilder().task("killed mid-run", status="running")
    for n in range(3):
        t.event("llm_call", "agent", tokens_in=100, tokens_out=10, cost=0.5)
    t.event("llm_call", "agent", tokens_in=7, tokens_out=7, error="timed out")   # answered nothing
    t.close()
    (row,) = list_rows()
    assert (row.status, _usage(row)) == ("interrupted", (3, 330, 1.5))
    events = t.events_file
    line = events.read_bytes().splitlines(keepends=True)[0]
    with open(events, "ab") as fh:                      # appended since, and a torn last line
        fh.write(line.replace(b'"tokens_in":100', b'"tokens_in":200') + line[:40])
    assert _usage(list_rows()[0]) == (4, 540, 2.0)
    with open(events, "ab") as fh:                      # the torn line is whole now
        fh.write(line[40:])
    assert _usage(list_rows()[0]) == (5, 650, 2.5)
    assert _usage(list_rows()[0]) == (5, 650, 2.5)      # (nothing new)
    data = events.read_bytes()                          # rewritten in place, same length
    events.write_bytes(data.replace(b'"tokens_in":100', b'"tokens_in":300'))
    assert _usage(list_rows()[0]) == (5, 1450, 2.5)
    events.unlink()                                     # replaced by a shorter file
    events.write_bytes(line)
    assert _usage(list_rows()[0]) == (1, 110, 0.5)
    cached = json.loads(rows_file(paths.home()).read_text())["usage"]
    assert list(cached) == [t.id]
    t.update(status="failed", error="stopped")          # settled: task.json has its usage again
    (row,) = list_rows()
    assert row.status == "failed" and json.loads(rows_file(paths.home()).read_text())["usage"] == {}


@pytest.mark.parametrize("planted", [[1, 2], ["x"] * 8, [0, 10**9, "zz", 1, 1, 1.0, 1, 0], None])
def test_a_damaged_usage_count_is_counted_again(planted):
    t = HomeBuilder().task("killed", status="running")
    t.event("llm_call", "agent", tokens_in=100, tokens_out=10, cost=0.5)
    t.close()
    assert _usage(list_rows()[0]) == (1, 110, 0.5)
    doc = json.loads(rows_file(paths.home()).read_text())
    doc["usage"][t.id] = planted
    rows_file(paths.home()).write_text(json.dumps(doc))
    assert _usage(list_rows()[0]) == (1, 110, 0.5)
