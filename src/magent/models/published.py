"""The published JSON Schemas of the files magent writes (``docs/schemas/``), from the models.

One schema per kind of file (``FILES``): a JSON document (task.json, a checkpoint, trace.json,
batch.json) or one line of a JSON Lines file (entries, events, the journals, a batch's rows, a
memory export). They describe the plain form: every record reads on its own, and a field is left
out only when it is optional and at the ``default`` its schema states (``WRITTEN_ALWAYS`` names
the fields with a default that are written all the same: the seeds require them). Field
docstrings (the string under a field) become the fields' ``description``.

Write them again after changing a model (a test fails while they are stale)::

    python -m magent.models.published

The same code writes ``magent/trace/tracelog.schema.json``, which ships in the package: the
schema of ``magent trace ID --json``, which prints every field, defaults included.
"""

from __future__ import annotations

import ast
import inspect
import json
import sys
import textwrap
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter
from pydantic_core import to_jsonable_python

from magent.models.base import WRITTEN_ALWAYS

from magent.schema import SCHEMA_VERSION

DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_DIR = Path(__file__).resolve().parents[3] / "docs" / "schemas"
"""``docs/schemas/`` of the checkout this module is in (an installed package has none)."""
TRACELOG_FILE = Path(__file__).resolve().parent.parent / "trace" / "tracelog.schema.json"
COMMAND = "python -m magent.models.published"

TOOL_RESULT_HOLDS = ("tool_call_id", "name", "node")
"""What an entries.jsonl tool result (``role: tool``) always holds: the call it answers, the tool's
name and the node that ran it."""

EVENT_TYPES: dict[str, str] = {
    "run_started": "A run began: a new task, or a resume, follow-up, fork or retry (`resumed`, `from_checkpoint`).",
    "node_started": "A node's visit began (`kind`, `agent`, `visit`).",
    "llm_started": "Live only (the terminal and `--json`, never events.jsonl): an attempt at a model call began.",
    "llm_call": "A model answered, or an attempt failed (`error`): model, provider, tokens, cost, latency; "
                "`entry_id` names the answer in entries.jsonl, `request` its pieces in requests.jsonl.",
    "tool_mode": "How an agent calls tools at its node: `mode` (native or text), `model`, the agent's `setting` and the `reason`.",
    "tool_call": "A tool is about to be called (the intent, written before the call): `tool`, `call_id`, `arguments`.",
    "tool_result": "A tool call ended: `outcome` (SUCCESS, FAILURE, ERROR, TIMEOUT), `duration_ms`, "
                   "`entry_id` naming the result in entries.jsonl.",
    "reflection": "A critic's verdict on a reflection node's output (`verdict`, `feedback`, `round`, `routing_key`).",
    "route": "The run left a node for the next one (`to`, `routing_key`).",
    "checkpoint": "Live only (never in events.jsonl: the checkpoint file is its own record): a checkpoint was written.",
    "awaiting_human": "The run paused for a person (`kind`, `question`, `allowed_actions`, `details`).",
    "human_decision": "A person's answer to a pause was applied (`action`, `message`, `state_updates`).",
    "node_finished": "A node's visit ended (`status`, `duration_ms`, `output`).",
    "error": "The run failed (`message`, `error_type`).",
    "run_finished": "The run ended (`status`, `result`, `usage`).",
    "interrupted": "The run was stopped by a signal; `magent resume` continues it.",
    "tool_output": "Live only (the terminal, `--json --stream` and `on_event`; never events.jsonl): a line a tool "
                   "printed while it ran (`tool`, `call_id`, `stream`, `line`, masked); its result holds them all.",
    "injection": "An operator's message reached the running task (`magent chat ID` while it ran): `signal`, "
                 "`message`; it is an `injection` entry the model reads as a user message.",
    "signal": "An operator's pause or cancel reached the running task at a safe point (`signal`, `kind`).",
    "warning": "Something the run went on despite (`message`): a tool server that did not start, a key nothing reads...",
    "session_started": "A child session opened: a sub-agent call, a branch, a map item or a plan subtask "
                       "(`session`, `parent_session`, `kind`, `key`, `depth`).",
    "session_finished": "A child session ended (`session`, `status`, `message_count`, `output`, `error`).",
    "fan_out": "A fan-out edge started branches (`targets`, `join`, `on_error`).",
    "join": "A join node gathered its branches (`failed` lists those that failed).",
    "map_started": "A map node started one branch per item.",
    "map_finished": "A map node's items all ended (`failed` lists the items that failed).",
    "plan_started": "A plan node began planning.",
    "plan": "A plan was made (`revision`, its subtasks and levels).",
    "plan_invalid": "A plan did not validate and is asked for again.",
    "plan_level": "A level of the plan's subtasks started (they run in parallel).",
    "subtask_finished": "A plan subtask ended (`status`).",
    "plan_revising": "A plan is revised after a subtask failed.",
    "plan_finished": "A plan node ended.",
    "guardrail": "A guardrail masked, withheld or sent back a text (`stage`, `source`, the rail's fields).",
    "output_invalid": "An answer did not fit its agent's `output_schema` (`problem`, `retry`, `retries`).",
    "model_routed": "An agent's routing chose the model of its next turn, before the call (`agent`, `iteration`, "
                    "`model`, `index` into `llm_config.models`, `rule`: which rule matched and why).",
    "budget_reached": "A usage budget's limit was reached (`limit`, `value`, `used`, `scope`, `action`).",
    "compaction": "A context budget left older messages out of an agent's view "
                  "(`strategy`, `dropped`, `kept`, `tokens_before`, `tokens_after`).",
    "elicitation": "An MCP server asked a question during a tool call, and how it was answered (`server`, `mode`, "
                   "`message`, `schema` or `url`, `action`, `content`, `answered_by`: `person` or `config: ...`).",
    "memory_recalled": "Long-term memories were given to an agent before a model turn (`query`, `hits`).",
    "memory_stored": "A memory was stored (by the `memory` tool or at the end of a task).",
    "memory_forgotten": "The `memory` tool forgot a memory (`id`, `scope`, `content`).",
    "memory_consolidated": "Memory was consolidated after the run (`merged`, `archived`, `decayed`).",
}
"""Every event type, with what it says (the fields besides ``seq``, ``ts``, ``type`` and ``node``
are the type's own)."""


