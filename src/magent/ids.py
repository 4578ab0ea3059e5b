"""Id and clock factories, as module functions so tests can make them deterministic."""

from __future__ import annotations

import os
import re
from datetime import datetime, timezone
from typing import Any

UUID4_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


def new_id() -> str:
    """A fresh UUID v4 as a lowercase string, as ``str(uuid.uuid4())`` gives, without the object."""
    raw = bytearray(os.urandom(16))
    raw[6] = raw[6] & 0x0F | 0x40  # version 4
    raw[8] = raw[8] & 0x3F | 0x80  # variant RFC 4122
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def now() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(timezone.utc)


def is_uuid4(value: str) -> bool:
    return UUID4_RE.fullmatch(value) is not None  # (match with $ would let a trailing newline through)


def parse_time(value: Any) -> datetime | None:
    """A stored timestamp as an aware datetime, or None when it is not one."""
    if not isinstance(value, str):
        return None
    # Python 3.10's fromisoformat does not accept the "Z" pydantic writes.
    text = value[:-1] + "+00:00" if value[-1:] in ("Z", "z") else value
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)
