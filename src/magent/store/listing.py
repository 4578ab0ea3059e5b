"""Listing tasks fast: each task.json read as plain JSON, without pydantic.

``magent tasks list`` over a thousand tasks has to finish in well under half a
second, and importing the models and validating every task.json costs more than
everything else together. A ``TaskRow`` checks the fields it shows and that the
file belongs to its directory; wherever a task is *used* (``tasks show``,
``resume``...), ``TaskDir.load_task`` validates the whole document.

This module imports nothing of pydantic or ``magent.models``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from operator import attrgetter
from pathlib import Path
from typing import Any

from magent import paths
from magent.errors import StoreError, TaskNotFoundError
from magent.ids import parse_time
from magent.schema import check_readable as check_readable
from magent.store.files import loads, read_bytes
from magent.store.taskfilter import TaskFilter as TaskFilter, parse_since as parse_since
from magent.store.taskdirs import task_ids
from magent.store.taskindex import RowIndex, TaskIndex, ident_of, stat_of
from magent.vocabulary import TASK_STATUSES
from magent.vocabulary import UNSETTLED as UNSETTLED, shown_status as shown_status



def is_live(locks_dir: "Path | str", task_id: str) -> bool:
    """A process holds the task's lock now (probed read-only)."""
    from magent.store.locks import is_held

    return is_held(f"{locks_dir}/{task_id}.lock")


@dataclass(frozen=True, init=False)
class TaskRow:
    """One task as ``magent tasks list`` shows it."""

    id: str
    status: str
    workflow: str
    description: str
    created_at: datetime
    calls: int
    """Model calls so far (``usage.calls``; from the events while the task is not settled)."""
    cost: float
    unpriced: int = 0
    """Model calls whose cost litellm could not tell (``cost`` leaves them out)."""
    tokens: int = 0
    """Input and output tokens of all its model calls."""
    models: frozenset[str] = frozenset()
    """The models its configuration names (agents, fallbacks, judges, ``--model``, the default)."""
    folder: str | None = None
    """The task's directory (where ``called_models`` reads its usage); a plain string, as
    ten thousand ``Path`` objects would cost a listing more than the rest of a row."""
    tags: tuple[str, ...] = ()
    """The task's tags."""
    _source: Any = field(default=None, repr=False, compare=False)
    """The document (``doc``), or where to read it from: ``(_Documents, index entry, changes)``."""

    def __init__(self, id: str, status: str, workflow: str, description: str, created_at: datetime,
                 calls: int, cost: float, unpriced: int = 0, tokens: int = 0,
                 models: frozenset[str] = frozenset(), folder: str | None = None, tags: tuple[str, ...] = (),
                 _source: Any = None) -> None:
        # Written out: a frozen dataclass's own __init__ sets each field through
        # object.__setattr__, 3 µs a row, as much as the rest of making a row from the index.
        self.__dict__.update(id=id, status=status, workflow=workflow, description=description,
                             created_at=created_at, calls=calls, cost=cost, unpriced=unpriced, tokens=tokens,
                             models=models, folder=folder, tags=tags, _source=_source)

    @property
    def doc(self) -> dict[str, Any]:
        """task.json as stored, without the (large) ``config_snapshot``; for a task not
        settled, with the status and usage the row shows. A row the listing took from its
        index reads it when first asked (from the document index while that holds the same
        task.json, else from the file: a task changed since the listing gives its new one)."""
        source = self._source
        if type(source) is not dict:
            source = {} if source is None else source[0].load(self, source[1], source[2])
            object.__setattr__(self, "_source", source)
        doc: dict[str, Any] = source
        return doc

    def shown_as(self, status: str, usage: dict[str, Any]) -> "TaskRow":
        """This row of a task that is not settled, with the status and usage to show."""
        source, changes = self._source, {"status": status, "usage": usage}
        if type(source) is dict:
            source.update(changes)
        elif source is not None:
            source = (source[0], source[1], changes)
        return TaskRow(self.id, status, self.workflow, self.description, self.created_at, usage["calls"],
                       usage["cost"], usage["unpriced"], usage["input"] + usage["output"], self.models,
                       self.folder, self.tags, source)


