"""A checkpoint's file form: what its file holds of a ``Checkpoint`` (``to_disk``), read back
(``from_disk``), and the same document built straight from a run's values (``run_form``).

A run writes one checkpoint per model turn. Building the ``Checkpoint`` model (validating every
field) and dumping it again only to get this small document was most of what writing it cost,
so the run's own checkpoints are built here as plain dicts; reading still goes through the
model. Both roads give the same bytes (tests/test_store_cpform.py holds them to it).
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any, Iterable

from pydantic_core import to_json, to_jsonable_python

from magent.models import SCHEMA_VERSION, Checkpoint, Usage
from magent.models.budget import Spent
from magent.store.files import plain_json


def to_disk(checkpoint: Checkpoint) -> dict:
    """The checkpoint as its file holds it (without ``sha256``).

    One is written per model turn, so every byte counts a thousand times on a long run: fields at
    their defaults are left out, at any depth (they come back on read); so are ``task_id`` (the
    directory names it) and, since schema 17, ``sequence`` (the file's name has it), both still
    hashed; a journal still empty is not named; and an agent's
    ``spent`` that equals the whole task's (the usual case: one agent) is written ``"task"``.
    Since schema 9 a field is also left out when it is what the checkpoint's other fields tell
    (``from_disk`` puts it back; a value that differs is written, even a default): ``reason``
    when it is ``llm_turn`` (one per model turn), ``state.current_agent`` when it is the
    ``position``, ``turn_index`` when it is ``node_progress.iteration``, and the task's spent
    ``tokens``, ``model_calls`` and ``cost_usd`` when they are the sums of ``usage_by_model``;
    since schema 14, ``node_progress.entered`` and ``started`` when they are true and its
    ``iteration`` is 1 or more (a node past its first turn has been entered and started).
    """
    doc = {"schema_version": checkpoint.schema_version,
           **checkpoint.model_dump(mode="json", exclude={"sha256": True, "task_id": True, "sequence": True,
                                                         "state": {"messages"}}, exclude_defaults=True)}
    _finish(doc, checkpoint.journals, reason=checkpoint.reason, current_agent=checkpoint.state.current_agent,
            position=checkpoint.position, progress=checkpoint.node_progress, turn_index=checkpoint.turn_index,
            task=checkpoint.spent.get("task"), usage=checkpoint.usage_by_model.values())
    return doc


def run_form(*, checkpoint_id: str, parent_id: str | None, position: str, created_at: datetime, reason: str,
             next_action: Any, current_agent: str, routing_key: Any, metadata: dict[str, Any],
             leaf_entry_id: str | None, entry_count: int, node_done: bool, node_progress: dict[str, Any],
             visits: dict[str, int], turn_index: int, usage_by_model: dict[str, Usage],
             cursors: dict[str, int], events_seq: int, spent: dict[str, Spent],
             journals: dict[str, int]) -> tuple[dict, bool] | None:
    """``to_disk`` of the checkpoint these values make (one not awaiting a person, with no
    feedback and no open child session), without building it: what ``model_dump(mode="json",
    exclude_defaults=True)`` gives, field by field in the model's order, then what ``to_disk``
    does to that; and whether pydantic's encoder writes it byte for byte as ``json`` does
    (``checkpoints.encoded``): no float in the values given, and the usage and spent figures'
    floats written alike (``_written_alike``). ``metadata``, ``node_progress``,
    ``next_action`` and ``routing_key`` are already masked and are taken as they are (not
    copied; ``metadata`` and ``node_progress`` are fresh dicts, as masking returns them). None
    when one of them holds a value that JSON has no plain form for (a tuple, a NaN, a key that
    is not a text...): pydantic turns such a value into JSON its own way, so the caller then
    builds the model."""
    plain = True
    for value in (metadata, node_progress, next_action, routing_key):
        if not plain_json(value, "none"):
            if not plain_json(value, "finite"):
                return None
            plain = False
    doc: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "checkpoint_id": checkpoint_id}
    if parent_id is not None:
        doc["parent_id"] = parent_id
    doc["position"] = position
    doc["created_at"] = _when(created_at)
    if reason != "node_end":
        doc["reason"] = reason
    state: dict[str, Any] = {}
    if next_action is not None:
        state["next_action"] = next_action
    if current_agent != "":
        state["current_agent"] = current_agent
    if routing_key is not None:
        state["routing_key"] = routing_key
    if metadata:
        state["metadata"] = metadata
    if state:
        doc["state"] = state
    if leaf_entry_id is not None:
        doc["leaf_entry_id"] = leaf_entry_id
    if entry_count != 0:
        doc["entry_count"] = entry_count
    if node_done:
        doc["node_done"] = node_done
    if node_progress:
        doc["node_progress"] = node_progress
    if visits:
        doc["visits"] = dict(visits)
    if turn_index != 0:
        doc["turn_index"] = turn_index
    if usage_by_model:
        written = doc["usage_by_model"] = {}
        for key, usage in usage_by_model.items():
            written[key], whole = _dumped(usage, _USAGE)
            plain = plain and whole
    if cursors:
        doc["cursors"] = dict(cursors)
    if events_seq != 0:
        doc["events_seq"] = events_seq
    if spent:
        written = doc["spent"] = {}
        for key, figures in spent.items():
            written[key], whole = _dumped(figures, _SPENT)
            plain = plain and whole
    doc["journals"] = journals
    _finish(doc, journals, reason=reason, current_agent=current_agent, position=position,
            progress=node_progress, turn_index=turn_index, task=spent.get("task"), usage=usage_by_model.values())
    return doc, plain


def _finish(doc: dict, journals: dict[str, int] | None, *, reason: str, current_agent: str, position: str,
            progress: dict[str, Any], turn_index: int, task: Spent | None, usage: Iterable[Usage]) -> None:
    """What ``to_disk`` does to the model's dump: empty journals left out, an agent's spent equal
    to the task's written ``"task"``, and what the other fields tell left out (schema 9)."""
    if journals is not None:
        doc["journals"] = {name: size for name, size in journals.items() if size}
    spent = doc.get("spent")
    if spent and "task" in spent:
        for key, value in spent.items():
            if key != "task" and value == spent["task"]:
                spent[key] = "task"
    _leave_out_told(doc, reason=reason, current_agent=current_agent, position=position, progress=progress,
                    turn_index=turn_index, task=task, usage=usage)


def in_order(doc: dict, task_id: str, sequence: int) -> dict:
    """``{**doc, "task_id": task_id, "sequence": sequence}`` with its keys sorted at every depth,
    for a document ``run_form`` made: what the checkpoint's canonical JSON (``sort_keys``) holds,
    for an encoder that cannot sort. Its keys are known (``_ordered``), and only its places that
    can hold more than one key are put in order."""
    out = _ordered({**doc, "task_id": task_id, "sequence": sequence}, "top")
    for key in ("visits", "cursors", "journals"):  # texts to integers
        value = out.get(key)
        if value is not None and len(value) > 1:
            out[key] = _ordered(value, key)
    for key, inner in (("usage_by_model", "usage"), ("spent", "figures")):  # names to numbers by name, or "task"
        value = out.get(key)
        if value:
            if len(value) > 1:
                value = _ordered(value, key)
            out[key] = {name: _ordered(figures, inner) if type(figures) is dict else figures
                        for name, figures in value.items()}
    for key in ("state", "node_progress"):  # anything JSON holds
        value = out.get(key)
        if value is not None:
            out[key] = _deep_in_order(value)
    return out


_ORDERS: dict[str, dict] = {}
"""The keys last seen in each place of a run's checkpoints, in order (values None): the same
keys come every model turn, and a copy of a dict takes its order at the cost of a copy."""


def _ordered(doc: dict, place: str) -> dict:
    """``doc`` with its keys sorted, its values as they are."""
    order = _ORDERS.get(place)
    if order is not None and len(order) == len(doc):
        out = order.copy()
        out.update(doc)
        if len(out) == len(order):  # no key of doc was missing from the order: the same keys
            return out
    order = _ORDERS[place] = dict.fromkeys(sorted(doc))
    out = order.copy()
    out.update(doc)
    return out


def _deep_in_order(value: Any) -> Any:
    """``value`` (JSON's types) with the keys of its dicts sorted, at every depth."""
    if type(value) is list:
        return [_deep_in_order(item) for item in value]
    if type(value) is not dict:
        return value
    out = {}
    for key in sorted(value):
        item = value[key]
        out[key] = _deep_in_order(item) if type(item) is dict or type(item) is list else item
    return out


_USAGE = (("input", int, 0), ("output", int, 0), ("cost", float, 0.0), ("calls", int, 0), ("unpriced", int, 0))
_SPENT = (("tokens", int, 0), ("cost_usd", float, 0.0), ("model_calls", int, 0), ("tool_calls", int, 0))
"""``Usage``'s and ``Spent``'s fields in their order, with their types and defaults (checked
against the models by tests/test_store_cpform.py)."""


def _dumped(model: Usage | Spent, fields: tuple[tuple[str, type, Any], ...]) -> tuple[dict[str, Any], bool]:
    """``model.model_dump(mode="json", exclude_defaults=True)`` of a model of numbers: an int
    where a float belongs is written as a float, as pydantic does (``Meter`` adds to its
    ``Spent`` in place, unvalidated); anything else unusual is left to pydantic. With it, whether
    pydantic's encoder writes it as ``json`` does (False, too, when pydantic made it)."""
    out: dict[str, Any] = {}
    whole = True
    for name, kind, default in fields:
        value: Any = getattr(model, name)
        found = type(value)
        if found is not kind:
            if kind is float and found is int:
                value = float(value)
            else:
                return model.model_dump(mode="json", exclude_defaults=True), False
        elif kind is float and not math.isfinite(value):
            return model.model_dump(mode="json", exclude_defaults=True), False
        if value != default:
            out[name] = value
            if kind is float and whole:
                whole = _written_alike(value)
    return out, whole


def _written_alike(value: float) -> bool:
    """Whether pydantic's encoder writes ``value`` as ``json`` does (``repr``): most costs, but
    not 3e-05 (``0.00003``)."""
    return to_json(value) == repr(value).encode()


def _when(moment: datetime) -> str:
    """A timestamp as pydantic's JSON mode writes it (``...Z`` for UTC)."""
    return to_jsonable_python(moment)


_TOLD_FIELDS = ("reason", "state.current_agent", "turn_index", "spent.task.tokens",
                "spent.task.model_calls", "spent.task.cost_usd", "node_progress.entered",
                "node_progress.started")
"""The fields schema 9 leaves out when the checkpoint's other fields tell them (``_told``)."""


def _told(doc: dict) -> dict[str, object]:
    """What a checkpoint's other fields tell of the fields in ``_TOLD_FIELDS``: a model turn's
    reason, the position's agent, the node's iteration as the task's turn count, and usage summed
    over the models as what the task spent."""
    progress = doc.get("node_progress")
    usage = [u for u in (doc.get("usage_by_model") or {}).values() if isinstance(u, dict)]
    cost = 0.0
    for u in usage:
        cost += u.get("cost", 0.0)
    iteration = progress.get("iteration") if isinstance(progress, dict) else None
    turned = True if type(iteration) is int and iteration >= 1 else None  # a node past its first turn
    return {"node_progress.entered": turned, "node_progress.started": turned,
            "reason": "llm_turn", "state.current_agent": doc.get("position"),
            "turn_index": progress.get("iteration", 0) if isinstance(progress, dict) else 0,
            "spent.task.tokens": sum(u.get("input", 0) + u.get("output", 0) for u in usage),
            "spent.task.model_calls": sum(u.get("calls", 0) for u in usage),
            "spent.task.cost_usd": cost}


def _leave_out_told(doc: dict, *, reason: str, current_agent: str, position: str, progress: dict[str, Any],
                    turn_index: int, task: Spent | None, usage: Iterable[Usage]) -> None:
    """What ``_told`` gives, left out of ``doc`` (the file's form of a checkpoint with these
    values); a value that differs is written, even a default. Spelled out field by field: it runs
    once per model turn, and must agree with ``_told`` (tests/test_store_checkpoints.py)."""
    if reason == "llm_turn":
        doc.pop("reason", None)
    else:
        doc["reason"] = reason
    state = doc.get("state")
    if current_agent == position:
        if state is not None:
            state.pop("current_agent", None)
            if not state:
                del doc["state"]
    elif state is None:
        doc["state"] = {"current_agent": current_agent}
    else:
        state["current_agent"] = current_agent
    iteration = progress.get("iteration", 0)
    if turn_index == iteration:
        doc.pop("turn_index", None)
    else:
        doc["turn_index"] = turn_index
    spent = doc.get("spent")
    if task is not None and spent is not None and isinstance(spent.get("task"), dict):
        written = spent["task"]
        tokens = calls = 0
        cost = 0.0
        for u in usage:
            tokens += u.input + u.output
            calls += u.calls
            cost += u.cost
        for key, figure, told in (("tokens", task.tokens, tokens), ("model_calls", task.model_calls, calls),
                                  ("cost_usd", task.cost_usd, cost)):
            if figure == told:
                written.pop(key, None)
            else:
                written[key] = figure
    if type(iteration) is int and iteration >= 1 and "node_progress" in doc:
        written_progress = doc["node_progress"]
        for key in ("entered", "started"):
            value = progress.get(key)
            if value is True:
                written_progress.pop(key, None)
            else:
                written_progress[key] = value


def _parent(doc: dict, path: str, make: bool) -> tuple[dict | None, str]:
    *heads, last = path.split(".")
    for head in heads:
        nxt = doc.get(head)
        if not isinstance(nxt, dict):
            if not make:
                return None, last
            nxt = doc[head] = {}
        doc = nxt
    return doc, last


def _tell(doc: dict) -> None:
    """Put back what ``_leave_out_told`` left out (schema 9 onwards)."""
    told = _told(doc)
    for path in _TOLD_FIELDS:
        if path.startswith("spent.task.") and not isinstance((doc.get("spent") or {}).get("task"), dict):
            continue
        if path.startswith("node_progress.") and (told[path] is None or not isinstance(doc.get("node_progress"), dict)):
            continue
        holder, key = _parent(doc, path, make=True)
        if holder is not None:
            holder.setdefault(key, told[path])


def from_disk(doc: dict, task_id: str, sequence: int | None = None) -> dict:
    """What ``to_disk`` left out or wrote by reference, put back (a migrated document of any
    version; ``sequence``: the number its file's name holds). Raises ``ValueError`` for a
    reference that names nothing."""
    doc.setdefault("task_id", task_id)
    if sequence is not None:
        doc.setdefault("sequence", sequence)
    _tell(doc)
    spent = doc.get("spent")
    if isinstance(spent, dict):
        for key, value in spent.items():
            if isinstance(value, str):
                if not isinstance(spent.get(value), dict):
                    raise ValueError(f"spent.{key}: refers to {value!r}, which is not there")
                spent[key] = spent[value]
    return doc
