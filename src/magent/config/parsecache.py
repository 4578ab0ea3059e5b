"""Big YAML files (a scripted model's long script) parsed once for every process: their data as
JSON in ``$MAGENT_HOME/cache/parsed/SHA.json``, keyed by the file's hash so nothing goes stale.

Only data JSON gives back exactly is kept, as written (``${VAR}`` unresolved, so no environment
value reaches the cache). A missing, damaged or foreign entry only means parsing again; at most
``KEEP`` entries are kept, the oldest go first."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from magent import paths
from magent.store.files import write_cache

VERSION = 1
"""Bumped whenever what the YAML reader builds changes: entries of another version are ignored."""
MIN_BYTES = 32 * 1024
"""Files smaller than this are parsed every time: for them the cache would not be quicker."""
KEEP = 16


def _entry(data: bytes) -> Path:
    return paths.home() / "cache" / "parsed" / f"{hashlib.sha256(data).hexdigest()}.json"


def get(data: bytes) -> bytes | None:
    """The kept entry of the file whose bytes are ``data`` (for ``raw``), or None."""
    if len(data) < MIN_BYTES:
        return None
    try:
        fd = os.open(_entry(data), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            return fh.read()
    except OSError:
        return None


def raw(entry: bytes) -> tuple[bool, Any]:
    """``(True, data)`` from an entry ``get`` returned; ``(False, None)`` when it is damaged or
    of another version. Each call builds new objects."""
    try:
        doc = json.loads(entry)
    except ValueError:
        return False, None
    if isinstance(doc, dict) and doc.get("version") == VERSION and "raw" in doc:
        return True, doc["raw"]
    return False, None


def put(data: bytes, raw: Any) -> None:
    """Keep ``raw`` as the data built from ``data`` when JSON holds it exactly; a home that
    cannot take it (missing, read-only, full) goes without."""
    if len(data) < MIN_BYTES or not _json_exact(raw, 0):
        return
    path = _entry(data)
    if write_cache(path, json.dumps({"version": VERSION, "raw": raw}, ensure_ascii=False).encode(), folders=2):
        _trim(path.parent)


def _json_exact(value: Any, depth: int) -> bool:
    """True when ``json.loads(json.dumps(value)) == value`` with the same types throughout."""
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return True
    if depth > 200:
        return False
    if kind is list:
        return all(_json_exact(v, depth + 1) for v in value)
    if kind is dict:
        return all(type(k) is str and _json_exact(v, depth + 1) for k, v in value.items())
    return False


def _trim(folder: Path) -> None:
    entries = sorted((item.stat(follow_symlinks=False).st_mtime_ns, item.path) for item in os.scandir(folder)
                     if item.name.endswith(".json") and item.is_file(follow_symlinks=False))
    for _, old in entries[:-KEEP]:
        with contextlib.suppress(OSError):
            os.unlink(old)