def files() -> dict[str, tuple[str, Any]]:
    """``{schema file name: (what it describes, model or type)}``."""
    from magent.models import Checkpoint, Entry, Event, MemoryEntry, Task, TraceLog
    from magent.models.batch import BatchRecord, BatchRow
    from magent.models.journals import KvChange, RequestPiece, Signal, ToolPin

    return {
        "task.schema.json": ("tasks/{task_id}/task.json", Task),
        "checkpoint.schema.json": ("tasks/{task_id}/checkpoint_NNN.json", Checkpoint),
        "entry.schema.json": ("a line of tasks/{task_id}/entries.jsonl", Entry),
        "event.schema.json": ("a line of tasks/{task_id}/events.jsonl (and of `magent run --json`)", Event),
        "trace.schema.json": ("tasks/{task_id}/trace.json", TraceLog),
        "kv.schema.json": ("a line of tasks/{task_id}/kv.jsonl", KvChange),
        "tool-pin.schema.json": ("a line of tasks/{task_id}/tool_pins.jsonl", ToolPin),
        "request.schema.json": ("a line of tasks/{task_id}/requests.jsonl", RequestPiece),
        "signal.schema.json": ("tasks/{task_id}/signals/NNNNNN.json", Signal),
        "batch.schema.json": ("batches/{batch_id}/batch.json", BatchRecord),
        "batch-row.schema.json": ("a line of batches/{batch_id}/rows.jsonl", BatchRow),
        "memory.schema.json": ("a line of `magent memory export`", MemoryEntry),
    }


