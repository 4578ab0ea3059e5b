"""Checkpoints: numbered, immutable, hashed; corrupt ones moved aside and recovery falls back."""

from __future__ import annotations

import json

import pytest

from magent.errors import (
    CheckpointCorruptError, CheckpointNotFoundError, CheckpointSequenceError, StoreError,
)
from magent.ids import new_id
from magent.models import SCHEMA_VERSION, Checkpoint, State
from magent.store.checkpoints import CheckpointLog
from magent.store.checkpoints import canonical_hash, content_hash
from support.homes import HomeBuilder, snapshot_tree


@pytest.fixture
def task():
    t = HomeBuilder().task("checkpointed")
    t.say("user", "hello")
    t.checkpoint("a", reason="run_start")
    t.say("assistant", "hi")
    t.checkpoint("b")
    t.say("user", "more")
    t.checkpoint("c", state={"routing_key": "pass", "metadata": {"n": 3}})
    t.close()
    return t


def _next(t, **kw) -> Checkpoint:
    log = t.dir.checkpoints
    return Checkpoint(checkpoint_id=new_id(), task_id=t.id, sequence=kw.pop("sequence", log.next_number()),
                      position=kw.pop("position", "d"), **kw)


def test_files_are_numbered_and_chained_by_parent_id(task):
    assert sorted(p.name for p in task.path.glob("checkpoint_*")) == [
        "checkpoint_000.json", "checkpoint_001.json", "checkpoint_002.json"]
    docs = [json.loads(task.checkpoint_file(n).read_text()) for n in range(3)]
    assert [task.dir.checkpoints.read(n).sequence for n in range(3)] == [0, 1, 2]
    assert docs[0].get("parent_id") is None
    assert docs[1]["parent_id"] == docs[0]["checkpoint_id"]
    assert docs[2]["parent_id"] == docs[1]["checkpoint_id"]
    for n, d in enumerate(docs):
        assert d["schema_version"] == SCHEMA_VERSION
        stored = d.pop("sha256")
        assert (d["task_id"], d["sequence"]) == (task.id, n)     # each file reads on its own
        assert stored == content_hash(d, task.id, n) == canonical_hash(d)


def test_a_renamed_checkpoint_fails_its_hash(task):
    """A checkpoint holds its number (schema 18), as its file's name does: one moved to another
    number is corrupt, not read as that one."""
    task.checkpoint_file(2).unlink()
    task.checkpoint_file(1).rename(task.checkpoint_file(2))
    with pytest.raises(CheckpointCorruptError, match=r"holds checkpoint 1 \(renamed or copied\?\)"):
        task.dir.checkpoints.read(2)


def test_checkpoint_files_hold_no_messages(task):
    doc = json.loads(task.checkpoint_file(2).read_text())
    assert "messages" not in doc["state"]
    assert doc["leaf_entry_id"] == task.entries[-1].id and doc["entry_count"] == 3


def test_read_returns_fresh_equal_objects(task):
    log = task.dir.checkpoints
    a, b = log.read(2), log.read(2)
    assert a == b and a is not b
    a.state.metadata["n"] = 99  # mutating one load never leaks into another
    assert log.read(2).state.metadata == {"n": 3}
    assert a.sha256 == json.loads(task.checkpoint_file(2).read_text())["sha256"]


def test_sequence_must_follow_the_last_one(task):
    before = snapshot_tree(task.path)
    for seq in (0, 2, 4):
        with pytest.raises(CheckpointSequenceError, match=f"sequence {seq} out of order .next is 3."):
            task.dir.checkpoints.write(_next(task, sequence=seq))
    assert snapshot_tree(task.path) == before  # nothing overwritten, nothing added
    task.dir.checkpoints.write(_next(task, sequence=3))
    assert task.dir.checkpoints.numbers() == [0, 1, 2, 3]


def test_sequence_is_checked_against_disk_by_a_second_writer(task):
    """A second CheckpointLog (another process's view) cannot write a number that exists."""
    other = CheckpointLog(task.path, task.id)
    with pytest.raises(CheckpointSequenceError):
        other.write(_next(task, sequence=2))
    stale = CheckpointLog(task.path, task.id)
    stale.next_number()  # caches 3
    task.dir.checkpoints.write(_next(task, sequence=3))
    with pytest.raises(CheckpointSequenceError, match="checkpoint_003.json already exists"):
        stale.write(_next(task, sequence=3))
    assert stale.next_number() == 4  # the conflict refreshed its view


def test_out_of_order_is_still_a_value_error(task):
    with pytest.raises(ValueError):
        task.dir.checkpoints.write(_next(task, sequence=9))


def test_a_checkpoint_of_another_task_is_refused(task):
    with pytest.raises(StoreError, match="written to task"):
        task.dir.checkpoints.write(_next(task).model_copy(update={"task_id": new_id()}))


