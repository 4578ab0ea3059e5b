"""Finding the trace of a task to show: ``trace.json`` when current, else built from
``events.jsonl`` (a running task, or a trace missing, unreadable, stale or of another version,
with a note saying so)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from magent.store.files import loads, read_bytes
from magent.trace.actions import hydrate

# Building a trace from events (store.events, trace.build) is imported where it is done: a
# finished task's trace.json needs neither, nor the models they import.
if TYPE_CHECKING:
    from magent.store.tasks import TaskDir
    from magent.trace.steps import TraceDoc


@dataclass
class TaskInfo:
    """What the trace views need from task.json (read as plain JSON: no model to build)."""

    id: str
    status: str
    workflow: str = ""
    description: str = ""
    created_at: str | None = None
    updated_at: str | None = None
    error: str | None = None


def read_task(task_dir: "TaskDir", notes: list[str]) -> TaskInfo | None:
    from magent.models import SCHEMA_VERSION

    try:
        doc = loads(read_bytes(task_dir.task_file))
    except FileNotFoundError:
        notes.append(f"task {task_dir.id[:8]}: task.json is missing")
        return None
    except (OSError, ValueError) as exc:
        notes.append(f"task {task_dir.id[:8]}: task.json is unreadable ({exc})")
        return None
    if not isinstance(doc, dict):
        notes.append(f"task {task_dir.id[:8]}: task.json is not a JSON object")
        return None
    version = doc.get("schema_version")
    if isinstance(version, int) and version > SCHEMA_VERSION:
        notes.append(f"task.json was written by a newer magent (schema {version}); some fields may be missing")
    return TaskInfo(id=task_dir.id, status=str(doc.get("status") or "unknown"), workflow=str(doc.get("workflow") or ""),
                    description=str(doc.get("description") or ""), created_at=doc.get("created_at"),
                    updated_at=doc.get("updated_at"), error=doc.get("error"))


@dataclass
class TraceView:
    """What ``magent trace`` shows: the trace (JSON form), where it came from, and notes."""

    task_dir: "TaskDir"
    task: TaskInfo | None
    partial: dict[str, Any]
    """The trace as read, before ``doc`` completes it: results in ``unfilled`` have no text yet and
    the actions are not filled in. The step tree reads this, filling only what it shows."""
    source: str
    """``trace.json``, ``events.jsonl``, or ``nothing`` (neither file could be read)."""
    built: TraceDoc | None = None
    """Set when built from events: the events behind each step."""
    live: bool = False
    """A process holds the task's lock: it is running now."""
    notes: list[str] = field(default_factory=list)
    unfilled: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Tool results whose text trace.json leaves to their entries, by entry id, not read back yet."""
    _whole: bool = field(default=False, repr=False)

    @property
    def doc(self) -> dict[str, Any]:
        """The whole trace: every result's text read back from entries.jsonl and the actions
        filled in from the steps (both done on first use)."""
        if not self._whole:
            self.fill()
            hydrate(self.partial, refresh=True)
            self._whole = True
        return self.partial

    @property
    def steps(self) -> list[dict[str, Any]]:
        return self.doc.get("steps") or []

    def needs_text(self, result: Any) -> bool:
        """``result`` (a tool call record's) still waits for its text from entries.jsonl."""
        return isinstance(result, dict) and "text" not in result and result.get("entry_id") in self.unfilled

    def fill(self, entry_ids: Any = None) -> None:
        """Read back the text of the ``unfilled`` results (only of those ``entry_ids`` when given)."""
        wanted = list(self.unfilled) if entry_ids is None else [i for i in entry_ids if i in self.unfilled]
        if wanted:
            fill_results({i: self.unfilled.pop(i) for i in wanted}, self.task_dir.entries_file)

    @property
    def status(self) -> str:
        if self.task is None:
            return "unknown"
        from magent.vocabulary import shown_status

        return shown_status(self.task.status, self.live)


def _mtime(path: Any) -> float | None:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


TRACE_READABLE_FROM = 4
"""The oldest trace.json version read as it is (migrated); an older one is rebuilt from the events."""


def read_trace_file(task_dir: "TaskDir", notes: list[str]) -> dict[str, Any] | None:
    """trace.json as a dict (an older version migrated) if it is current; otherwise None with the
    reason in ``notes``."""
    from magent.models import SCHEMA_VERSION

    trace_time = _mtime(task_dir.trace_file)
    if trace_time is None:
        notes.append("trace.json is missing")
        return None
    try:
        doc = loads(read_bytes(task_dir.trace_file))
    except (OSError, ValueError) as exc:
        notes.append(f"trace.json is unreadable ({exc.__class__.__name__}: {exc})")
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("steps"), list):
        notes.append("trace.json is not a TraceLog (no steps list)")
        return None
    version = doc.get("schema_version")
    if type(version) is int and TRACE_READABLE_FROM <= version < SCHEMA_VERSION:
        from magent.store.migrations import migrate

        doc = migrate("trace", doc)
    elif version != SCHEMA_VERSION:
        age = "an older" if not isinstance(version, int) or version < SCHEMA_VERSION else "a newer"
        notes.append(f"trace.json has {age} schema version ({version}; this magent writes {SCHEMA_VERSION})")
        doc["_unusable"] = True
        return doc
    events_time = _mtime(task_dir.events_file)
    if events_time is not None and events_time > trace_time:
        notes.append("trace.json is older than events.jsonl (the run stopped without writing it)")
        doc["_unusable"] = True
        return doc
    return doc


def restore_results(doc: dict[str, Any], task_dir: "TaskDir") -> dict[str, Any]:
    """Put back the ~1,000 characters of the results trace.json leaves to their entries (from
    those entries). Returns ``doc``, changed in place."""
    fill_results(cut_results(doc), task_dir.entries_file)
    return doc


