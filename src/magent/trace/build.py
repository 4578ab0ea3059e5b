"""Building seed 002's TraceLog (with seed 003 action records) from ``events.jsonl``, as plain
dicts so a 1,000-step task shows without building thousands of models.

``steps`` holds a node step per node visit, an iteration step per ReAct model turn (its
``llm_calls``, failed attempts first, and ``tool_calls``), and event steps between (pauses,
decisions, warnings, errors, tripped rails, attempts no answer followed). A tool result is kept
once, cut to about 1,000 characters, with its full text at ``entry_id`` in ``entries.jsonl``.
Action *k* and the *k*-th agent iteration step describe the same turn, so ``hydrate`` fills one
from the other; trace.json holds both whole, so each reads on its own."""

from __future__ import annotations

import functools
import json
import re
from datetime import datetime
from typing import TYPE_CHECKING, Any, Iterable

from magent.redact import OMITTED_ARGS, TOOL_IO_OMITTED
from magent.trace.actions import hydrate
from magent.trace.steps import TraceBuilder, TraceDoc

if TYPE_CHECKING:
    from magent.models import TraceLog
    from magent.store.tasks import TaskDir


def build_trace_doc(task_id: str, events: Iterable[Any], created_at: str | None = None) -> TraceDoc:
    """Build the TraceLog's JSON form from events (dicts, or ``Event`` models), oldest first."""
    builder = TraceBuilder(task_id)
    for ev in events:
        if not isinstance(ev, dict):
            ev = ev.model_dump(mode="json", exclude_none=True)
        builder.feed(ev)
    return builder.finish(created_at)


def build_trace(task_id: str, events: Iterable[Any], created_at: datetime | None = None) -> "TraceLog":
    """The ``TraceLog`` of ``events`` (a task's ``events.jsonl``, oldest first)."""
    from magent.models import TraceLog

    built = build_trace_doc(task_id, events, created_at.isoformat() if created_at else None)
    return TraceLog.model_validate(built.doc)


def dump_for_disk(trace: "TraceLog") -> bytes:
    """trace.json's JSON: every record whole, but for optional fields at their defaults (a step
    always has seed 002's fields: ``models.base.WRITTEN_ALWAYS``)."""
    from magent.models import StepRecord

    doc = trace.model_dump(mode="json", exclude_defaults=True)
    defaults = _step_defaults()
    steps = [{name: step[name] if name in step else defaults[name]
              for name in StepRecord.model_fields if name in step or name in defaults}
             for step in doc.get("steps", [])]
    out = {"schema_version": trace.schema_version, "task_id": trace.task_id, "steps": steps,
           "sub_agent_sessions": doc.get("sub_agent_sessions", {}), "actions": doc.get("actions", []),
           "usage_by_model": doc.get("usage_by_model", {}),
           **trace.model_dump(mode="json", include={"created_at", "updated_at"})}
    return json.dumps(out, ensure_ascii=False, separators=(",", ":")).encode()


@functools.cache
def _step_defaults() -> dict[str, Any]:
    """The defaults of the step fields trace.json always holds, made once per process: for a
    default factory pydantic inspects the factory's signature on every call, copying sys.modules."""
    from magent.models import StepRecord
    from magent.models.base import WRITTEN_ALWAYS

    return {name: StepRecord.model_fields[name].get_default(call_default_factory=True)
            for name in WRITTEN_ALWAYS["StepRecord"] if name != "timestamp"}


def write_trace(task_dir: "TaskDir") -> "TraceLog":
    """Rebuild ``trace.json`` from ``events.jsonl`` atomically, whenever a run ends, pauses or is
    interrupted; returns the trace."""
    from magent.store.files import atomic_write

    trace = rebuilt_trace(task_dir)
    atomic_write(task_dir.trace_file, dump_for_disk(trace))
    return trace


def rebuilt_trace(task_dir: "TaskDir") -> "TraceLog":
    """The trace ``write_trace`` writes: built from the task's ``events.jsonl``, as of now."""
    from magent.errors import MagentError
    from magent.ids import now
    from magent.models import TraceLog
    from magent.redact import load_settings
    from magent.store.events import read_events

    try:
        created = task_dir.load_task().created_at.isoformat()
    except Exception:  # a damaged task.json must not stop the trace being written
        created = None
    built = build_trace_doc(task_dir.id, read_events(task_dir), created)
    try:
        keep_tool_io = load_settings().trace_tool_io
    except MagentError:  # an unreadable redaction.yaml: keep the trace lean rather than leaky
        keep_tool_io = False
    if not keep_tool_io:
        omit_tool_io(built.doc)
    shorten_results(built.doc)
    hydrate(built.doc)
    built.doc["updated_at"] = now().isoformat()
    return TraceLog.model_validate(built.doc)


def shorten_results(doc: dict[str, Any]) -> None:
    """Keep of each result longer than ``PREVIEW_LIMIT`` that is an entry (its whole text is in
    entries.jsonl) a preview, marked as such: the history is stored once."""
    from magent.trace.notes import PREVIEW_LIMIT

    for step in doc.get("steps") or []:
        for record in step.get("tool_calls") or []:
            result = record.get("result")
            text = (result or {}).get("text") or ""
            if result and result.get("entry_id") and len(text) > PREVIEW_LIMIT:
                more = re.search(r"… \[(\d+) more characters\]$", text)  # (cut to ~1,000 already)
                total = len(text) - len(more[0]) + int(more[1]) if more else len(text)
                result["text"] = f"{text[:PREVIEW_LIMIT]}… [{total - PREVIEW_LIMIT} more characters]"
                result["preview"] = True


def omit_tool_io(doc: dict[str, Any]) -> None:
    """Leave tool arguments and results out of a trace doc (``trace_tool_io: false``)."""
    for step in doc.get("steps") or []:
        for record in step.get("tool_calls") or []:
            record["arguments"] = dict(OMITTED_ARGS)
            if record.get("result") is not None:
                kept = {k: v for k, v in record["result"].items() if k in ("entry_id", "artifact")}
                record["result"] = {"text": TOOL_IO_OMITTED, **kept}
            if record.get("error"):
                record["error"] = TOOL_IO_OMITTED
    for action in doc.get("actions") or []:
        for call in action.get("tool_calls") or []:
            call["args"] = dict(OMITTED_ARGS)
