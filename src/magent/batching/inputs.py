"""Reading a batch's inputs file: JSON Lines or CSV, one task per row.

JSON Lines (``.jsonl``, ``.ndjson``, or anything not ending in ``.csv``): one object per line,
``{"task": "...", "set": {"priority": "high"}}``; keys ``set.KEY`` work too, and so does
any other key, taken as a State value (``{"task": "...", "ticket": "..."}`` sets
``metadata.ticket``). Blank lines and lines starting with ``#`` are skipped.

CSV (``.csv``): a header row naming the columns; ``task`` is the task text, every other
column (``priority`` or ``set.priority``) a State value, read as ``--set`` reads it
(``3`` is a number, ``[a, b]`` a list). An empty cell sets nothing.

A row is numbered by its place among the rows (1 = the first task) and keeps the file's
line number for messages.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from magent.errors import UsageError

TASK_KEY = "task"
SET_KEY = "set"


@dataclass
class Row:
    number: int
    """1-based position among the inputs' rows."""
    line: int
    """Line of the file it came from (for messages)."""
    task: str
    set: dict[str, Any] = field(default_factory=dict)
    """State values, as ``magent.run(set=...)`` takes them (dots nest)."""


@dataclass
class BadRow:
    number: int
    line: int
    error: str


@dataclass
class Inputs:
    path: Path
    format: str
    sha256: str
    rows: list[Row]
    bad: list[BadRow]


def read_inputs(path: Path) -> Inputs:
    """Every row of ``path``, good and bad (``UsageError`` when the file itself cannot be read)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"--inputs {path}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"--inputs {path}: is a directory, not a JSON Lines or CSV file") from None
    except OSError as exc:
        raise UsageError(f"--inputs {path}: cannot read it: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UsageError(f"--inputs {path}: not UTF-8 text (byte {exc.start})") from None
    fmt = "csv" if path.suffix.lower() == ".csv" else "jsonl"
    rows, bad = (_csv if fmt == "csv" else _jsonl)(path, text)
    if not rows and not bad:
        raise UsageError(f"--inputs {path}: no rows")
    return Inputs(path=path, format=fmt, sha256=hashlib.sha256(data).hexdigest(), rows=rows, bad=bad)


def _jsonl(path: Path, text: str) -> tuple[list[Row], list[BadRow]]:
    rows: list[Row] = []
    bad: list[BadRow] = []
    number = 0
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        number += 1
        where = f"{path.name}:{line_no}"
        try:
            obj = json.loads(line)
        except ValueError as exc:
            bad.append(BadRow(number, line_no, f"{where}: not valid JSON ({exc.msg} at column {exc.colno})"))
            continue
        if not isinstance(obj, dict):
            bad.append(BadRow(number, line_no, f"{where}: a row is a JSON object with a \"task\" key, "
                                               f"not {type(obj).__name__}"))
            continue
        rows_or_bad = _row(obj, number, line_no, where)
        (rows if isinstance(rows_or_bad, Row) else bad).append(rows_or_bad)  # type: ignore[arg-type]
    return rows, bad


def _csv(path: Path, text: str) -> tuple[list[Row], list[BadRow]]:
    from magent.engine.inputs import parse_sets

    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        return [], []
    except csv.Error as exc:
        raise UsageError(f"--inputs {path.name}:1: not a CSV header ({exc})") from None
    header = [h.strip() for h in header]
    if TASK_KEY not in header:
        raise UsageError(f"--inputs {path.name}:1: the header has no \"task\" column "
                         f"(columns: {', '.join(header) or 'none'})")
    rows: list[Row] = []
    bad: list[BadRow] = []
    number = 0
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            number += 1
            bad.append(BadRow(number, reader.line_num, f"{path.name}:{reader.line_num}: not valid CSV ({exc})"))
            continue
        if not any(c.strip() for c in cells):
            continue
        number += 1
        line_no = reader.line_num
        where = f"{path.name}:{line_no}"
        if len(cells) != len(header):
            bad.append(BadRow(number, line_no, f"{where}: {len(cells)} cells, the header has {len(header)}"))
            continue
        values = dict(zip(header, cells))
        task = values.pop(TASK_KEY)
        pairs = [f"{_key(k)}={v}" for k, v in values.items() if v.strip() and k]
        try:
            sets = parse_sets(pairs)
        except UsageError as exc:
            bad.append(BadRow(number, line_no, f"{where}: {exc}"))
            continue
        item = _row({TASK_KEY: task}, number, line_no, where)
        if isinstance(item, Row):
            item.set = set_values(sets)
        (rows if isinstance(item, Row) else bad).append(item)  # type: ignore[arg-type]
    return rows, bad


def _key(column: str) -> str:
    return column[len(SET_KEY) + 1:] if column.startswith(SET_KEY + ".") else column


def set_values(updates: dict[str, Any]) -> dict[str, Any]:
    """``parse_sets``'s State updates back into ``set=`` form (metadata keys at the top)."""
    out = {k: v for k, v in updates.items() if k != "metadata"}
    out.update(updates.get("metadata") or {})
    return out


def _row(obj: dict[str, Any], number: int, line: int, where: str) -> Row | BadRow:
    task = obj.get(TASK_KEY)
    if not isinstance(task, str) or not task.strip():
        what = "no \"task\"" if task is None else "an empty \"task\"" if isinstance(task, str) \
            else f"a \"task\" that is {type(task).__name__}, not text"
        return BadRow(number, line, f"{where}: the row has {what}")
    values: dict[str, Any] = {}
    given = obj.get(SET_KEY)
    if given is not None and not isinstance(given, dict):
        return BadRow(number, line, f"{where}: \"set\" must be an object of State values")
    values.update(given or {})
    for key, value in obj.items():
        if key in (TASK_KEY, SET_KEY):
            continue
        values[_key(key)] = value
    return Row(number=number, line=line, task=task, set=values)


def required_keys(graph: Any) -> dict[str, str]:
    """``metadata`` keys a tool node passes as an argument (``$metadata.ticket``) → that node:
    a row without the value would fail at that node, so it is refused before anything runs."""
    from magent.engine.statekeys import READ_BY_MAGENT, Reads, collect_references

    out: dict[str, str] = {}
    for name, node in graph.nodes.items():
        if node.kind != "tool":
            continue
        reads = Reads()
        collect_references(node.config.model_dump(), reads)
        for key in sorted(reads.metadata - READ_BY_MAGENT):
            out.setdefault(key, name)
    return out


def missing_values(row: Row, required: dict[str, str], given: dict[str, Any]) -> str | None:
    """Why ``row`` cannot run: a required value neither it nor ``--set`` gives (None if it can)."""
    for key, node in required.items():
        if _has(row.set, key) or _has(given, key):
            continue
        return (f"row {row.number} (line {row.line}) has no value for {key!r}, which node {node!r} "
                f"passes to its tool ($metadata.{key}); add a \"{key}\" field or column, or --set {key}=VALUE")
    return None


def _has(values: dict[str, Any], key: str) -> bool:
    if key in values:
        return values[key] is not None and values[key] != ""
    meta = values.get("metadata")
    if isinstance(meta, dict) and key in meta:
        return True
    return any(k.split(".", 1)[0] == key for k in values)
