"""Keeping secrets out of everything magent writes.

Values resolved from ``${VAR}`` are replaced wherever they appear, and strings
shaped like API keys are masked, before events, entries or traces reach disk.
"""

from __future__ import annotations

import re
from typing import Any

DEFAULT_PATTERNS = (
    r"sk-[A-Za-z0-9_\-]{16,}",            # OpenAI / Anthropic style keys
    r"AKIA[0-9A-Z]{16}",                  # AWS access key ids
    r"gh[pousr]_[A-Za-z0-9]{30,}",        # GitHub tokens
    r"xox[abprs]-[A-Za-z0-9\-]{10,}",     # Slack tokens
    r"AIza[0-9A-Za-z_\-]{35}",            # Google API keys
    r"[Bb]earer\s+[A-Za-z0-9._\-]{16,}",  # bearer tokens in headers
)
MASK = "[REDACTED]"


class Redactor:
    def __init__(self, secrets: set[str] | None = None, patterns: tuple[str, ...] = DEFAULT_PATTERNS):
        # Longest first so a secret that contains another is replaced whole.
        self.secrets = sorted({s for s in (secrets or set()) if len(s) >= 4}, key=len, reverse=True)
        self._re = re.compile("|".join(f"(?:{p})" for p in patterns)) if patterns else None

    def add(self, secrets: set[str]) -> None:
        self.secrets = sorted(set(self.secrets) | {s for s in secrets if len(s) >= 4},
                              key=len, reverse=True)

    def text(self, value: str) -> str:
        for secret in self.secrets:
            if secret in value:
                value = value.replace(secret, MASK)
        if self._re is not None and self._re.search(value):
            value = self._re.sub(MASK, value)
        return value

    def data(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.data(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.data(v) for v in value]
        return value