def cut_results(doc: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The tool results of ``doc`` whose text is left to their entries, by entry id."""
    cut: dict[str, list[dict[str, Any]]] = {}
    for step in doc.get("steps") or []:
        for record in step.get("tool_calls") or []:
            result = record.get("result")
            if not result or not result.get("entry_id"):
                continue
            # schemas 6-17 leave the text out; 4, 5 and 18 keep a short preview marked ``preview``
            if result.pop("preview", False) or "text" not in result:
                result.pop("text", None)   # (a preview: the entry's first ~1,000 characters replace it)
                cut.setdefault(result["entry_id"], []).append(result)
    return cut


FEW = 16
"""Up to this many entries are looked up by their ids' bytes; more, and every line is parsed."""

_PLAIN_ID = re.compile(r"[A-Za-z0-9_-]+")


def fill_results(cut: dict[str, list[dict[str, Any]]], path: Any) -> None:
    """Give each result in ``cut`` the first ``RESULT_LIMIT`` characters of its entry's content
    (the entry's last line in ``path`` wins, as it would in a read of the whole file)."""
    from magent.store.events import truncate
    from magent.store.files import read_jsonl
    from magent.trace.notes import RESULT_LIMIT

    if not cut:
        return
    few = len(cut) <= FEW and all(type(i) is str and _PLAIN_ID.fullmatch(i) for i in cut)
    for raw in (_entries_naming(path, list(cut)) if few else read_jsonl(path)):
        for result in cut.get(raw.get("id"), ()):
            result["text"] = truncate(raw.get("content") or "", RESULT_LIMIT)


def _entries_naming(path: Any, ids: list[str]) -> list[dict[str, Any]]:
    """The objects of the lines of ``path`` that may be the entries ``ids`` name, in file order,
    skipped as ``read_jsonl`` skips them, in one pass. A line magent writes starts with its
    entry's id, and only that is compared; any other line is parsed when an id appears in it
    (ids need no JSON escaping)."""
    try:
        data = read_bytes(path)
    except FileNotFoundError:
        return []
    wanted = {entry_id.encode() for entry_id in ids}
    out = []
    start = 0
    while (end := data.find(b"\n", start)) != -1:   # (no newline after it: the torn last line)
        if data.startswith(_ID_FIRST, start):
            first = start + len(_ID_FIRST)
            close = data.find(b'"', first, end)
            hit = close != -1 and data[first:close] in wanted
        else:
            hit = any(data.find(needle, start, end) != -1 for needle in wanted)
        if hit:
            try:
                obj = loads(data[start:end])
            except ValueError:
                obj = None
            if isinstance(obj, dict):
                out.append(obj)
        start = end + 1
    return out


_ID_FIRST = b'{"id":"'


def load_view(task_dir: "TaskDir", *, need_events: bool = False,
              entries: dict[str, dict[str, Any]] | None = None) -> TraceView:
    """The trace of the task in ``task_dir`` with notes on anything missing or damaged. ``need_events``
    builds from the events even when ``trace.json`` is current; ``entries`` saves a reread."""

    notes: list[str] = []
    task = read_task(task_dir, notes)
    live = task is not None and task.status in ("pending", "running") and not task_dir.lock().is_free()
    if not live:
        task_dir.clear_dead_lock()   # a killed run's lock files, held by nobody
    created = task.created_at if task is not None else None

    trace_notes: list[str] = []
    stored = None
    if not live and not need_events:
        stored = read_trace_file(task_dir, trace_notes)
        if stored is not None and not stored.get("_unusable"):
            return TraceView(task_dir=task_dir, task=task, partial=stored, unfilled=cut_results(stored), source="trace.json",
                             live=live, notes=notes)

    if os.path.exists(task_dir.events_file):
        from magent.store.events import read_events
        from magent.trace.build import build_trace_doc

        problems: list[str] = []
        built = build_trace_doc(task_dir.id, read_events(task_dir, problems, entries), created)
        if live:
            problems = [p for p in problems if "torn last line" not in p]  # a line being written
        elif not need_events:
            notes.extend(f"{n}; built from events.jsonl" for n in trace_notes)
        notes.extend(problems)
        return TraceView(task_dir=task_dir, task=task, partial=built.doc, source="events.jsonl", built=built,
                         live=live, notes=notes)

    notes.append("events.jsonl is missing")
    if stored is None and (live or need_events):
        stored = read_trace_file(task_dir, trace_notes)
    if stored is not None:
        stored.pop("_unusable", None)
        notes.extend(f"{n}; showing what it holds" for n in trace_notes)
        return TraceView(task_dir=task_dir, task=task, partial=stored, unfilled=cut_results(stored), source="trace.json",
                         live=live, notes=notes)
    notes.extend(trace_notes)
    return TraceView(task_dir=task_dir, task=task, partial={"task_id": task_dir.id, "steps": []}, source="nothing",
                     live=live, notes=notes)


def as_tracelog(view: TraceView) -> tuple[Any, str | None]:
    """``(TraceLog, None)``, or ``(the raw doc, why it is not a valid TraceLog)``."""
    from pydantic import ValidationError

    from magent.models import TraceLog

    doc = {k: v for k, v in view.doc.items() if not k.startswith("_")}
    doc.setdefault("task_id", view.task_dir.id)
    if view.task is not None:
        for key in ("created_at", "updated_at"):
            if getattr(view.task, key):
                doc.setdefault(key, getattr(view.task, key))
    try:
        return TraceLog.model_validate(doc), None
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(map(str, err["loc"]))
        return doc, f"the trace does not fit the TraceLog model at {where}: {err['msg']}"
