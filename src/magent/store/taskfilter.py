"""What ``magent tasks list``'s options keep (``TaskFilter``) and how ``--since`` is read.

Like the listing (``store.listing``, which re-exports these names), it imports nothing of
pydantic or ``magent.models``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from magent.ids import parse_time
from magent.store.files import loads, read_bytes

if TYPE_CHECKING:
    from magent.store.listing import TaskRow


@dataclass(frozen=True)
class TaskFilter:
    """What ``magent tasks list`` keeps; every condition given must hold."""

    status: str | None = None
    search: str | None = None
    """Case-insensitive text to find in the task's text or its result."""
    tags: tuple[str, ...] = ()
    """Tags the task must all have."""
    workflow: str | None = None
    model: str | None = None
    """A model name, with or without its provider (``gpt-4o-mini`` finds ``openai/gpt-4o-mini``),
    or a shell pattern (``openai/*``)."""
    since: datetime | None = None
    """Created at or after this moment."""

    def matches(self, row: TaskRow) -> bool:
        if self.status is not None and row.status != self.status:
            return False
        if self.workflow is not None and row.workflow != self.workflow:
            return False
        if self.since is not None and row.created_at < self.since:
            return False
        if self.tags and not set(self.tags) <= set(row.tags):
            return False
        if self.search:
            needle = self.search.casefold()
            haystack = [row.description, row.doc.get("result") or ""]
            if not any(needle in str(text).casefold() for text in haystack):
                return False
        if self.model is not None and not any(_model_matches(self.model, m) for m in row.models) \
                and not any(_model_matches(self.model, m) for m in called_models(row)):
            return False
        return True


def called_models(row: TaskRow) -> frozenset[str]:
    """The models the task actually called: the per-model usage of its latest readable
    checkpoint (``provider/model`` keys: a fallback that answered, a judge's model, a model a
    run was switched to). Read only when its configuration names no model a filter wants."""
    if row.folder is None:
        return frozenset()
    try:
        names = sorted((e.name for e in os.scandir(row.folder)
                        if e.name.startswith("checkpoint_") and e.name.endswith(".json")), reverse=True)
    except OSError:
        return frozenset()
    for name in names[:3]:   # a damaged latest one: the one before it has the usage up to there
        try:
            doc = loads(read_bytes(os.path.join(row.folder, name)))
        except (OSError, ValueError):
            continue
        usage = doc.get("usage_by_model") if isinstance(doc, dict) else None
        if isinstance(usage, dict):
            return frozenset(str(k) for k in usage)
    return frozenset()


def _model_matches(wanted: str, model: str) -> bool:
    from fnmatch import fnmatchcase

    bare = model.split("/", 1)[-1]
    return wanted in (model, bare) or fnmatchcase(model, wanted) or fnmatchcase(bare, wanted)


def parse_since(text: str) -> datetime:
    """``--since``: an age (``30m``, ``2h``, ``3d``, ``1w``) or a date or time (``2026-11-20``,
    ``2026-11-20T09:00``, read as UTC unless it names its zone). Raises ``ValueError``."""
    import re
    from datetime import timedelta

    now = datetime.now(timezone.utc)
    m = re.fullmatch(r"\s*(\d+)\s*(s|m|h|d|w)\s*", text)
    if m:
        unit = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}[m.group(2)]
        return now - timedelta(**{unit: int(m.group(1))})

    when = parse_time(text.strip())
    if when is None:
        raise ValueError(f"{text!r} is neither an age (30m, 2h, 3d, 1w) nor a date (2026-11-20)")
    return when
