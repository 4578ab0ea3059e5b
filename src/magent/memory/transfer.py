"""Export and import of memories as JSON Lines, without vectors (an import embeds again). An
import checks every line before storing any, and names the first bad one."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterable, Iterator

from pydantic import ValidationError

from magent.errors import UsageError
from magent.memory.service import Memory
from magent.models.base import problem
from magent.models.memory import MemoryEntry


def export_lines(entries: Iterable[MemoryEntry]) -> Iterator[str]:
    for entry in entries:
        yield json.dumps(entry.model_dump(mode="json"), ensure_ascii=False) + "\n"


def read_lines(stream: IO[str], shown: str) -> list[MemoryEntry]:
    """Parse every line of ``stream`` (blank lines skipped); ``UsageError`` at the first bad one."""
    entries: list[MemoryEntry] = []
    for number, line in enumerate(stream, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError as exc:
            raise UsageError(f"{shown}:{number}: not JSON ({exc.msg}); nothing was imported") from None
        if not isinstance(data, dict):
            raise UsageError(f"{shown}:{number}: expected a JSON object (a memory); nothing was imported")
        try:
            entries.append(MemoryEntry.model_validate(data))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(line)"
            raise UsageError(f"{shown}:{number}: {where}: {problem(first, MemoryEntry)}; nothing was imported") from None
    return entries


@dataclass
class ImportReport:
    read: int
    imported: int
    skipped: int
    """Memories whose id was already stored (left as they are)."""

    def as_dict(self) -> dict[str, int]:
        return {"read": self.read, "imported": self.imported, "skipped": self.skipped}


def import_file(memory: Memory, path: Path | None, stream: IO[str] | None = None) -> ImportReport:
    """Import a JSON Lines file (``path``) or ``stream`` (stdin) into ``memory``."""
    if path is not None:
        try:
            with open(path, encoding="utf-8") as fh:
                entries = read_lines(fh, str(path))
        except FileNotFoundError:
            raise UsageError(f"{path}: no such file") from None
        except UnicodeDecodeError as exc:
            raise UsageError(f"{path}: not UTF-8 text ({exc.reason}); nothing was imported") from None
        except IsADirectoryError:
            raise UsageError(f"{path}: is a directory") from None
        except OSError as exc:  # no permission, a link that leads back to itself...
            raise UsageError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    else:
        assert stream is not None
        entries = read_lines(stream, "<stdin>")
    results = memory.add_entries(entries) if entries else []
    imported = sum(1 for _, stored in results if stored)
    return ImportReport(read=len(entries), imported=imported, skipped=len(entries) - imported)