class _Documents:
    """Where the rows of one listing read their ``doc`` when it was left out: the document
    index (``cache/tasks.json``, loaded on the first such read) while it holds the task.json
    the row was made from, else the file."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.index: TaskIndex | None = None

    def load(self, row: TaskRow, entry: list[Any], changes: dict[str, Any] | None) -> dict[str, Any]:
        """``row``'s document; ``entry`` is the row index's entry it was made from."""
        if self.index is None:
            self.index = TaskIndex(self.root)
        cached = self.index.get(row.id, entry[:4])
        doc = None
        if cached is not None:
            try:
                row_from_doc(row.folder or "", row.id, cached[0], frozenset())   # as a listing checks it
                doc = cached[0]
            except StoreError:
                pass   # an index someone wrote by hand: the file says what it holds
        if doc is None:
            doc = read_doc(f"{row.folder}/task.json", row.id)
            doc.pop("config_snapshot", None)
        if changes:
            doc.update(changes)
        return doc


def models_in(snapshot: Any) -> frozenset[str]:
    """The models a task's config snapshot names: every ``llm_config``'s ``model`` and
    ``fallback_model``, the ``--model`` override and the default model it started with."""
    found: set[str] = set()
    stack = [snapshot]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            config = node.get("llm_config")
            if isinstance(config, dict):
                found.update(v for k, v in config.items() if k in ("model", "fallback_model") and isinstance(v, str))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    if isinstance(snapshot, dict):
        for section, key in (("options", "model_override"), ("defaults", "model")):
            value = (snapshot.get(section) or {}).get(key) if isinstance(snapshot.get(section), dict) else None
            if isinstance(value, str):
                found.add(value)
    return frozenset(found)


def read_row(tasks_dir: Path, task_id: str, index: RowIndex | None = None, docs: TaskIndex | None = None,
             lazy: _Documents | None = None) -> TaskRow:
    """The row of task ``task_id``. Raises ``TaskNotFoundError`` or ``StoreError`` naming the task.

    A task.json that ``index`` (rows) or ``docs`` (documents: used instead of ``index`` when
    given, for rows that hold their document) holds unchanged is not read again, and one read
    is put in them. A row from ``index`` reads its document from ``lazy`` when asked.
    """
    folder = f"{tasks_dir}/{task_id}"   # (task_id is a UUID: no separator, no ..)
    path = f"{folder}/task.json"
    st = stat_of(path) if index is not None or docs is not None else None
    if st is not None:
        if docs is not None:
            cached = docs.get(task_id, ident_of(st))
            if cached is not None:
                try:
                    row = row_from_doc(folder, task_id, cached[0], frozenset(str(m) for m in cached[1]))
                except StoreError:
                    pass   # an index someone wrote by hand: the file itself says what is wrong
                else:
                    if index is not None and index.get(task_id, st) is None:
                        index.put(task_id, ident_of(st), row_values(row))
                    return row
        elif index is not None:
            entry = index.get(task_id, st)
            if entry is not None:
                made = row_from_entry(folder, task_id, entry, lazy)
                if made is not None:
                    return made
    doc = read_doc(path, task_id)
    models = models_in(doc.pop("config_snapshot", None))
    row = row_from_doc(folder, task_id, doc, models)
    if st is not None:   # only a document that made a row
        if index is not None:
            index.put(task_id, ident_of(st), row_values(row))
        if docs is not None:
            docs.put(task_id, ident_of(st), doc, models)
    return row


def read_doc(path: str, task_id: str) -> dict[str, Any]:
    """task.json of task ``task_id`` at ``path``, checked readable by this magent."""
    try:
        doc = loads(read_bytes(path))
    except FileNotFoundError:
        raise TaskNotFoundError(f"task {task_id}: task.json is missing") from None
    except (ValueError, OSError) as exc:
        raise StoreError(f"task {task_id}: task.json is unreadable ({exc})") from None
    check_readable(task_id, doc)
    assert isinstance(doc, dict)
    return doc


def row_values(row: TaskRow) -> list[Any]:
    """What the row index keeps of ``row`` (after its task.json's identity)."""
    return [row.status, row.workflow, row.description, row.created_at.isoformat(), row.calls, row.cost,
            row.unpriced, row.tokens, sorted(row.models), list(row.tags)]


def row_from_entry(folder: str, task_id: str, entry: list[Any], lazy: _Documents | None) -> TaskRow | None:
    """The row a row index entry holds, or None when one of its values is not what
    ``row_values`` writes (an index someone edited: the file is read instead)."""
    try:
        _, _, _, _, status, workflow, description, created, calls, cost, unpriced, tokens, models, tags = entry
        created_at = datetime.fromisoformat(created)
        "".join(models), "".join(tags)   # (TypeError unless each is a string: ten times quicker than all())
    except (TypeError, ValueError):
        return None
    if (status not in TASK_STATUSES or type(workflow) is not str or type(description) is not str
            or created_at.tzinfo is None or type(calls) is not int or type(cost) is not float
            or type(unpriced) is not int or type(tokens) is not int or type(models) is not list
            or type(tags) is not list):
        return None
    return TaskRow(task_id, status, workflow, description, created_at, calls, cost, unpriced, tokens,
                   frozenset(models), folder, tuple(tags), None if lazy is None else (lazy, entry, None))


def row_from_doc(folder: str, task_id: str, doc: dict[str, Any], models: frozenset[str]) -> TaskRow:
    """The row a task.json document (without its config snapshot) in ``folder`` makes, every
    field checked."""

    def bad(what: str) -> StoreError:
        return StoreError(f"task {task_id}: task.json: {what}")

    if doc.get("id") != task_id:
        raise StoreError(f"task {task_id}: task.json names another task ({doc.get('id')})")
    status = doc.get("status")
    if status not in TASK_STATUSES:
        raise bad(f"status: {status!r} is not a status")
    for name in ("workflow", "description"):
        if not isinstance(doc.get(name), str):
            raise bad(f"{name}: not a string")
    created = parse_time(doc.get("created_at"))
    if created is None:
        raise bad(f"created_at: {doc.get('created_at')!r} is not a timestamp")
    usage = doc.get("usage") or {}
    cost = usage.get("cost", 0.0) if isinstance(usage, dict) else None
    if type(cost) not in (int, float):
        raise bad(f"usage.cost: {cost!r} is not a number")
    calls = usage.get("calls", 0)
    if type(calls) is not int:
        raise bad(f"usage.calls: {calls!r} is not a whole number")
    unpriced = usage.get("unpriced", 0)
    if type(unpriced) is not int:
        raise bad(f"usage.unpriced: {unpriced!r} is not a whole number")
    counted = [usage.get(k, 0) for k in ("input", "output")]
    tokens = sum(n for n in counted if type(n) is int)
    tags = doc.get("tags")
    return TaskRow(id=task_id, status=status, workflow=doc["workflow"],
                   description=doc["description"], created_at=created, calls=calls,
                   cost=float(cost), unpriced=unpriced, tokens=tokens, models=models, folder=folder,
                   tags=tuple(t for t in tags if type(t) is str) if type(tags) is list else (), _source=doc)


def list_rows(root: Path | None = None, status: str | None = None,
              problems: list[str] | None = None, where: TaskFilter | None = None,
              documents: bool = False) -> list[TaskRow]:
    """Rows of every task under the home ``root`` (default ``$MAGENT_HOME``), newest first.

    Statuses are as shown (``shown_status``: a dead run is ``interrupted``), in the rows
    and their documents; ``status`` keeps only tasks with that status, ``where`` only those
    it matches. A task whose task.json cannot be read is left out and described in
    ``problems``. ``documents`` reads every row's ``doc`` now (a ``where`` with a search
    text does too) rather than when it is first asked for.
    """
    tasks_dir = paths.tasks_dir(root)
    locks_dir = paths.locks_dir(root)
    lock_files = _lock_files(locks_dir)
    if where == TaskFilter():
        where = None   # (the CLI passes one, empty unless an option was given)
    home = root or paths.home()
    index = RowIndex(home)
    docs = TaskIndex(home) if documents or (where is not None and where.search) else None
    lazy = _Documents(home) if docs is None else None
    present = task_ids(tasks_dir, problems)
    found: list[TaskRow] = []
    unlocked: list[int] = []
    tasks_path = str(tasks_dir)
    for task_id in present:
        row = None
        if docs is None:   # read_row's usual case, written out: ten thousand calls fewer
            folder = f"{tasks_path}/{task_id}"
            entry = index.entry(task_id, f"{folder}/task.json")
            if entry is not None:
                row = row_from_entry(folder, task_id, entry, lazy)
        if row is None:
            try:
                row = read_row(tasks_dir, task_id, index, docs, lazy)
            except (StoreError, TaskNotFoundError) as exc:
                if problems is not None:
                    problems.append(str(exc))
                continue
        if lock_files and f"{task_id}.lock" in lock_files:
            live = is_live(locks_dir, task_id)
            if not live:
                from magent.store.locks import clear_dead

                clear_dead(locks_dir, task_id, writes_in=tasks_dir / task_id)   # a killed run's: nobody holds them
            if row.status in UNSETTLED:
                row = row.shown_as(shown_status(row.status, live), index.usage_of(tasks_path, task_id))
        elif row.status in UNSETTLED:
            unlocked.append(len(found))   # no lock file, so no run: unless one started since (below)
        found.append(row)
    if unlocked:
        # A run takes its task's lock before it writes the status read above, so a run that
        # started since the lock files were listed has its lock file in a second look. Probing
        # only those spares every other pending or running task (each one a run that died) a
        # probe that cannot find a holder.
        lock_files = _lock_files(locks_dir)
        for n in unlocked:
            row = found[n]
            live = f"{row.id}.lock" in lock_files and is_live(locks_dir, row.id)
            found[n] = row.shown_as(shown_status(row.status, live), index.usage_of(tasks_path, row.id))
    rows = [r for r in found if (status is None or r.status == status) and (where is None or where.matches(r))]
    kept = set(present)
    for cache in (index, docs):
        if cache is not None:
            cache.keep_only(kept)
            cache.save()
    rows.sort(key=attrgetter("created_at"), reverse=True)
    return rows


def _lock_files(locks_dir: Path) -> set[str]:
    try:
        return {n for n in os.listdir(locks_dir) if n.endswith(".lock")}
    except OSError:
        return set()
