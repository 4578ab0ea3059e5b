"""Id and clock factories.

Module functions rather than inline ``uuid4()``/``now()`` calls so tests can
make them deterministic by monkeypatching one place.
"""

from __future__ import annotations

import re
import uuid
from datetime import datetime, timezone

UUID4_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def new_id() -> str:
    """A fresh UUID v4 as a lowercase string."""
    return str(uuid.uuid4())


def now() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(timezone.utc)


def is_uuid4(value: str) -> bool:
    return bool(UUID4_RE.match(value))
