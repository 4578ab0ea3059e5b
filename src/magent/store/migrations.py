"""Named migrations of on-disk documents between schema versions.

Each migration takes a document of version N and returns one of version N+1.
Version 1 is the first format, so the table is empty; a format change adds a
function here and bumps ``models.SCHEMA_VERSION``.
"""

from __future__ import annotations

from typing import Any, Callable

from magent.models import SCHEMA_VERSION

Migration = Callable[[dict[str, Any]], dict[str, Any]]

MIGRATIONS: dict[tuple[str, int], Migration] = {}
"""(document kind, from version) → migration to the next version."""


def migrate(kind: str, doc: dict[str, Any]) -> dict[str, Any]:
    version = doc.get("schema_version", 1)
    while version < SCHEMA_VERSION:
        step = MIGRATIONS.get((kind, version))
        if step is None:
            raise ValueError(f"no migration for {kind} schema {version}")
        doc = step(doc)
        version = doc["schema_version"]
    return doc
