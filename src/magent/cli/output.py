"""Small helpers the commands share for plain and JSON output (no rich here)."""

from __future__ import annotations

import json
import sys
from typing import Any


def print_json(obj: Any) -> None:
    """Pretty JSON on stdout; pydantic models are dumped in JSON mode."""
    if hasattr(obj, "model_dump"):
        obj = obj.model_dump(mode="json")
    elif isinstance(obj, list):
        obj = [o.model_dump(mode="json") if hasattr(o, "model_dump") else o for o in obj]
    sys.stdout.write(json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")


def warn(message: str) -> None:
    print(f"magent: warning: {message}", file=sys.stderr)
