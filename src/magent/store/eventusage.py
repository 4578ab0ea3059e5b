"""A task's usage added up from its ``llm_call`` events, for a task whose task.json is not up
to date (running, or its process died: task.json gets its usage when a run stops).

A listing shows such tasks every time it runs, and a killed long run's events.jsonl can be
megabytes: ``count`` goes on from what an earlier listing counted (the row index keeps it), so
a listing reads only what was appended since. This module imports nothing of pydantic.
"""

from __future__ import annotations

import os
import stat
from typing import Any

from magent.errors import StoreError
from magent.store.files import loads, open_nofollow

_PARTS = ("cache_read", "cache_write", "reasoning", "estimated")
"""Counted apart, and shown only when not 0 (as trace.json shows them); ``estimated`` counts the
calls whose event says so (``true``: 1)."""
_FIELDS = ("input", "output", "cost", "calls", "unpriced", *_PARTS)

_CHECK = 32
"""Bytes before the counted end kept with a count: the file must still hold them there (an
events.jsonl rewritten in place, not only appended to, is counted again from its start)."""


def _zero() -> dict[str, Any]:
    return {"input": 0, "output": 0, "cost": 0.0, "calls": 0, "unpriced": 0}


def _add(usage: dict[str, Any], lines: bytes) -> None:
    """Add the answered model calls of ``lines`` (whole JSON Lines) to ``usage``, as the trace
    adds them up."""
    for line in lines.split(b"\n"):
        if b'"llm_call"' not in line:
            continue
        try:
            ev = loads(line)
        except ValueError:
            continue  # a damaged line
        if not isinstance(ev, dict) or ev.get("type") != "llm_call" or ev.get("error"):
            continue  # (a failed attempt answered nothing: it is not usage)
        usage["input"] += int(ev.get("tokens_in") or 0)
        usage["output"] += int(ev.get("tokens_out") or 0)
        usage["cost"] = round(usage["cost"] + float(ev.get("cost") or 0.0), 10)
        usage["calls"] += 1
        usage["unpriced"] += int(ev.get("cost") is None)
        for name in _PARTS:
            if ev.get(name):
                usage[name] = usage.get(name, 0) + int(ev[name])


def _usable(known: Any, st: os.stat_result) -> bool:
    """``known`` is a count this function made, of the file ``st`` describes or its beginning."""
    return (type(known) is list and len(known) == 3 + len(_FIELDS) and known[0] == st.st_ino
            and type(known[1]) is int and 0 < known[1] <= st.st_size and type(known[2]) is str
            and len(known[2]) <= 2 * _CHECK and type(known[5]) in (int, float)   # (cost)
            and all(type(known[i]) is int for i in (3, 4, *range(6, len(known)))))


def count(task_dir: str, known: Any = None) -> tuple[dict[str, Any], list[Any] | None]:
    """The usage in ``task_dir``'s events.jsonl, and what to pass as ``known`` next time: while the
    file is the one counted (same inode, as long or longer, the same bytes before the stop), only
    what follows is read. Only whole lines count; a missing file or a link counts nothing (no
    ``known``)."""
    usage = _zero()
    try:
        fd = open_nofollow(f"{task_dir}/events.jsonl", os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, StoreError):   # (missing; a link: never read through one)
        return usage, None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return usage, None
        start, before = 0, b""
        if _usable(known, st):
            try:
                check = bytes.fromhex(known[2])
            except ValueError:
                check = b""
            fh.seek(known[1] - len(check))
            if check and fh.read(len(check)) == check:
                start, before = known[1], check
                usage = {k: v for k, v in zip(_FIELDS, known[3:]) if v or k not in _PARTS}
            else:
                fh.seek(0)
        data = fh.read()
    whole = data.rfind(b"\n") + 1
    _add(usage, data[:whole])
    end = start + whole
    if end == 0:
        return usage, None
    return usage, [st.st_ino, end, (before + data[:whole])[-_CHECK:].hex(), *(usage.get(f, 0) for f in _FIELDS)]


def events_usage(task_dir: Any) -> dict[str, Any]:
    """Model calls, tokens and cost added up from the task's ``llm_call`` events (the whole file)."""
    return count(str(task_dir))[0]
