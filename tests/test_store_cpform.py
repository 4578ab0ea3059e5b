"""A checkpoint's file form built straight from a run's values (``cpform.run_form``) is, byte for
byte, what ``to_disk`` makes of the ``Checkpoint`` model those values make."""

from __future__ import annotations

import copy
import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from magent.ids import new_id
from magent.models import Checkpoint, State, Usage
from magent.models.budget import Spent
from magent.store import Store
from magent.store.checkpoints import content_hash, encoded
from magent.store.cpform import _SPENT, _USAGE, run_form, to_disk
from magent.store.files import dumps
from support.cli import invoke
from support.crashflow import only_task
from support.parallelflow import make_parallel

TASK = new_id()

BASE = dict(checkpoint_id=new_id(), parent_id=new_id(), position="long",
            created_at=datetime(2026, 11, 23, 19, 13, 21, 75152, tzinfo=timezone.utc), reason="llm_turn",
            next_action=None, current_agent="long", routing_key=None, metadata={}, leaf_entry_id=new_id(),
            entry_count=39, node_done=False, node_progress={"iteration": 19}, visits={"long": 1}, turn_index=19,
            usage_by_model={"scripted": Usage(input=428475, output=123, calls=19)}, cursors={"long": 19},
            events_seq=79, spent={"task": Spent(tokens=428598, model_calls=19, tool_calls=19),
                                  "agent:long": Spent(tokens=428598, model_calls=19, tool_calls=19)},
            journals={"kv.jsonl": 0, "tool_pins.jsonl": 279})

CASES = {
    "a model turn": {},
    "the first checkpoint": dict(parent_id=None, reason="run_start", current_agent="", leaf_entry_id=None,
                                 entry_count=0, node_progress={}, visits={}, turn_index=0, usage_by_model={},
                                 cursors={}, events_seq=0, spent={}, journals={}),
    "a node's end, everything set": dict(
        reason="node_end", node_done=True, next_action="go on", routing_key="pass",
        metadata={"last_output": "done", "outputs": {"long": "done"}, "n": [1, 2.5, None, True]}),
    "the defaults written where the other fields tell otherwise": dict(
        reason="node_end", current_agent="", turn_index=0,
        node_progress={"entered": True, "started": False, "iteration": 2}),
    "a progress without its flags": dict(node_progress={"iteration": 3, "held": {"a": 1}}, entry_count=1),
    "a first turn keeps its flags": dict(node_progress={"entered": True, "started": True, "iteration": 0}),
    "an iteration that is not a number": dict(node_progress={"entered": True, "iteration": "x"}),
    "an agent that spent less than the task": dict(
        spent={"task": Spent(tokens=5, cost_usd=0.25, model_calls=1, tool_calls=2), "agent:a": Spent(tool_calls=1)}),
    "spent that is not the sums of usage": dict(
        usage_by_model={"a/b": Usage(input=1, output=2, cost=0.5, calls=1, unpriced=1),
                        "c": Usage(input=3, calls=1)},
        spent={"task": Spent(tokens=7, cost_usd=0.5, model_calls=3)}),
    "an int where a float belongs": dict(spent={"task": Spent(model_calls=1), "agent:a": Spent(model_calls=1)}),
    "costs pydantic writes otherwise": dict(
        usage_by_model={"a": Usage(input=1, cost=3e-05, calls=1), "b": Usage(input=2, cost=0.25, calls=1)},
        spent={"task": Spent(tokens=3, cost_usd=2.5e-07, model_calls=2)}),
    "a naive timestamp without microseconds": dict(created_at=datetime(2026, 1, 1, 0, 0, 0)),
    "many keys out of order at every depth": dict(
        reason="node_end", current_agent="writer", next_action="go on", routing_key="é\n",
        metadata={"zeta": {"b": [3, {"q": 1, "p": 2}], "a": [{"d": None, "c": "x"}]}, "alpha": True},
        node_progress={"iteration": 4, "zz": {"b": 2, "a": 1}, "aa": [{"d": 4, "c": 3}]},
        visits={"review": 2, "draft": 3, "publish": 1}, cursors={"writer": 4, "editor": 2},
        journals={"tool_pins.jsonl": 9, "kv.jsonl": 5},
        usage_by_model={"z/m": Usage(input=1, output=2, calls=1, unpriced=1), "a": Usage(input=3, calls=1)},
        spent={"task": Spent(tokens=7, model_calls=3, tool_calls=4), "agent:z": Spent(tool_calls=1),
               "agent:a": Spent(tokens=7, model_calls=3, tool_calls=4)}),
}