def test_missing_number(task):
    with pytest.raises(CheckpointNotFoundError, match="checkpoint_007.json: no such checkpoint"):
        task.dir.checkpoints.read(7)


# corruption -------------------------------------------------------------------------------

def _number(path) -> int:
    return int(path.stem.split("_")[1])


def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _edit(path):
    doc = json.loads(path.read_text())
    doc["position"] = "somewhere-else"  # sha256 left as it was
    path.write_text(json.dumps(doc))


def _edit_and_rehash_wrong_task(path):
    doc = json.loads(path.read_text())
    doc.pop("sha256")
    doc["task_id"] = new_id()
    doc["sequence"] = _number(path)
    doc["sha256"] = canonical_hash(doc)
    path.write_text(json.dumps(doc))


def _written_for_another_task(path):
    """A checkpoint as another task wrote it (its id inside, hashed), copied here."""
    doc = json.loads(path.read_text())
    doc.pop("sha256")
    doc["task_id"] = new_id()
    doc["sha256"] = content_hash(doc, doc["task_id"], _number(path))
    path.write_text(json.dumps(doc))


def _future_schema(path):
    doc = json.loads(path.read_text())
    doc.pop("sha256")
    doc["schema_version"] = SCHEMA_VERSION + 1
    doc["sha256"] = content_hash(doc, path.parent.name, _number(path))
    path.write_text(json.dumps(doc))


def _bad_field(path):
    doc = json.loads(path.read_text())
    doc.pop("sha256")
    doc["sequence"] = "two"
    doc["sha256"] = content_hash(doc, path.parent.name, _number(path))
    path.write_text(json.dumps(doc))


def _no_hash(path):
    doc = json.loads(path.read_text())
    doc.pop("sha256")
    path.write_text(json.dumps(doc))


def _empty(path):
    path.write_bytes(b"")


def _array(path):
    path.write_text("[1, 2]")


DAMAGE = {
    "truncated": (_truncate, "not valid JSON"),
    "edited": (_edit, "does not match its sha256"),
    "hash removed": (_no_hash, "does not match its sha256"),
    "empty": (_empty, "not valid JSON"),
    "not an object": (_array, "not a JSON object"),
    "another task": (_edit_and_rehash_wrong_task, "belongs to another task"),
    "another task's file": (_written_for_another_task, "belongs to another task"),
    "newer schema": (_future_schema, "written by a newer magent"),
    "wrong type": (_bad_field, "sequence"),
}


@pytest.mark.parametrize("damage", DAMAGE, ids=list(DAMAGE))
def test_read_refuses_a_damaged_checkpoint(task, damage):
    harm, words = DAMAGE[damage]
    harm(task.checkpoint_file(2))
    with pytest.raises(CheckpointCorruptError) as exc:
        task.dir.checkpoints.read(2)
    assert words in str(exc.value)
    assert str(exc.value).startswith(f"task {task.id[:8]} checkpoint_002.json: ")


@pytest.mark.parametrize("damage", DAMAGE, ids=list(DAMAGE))
def test_latest_with_repair_moves_the_corrupt_one_aside_and_falls_back_to_its_parent(task, damage):
    DAMAGE[damage][0](task.checkpoint_file(2))
    damaged_bytes = task.checkpoint_file(2).read_bytes()
    cp, notes = task.dir.checkpoints.latest(repair=True)
    assert cp.sequence == 1 and cp.checkpoint_id == task.checkpoints[2].parent_id
    assert cp.position == "b"
    assert not task.checkpoint_file(2).exists()
    moved = task.path / "checkpoint_002.json.corrupt"
    assert moved.read_bytes() == damaged_bytes  # renamed, never deleted or changed
    assert moved.stat().st_mode & 0o777 == 0o600
    assert notes[0].startswith(f"task {task.id[:8]} checkpoint_002.json: ")
    assert notes[1] == "moved aside as checkpoint_002.json.corrupt"
    assert task.dir.checkpoints.numbers() == [0, 1]


def test_latest_without_repair_changes_nothing_on_disk(task):
    _truncate(task.checkpoint_file(2))
    before = snapshot_tree(task.home.root)
    cp, notes = task.dir.checkpoints.latest(repair=False)
    assert cp.sequence == 1 and len(notes) == 1 and "not valid JSON" in notes[0]
    assert snapshot_tree(task.home.root) == before


def test_fallback_goes_past_several_corrupt_checkpoints(task):
    _truncate(task.checkpoint_file(2))
    _edit(task.checkpoint_file(1))
    cp, notes = task.dir.checkpoints.latest(repair=True)
    assert cp.sequence == 0
    assert sorted(p.name for p in task.path.glob("*.corrupt")) == [
        "checkpoint_001.json.corrupt", "checkpoint_002.json.corrupt"]