def _field_docs(cls: type) -> dict[str, str]:
    """``{field: docstring}`` for the fields of ``cls`` (and its bases) that have one."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass is object or not klass.__module__.startswith("magent."):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for stmt, after in zip(body, body[1:]):
            if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                    and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)):
                docs[stmt.target.id] = inspect.cleandoc(after.value.value)
    return docs


def _models(root: Any) -> dict[str, type[BaseModel]]:
    """Every pydantic model reachable from ``root`` (a model or a type such as a union), by name."""
    found: dict[str, type[BaseModel]] = {}
    todo: list[Any] = [root]
    while todo:
        tp = todo.pop()
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            if tp.__name__ in found:
                continue
            found[tp.__name__] = tp
            todo.extend(field.annotation for field in tp.model_fields.values())
        else:
            todo.extend(getattr(tp, "__args__", ()) or ())
    return found


def _default_of(field: Any) -> tuple[bool, Any]:
    """``(True, value as JSON)`` for a field whose default factory gives a fixed value (an empty
    list, a fresh model); ``(False, None)`` for a time or no factory."""
    if field.default_factory is None:
        return False, None
    value = field.default_factory()
    if isinstance(value, datetime):
        return False, None
    return True, to_jsonable_python(value)


def schema_of(root: Any, *, every_field: bool = False) -> dict[str, Any]:
    """The JSON Schema of ``root`` (a model, or a type) as magent writes it: descriptions from
    the field docstrings, ``default`` for every optional field, and required what is always there
    (``every_field``: every field, as ``--json`` prints them)."""
    if isinstance(root, type) and issubclass(root, BaseModel):
        schema = root.model_json_schema(mode="serialization")
    else:
        schema = TypeAdapter(root).json_schema(mode="serialization")
    defs = schema.get("$defs", {})
    for name, cls in _models(root).items():
        target = schema if cls is root else defs.get(name)
        if target is None or "properties" not in target:
            continue
        props = target["properties"]
        for field, doc in _field_docs(cls).items():
            if field in props and "description" not in props[field]:
                props[field]["description"] = doc
        for field, info in cls.model_fields.items():
            has, value = _default_of(info)
            if has and field in props and "default" not in props[field]:
                props[field]["default"] = value
        if every_field:  # (but those its model leaves out at some value: a usage's cache parts at 0)
            target["required"] = [f for f in props
                                  if f not in cls.model_fields or cls.model_fields[f].exclude_if is None]
        else:
            required = set(target.get("required", ())) | set(WRITTEN_ALWAYS.get(name, ()))
            target["required"] = [f for f in props if f in required]
        if "schema_version" in props and not every_field:
            props["schema_version"]["const"] = SCHEMA_VERSION
    return schema


def _event_types(schema: dict[str, Any]) -> None:
    schema["properties"]["type"] = {
        "description": "What happened; the other fields depend on it.",
        "oneOf": [{"const": kind, "description": text} for kind, text in EVENT_TYPES.items()]}


def _tool_results(schema: dict[str, Any]) -> None:
    schema["if"] = {"properties": {"role": {"const": "tool"}}, "required": ["role"]}
    schema["then"] = {"required": list(TOOL_RESULT_HOLDS)}


def published(name: str) -> dict[str, Any]:
    """The schema document ``docs/schemas/{name}``."""
    what, root = files()[name]
    schema = schema_of(root)
    if name == "event.schema.json":
        _event_types(schema)
    elif name == "entry.schema.json":
        _tool_results(schema)
    title = schema.pop("title", None)  # (a union, such as a kv line, has none)
    return {"$schema": DIALECT, "$id": f"urn:magent:schema:{SCHEMA_VERSION}:{name}",
            "$comment": f"Generated from magent's models by `{COMMAND}`; do not edit by hand.",
            "title": f"{title}: {what}" if title else what, "x-magent-schema-version": SCHEMA_VERSION, **schema}


def tracelog_schema() -> dict[str, Any]:
    """The JSON Schema of the TraceLog as ``magent trace ID --json`` prints it (every field)."""
    from magent.models import TraceLog

    return {"$schema": DIALECT, "$comment": f"Generated from magent's TraceLog model by `{COMMAND}`; "
            "do not edit by hand.", **schema_of(TraceLog, every_field=True),
            "title": "TraceLog (magent trace ID --json)"}


def render(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def expected() -> dict[Path, str]:
    """Every schema file, path → the text it should hold."""
    out = {SCHEMA_DIR / name: render(published(name)) for name in files()}
    out[TRACELOG_FILE] = render(tracelog_schema())
    return out


def stale() -> list[Path]:
    """The schema files that are missing or differ from what the models give."""
    return [path for path, text in expected().items()
            if not path.exists() or path.read_text(encoding="utf-8") != text]


def main(argv: list[str] | None = None) -> int:
    """Write the schema files (``--check``: exit 1 naming the stale ones instead)."""
    args = sys.argv[1:] if argv is None else argv
    if not SCHEMA_DIR.parent.is_dir():
        print(f"{SCHEMA_DIR.parent} not found: run this from a checkout of magent", file=sys.stderr)
        return 2
    if "--check" in args:
        old = stale()
        for path in old:
            print(f"{path} is out of date: run {COMMAND}", file=sys.stderr)
        return 1 if old else 0
    SCHEMA_DIR.mkdir(exist_ok=True)
    names = {SCHEMA_DIR / name for name in files()}
    for path in sorted(SCHEMA_DIR.glob("*.schema.json")):
        if path not in names:  # a kind that is gone
            path.unlink()
            print(f"removed {path}")
    for path, text in expected().items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