WRITTEN_ALIKE = ("an agent that spent less than the task", "spent that is not the sums of usage",
                 "an int where a float belongs")
"""Cases whose floats (0.25, 0.5, 1.0) pydantic writes as json does."""


def _holds_float(value) -> bool:
    if isinstance(value, dict):
        return any(map(_holds_float, value.values()))
    return any(map(_holds_float, value)) if isinstance(value, list) else type(value) is float


def _model(values: dict) -> Checkpoint:
    v = copy.deepcopy(values)
    state = State(next_action=v.pop("next_action"), current_agent=v.pop("current_agent"),
                  routing_key=v.pop("routing_key"), metadata=v.pop("metadata"))
    return Checkpoint(task_id=TASK, sequence=3, state=state, node_progress=v.pop("node_progress"),
                      leaf_entry_id=v.pop("leaf_entry_id"), spent=v.pop("spent"), **v)


@pytest.mark.parametrize("case", CASES)
def test_a_runs_form_is_the_models_file_form(case):
    values = {**BASE, **CASES[case]}
    if case == "an int where a float belongs":
        values["spent"]["agent:a"].cost_usd = 1  # Meter adds to its Spent in place, unvalidated
    expected = to_disk(_model(values))
    given = copy.deepcopy(values)
    got = run_form(**given)
    assert got is not None
    doc, plain = got
    assert dumps(doc) == dumps(expected)
    # "plain": pydantic's encoder writes the file and the canonical form (keys put in order)
    # byte for byte as json does: no float, or only usage and spent figures it writes alike.
    assert plain is (case in WRITTEN_ALIKE or not _holds_float(doc))
    assert encoded(doc, plain) == dumps(expected)
    assert content_hash(doc, TASK, 3, plain) == content_hash(json.loads(dumps(expected)), TASK, 3)


def test_the_field_tables_are_the_models():
    for table, model in ((_USAGE, Usage), (_SPENT, Spent)):
        fields = model.model_fields
        assert [name for name, _, _ in table] == list(fields)
        assert [(kind, default) for _, kind, default in table] == [(f.annotation, f.default) for f in fields.values()]


@pytest.mark.parametrize("odd", [{"t": (1, 2)}, {"nan": float("nan")}, {1: "a key that is not a text"},
                                 {"when": datetime(2026, 1, 1)}, {"deep": [{"s": {1, 2}}]}])
def test_a_value_json_has_no_plain_form_for_is_left_to_the_model(odd):
    assert run_form(**{**BASE, "metadata": odd}) is None
    assert run_form(**{**BASE, "node_progress": {"iteration": 1, **odd}}) is None


def _checkpoint_files(task_id: str) -> list[Path]:
    td = Store().task(task_id)
    return [td.checkpoints.path(n) for n in td.checkpoints.numbers()]


def test_a_runs_checkpoints_read_back_to_the_same_file(tmp_path: Path, magent_home: Path):
    """Every checkpoint a run wrote (its own form where no child session is open, the model's
    where branches and map items are) is what ``to_disk`` makes of what reading it gives."""
    result = invoke("run", str(make_parallel(tmp_path)), "-t", "do everything",
                    env={"LEDGER": str(tmp_path / "ledger.txt")})
    assert result.code == 0, result.err
    task_id = only_task(magent_home)
    td = Store().task(task_id)
    files = _checkpoint_files(task_id)
    assert len(files) > 10 and any(td.checkpoints.read(n).sessions for n in td.checkpoints.numbers())
    for path in files:
        doc = json.loads(path.read_bytes())
        doc.pop("sha256")
        cp = td.checkpoints.read(int(path.stem.split("_")[1]))
        assert dumps(to_disk(cp)) == dumps(doc), path.name