def test_all_corrupt_gives_none(task):
    for n in range(3):
        _truncate(task.checkpoint_file(n))
    cp, notes = task.dir.checkpoints.latest(repair=False)
    assert cp is None and len(notes) == 3


def test_a_second_quarantine_of_the_same_number_keeps_both(task):
    _truncate(task.checkpoint_file(2))
    task.dir.checkpoints.latest(repair=True)
    # the run continues from 1 and writes a new checkpoint 2, which is damaged in turn
    task.dir.checkpoints.write(_next(task, sequence=2, parent_id=task.checkpoints[1].checkpoint_id))
    _edit(task.checkpoint_file(2))
    cp, _ = task.dir.checkpoints.latest(repair=True)
    assert cp.sequence == 1
    assert sorted(p.name for p in task.path.glob("*.corrupt*")) == [
        "checkpoint_002.json.corrupt", "checkpoint_002.json.corrupt.1"]


def test_a_directory_named_like_a_checkpoint_is_corrupt_not_a_crash(task):
    (task.path / "checkpoint_003.json").mkdir()
    with pytest.raises(CheckpointCorruptError, match="is a directory"):
        task.dir.checkpoints.read(3)
    cp, _ = task.dir.checkpoints.latest(repair=False)
    assert cp.sequence == 2


def test_leftover_temp_files_and_other_names_are_not_checkpoints(task):
    (task.path / ".checkpoint_003.json.1234.abcd1234.tmp").write_text("{partial")
    (task.path / "checkpoint_3.json").write_text("{}")          # not three digits
    (task.path / "checkpoint_004.json.corrupt").write_text("x")
    (task.path / "checkpoint_005.json.bak").write_text("x")
    assert task.dir.checkpoints.numbers() == [0, 1, 2]
    assert task.dir.checkpoints.next_number() == 3
    assert task.dir.checkpoints.latest(repair=True)[0].sequence == 2


def test_numbers_beyond_999_keep_their_order(tmp_path):
    t = HomeBuilder().task("long run")
    log = t.dir.checkpoints
    for n in range(3):
        log.write(_next(t, sequence=n))
    # pretend many were written: the format widens rather than wrapping
    log._last = 999
    log.write(_next(t, sequence=1000))
    assert (t.path / "checkpoint_1000.json").exists()
    assert CheckpointLog(t.path, t.id).numbers() == [0, 1, 2, 1000]


def test_summaries_flag_corrupt_checkpoints_without_touching_them(task):
    _edit(task.checkpoint_file(1))
    before = snapshot_tree(task.path)
    rows = task.dir.checkpoints.summaries()
    assert [(r.sequence, r.corrupt) for r in rows] == [(0, False), (1, True), (2, False)]
    assert rows[2].position == "c" and rows[2].entry_count == 3
    assert snapshot_tree(task.path) == before


def test_state_round_trips_except_messages(task):
    cp = task.dir.checkpoints.read(2)
    assert cp.state == State(routing_key="pass", metadata={"n": 3})
    assert cp.state.messages == []


def test_a_checkpoint_is_written_whole(task):
    """Schema 18: nothing is left for other fields, the directory or the file's name to tell (the
    reason, the position's agent, the turn count, the task's spent, an agent's spent equal to
    the task's, the flags of a node past its first turn); only optional fields at their defaults
    are left out. (Schemas 9-17 left those out: tests/test_store_old_schemas.py reads them.)"""
    from magent.models import Usage
    from magent.models.budget import Spent
    from magent.models.progress import AgentProgress

    log = task.dir.checkpoints
    usage = {"scripted": Usage(input=100, output=7, calls=2, cost=0.25)}
    spent = Spent(tokens=107, model_calls=2, tool_calls=1, cost_usd=0.25)
    cp = _next(task, position="long", reason="llm_turn", state=State(current_agent="long"),
               node_progress=AgentProgress(kind="agent", entered=True, started=True, iteration=2), turn_index=2,
               usage_by_model=usage, spent={"task": spent, "agent:long": spent})
    log.write(cp)
    doc = json.loads(task.checkpoint_file(cp.sequence).read_text())
    assert (doc["task_id"], doc["sequence"], doc["reason"], doc["awaiting_human"]) == (
        task.id, cp.sequence, "llm_turn", False)
    assert (doc["state"], doc["turn_index"]) == ({"current_agent": "long"}, 2)
    assert doc["node_progress"] == {"kind": "agent", "entered": True, "started": True, "iteration": 2}
    assert doc["spent"]["task"] == doc["spent"]["agent:long"] == {
        "tokens": 107, "cost_usd": 0.25, "model_calls": 2, "tool_calls": 1}
    assert list(doc)[-1] == "sha256" and "messages" not in doc["state"]
    assert log.read(cp.sequence).model_dump(exclude={"sha256"}) == cp.model_dump(exclude={"sha256"})
