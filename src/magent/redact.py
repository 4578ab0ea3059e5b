"""Keeping secrets out of everything magent writes: values resolved from ``${VAR}`` and strings
shaped like API keys (or ``config/redaction.yaml``'s ``patterns``) are masked before events,
entries or traces reach disk. ``trace_tool_io: false`` leaves tool I/O out of events.jsonl and
trace.json; entries.jsonl keeps it, masked, since a resumed run needs it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple


class KeyShape(NamedTuple):
    """What is known of a built-in pattern's matches."""

    starts: tuple[str, ...]
    """The texts one of which starts every match."""
    shortest: int
    """The length of the shortest match."""


BUILT_IN = {
    # OpenAI / Anthropic style keys
    r"sk-[A-Za-z0-9_\-]{16,}": KeyShape(("sk-",), 3 + 16),
    # AWS access key ids
    r"AKIA[0-9A-Z]{16}": KeyShape(("AKIA",), 4 + 16),
    # GitHub tokens
    r"gh[pousr]_[A-Za-z0-9]{30,}": KeyShape(("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), 4 + 30),
    # Slack tokens
    r"xox[abprs]-[A-Za-z0-9\-]{10,}": KeyShape(("xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-"), 5 + 10),
    # Google API keys
    r"AIza[0-9A-Za-z_\-]{35}": KeyShape(("AIza",), 4 + 35),
    # bearer tokens in headers
    r"[Bb]earer\s+[A-Za-z0-9._\-]{16,}": KeyShape(("Bearer", "bearer"), 6 + 1 + 16),
}
"""The built-in API-key shapes."""
DEFAULT_PATTERNS = tuple(BUILT_IN)
MASK = "[REDACTED]"
TOOL_IO_OMITTED = "[left out: trace_tool_io is false in config/redaction.yaml]"
OMITTED_ARGS = {"_omitted": TOOL_IO_OMITTED}
_FIELDS = ("default_patterns", "patterns", "trace_tool_io")

_LEADING_FLAGS = re.compile(r"\(\?([aiLmsux]+)\)")


def alternative(pattern: str) -> str:
    """``pattern`` as one branch of the alternation all patterns are searched with at once: its
    leading flags (``(?i)...``) scoped to it (``(?i:...)``), and a newline before the closing
    parenthesis, which a verbose pattern's comment could swallow."""
    flags = ""
    while match := _LEADING_FLAGS.match(pattern):
        flags += match.group(1)
        pattern = pattern[match.end():]
    if not flags:
        return f"(?:{pattern})"
    return f"(?{flags}:{pattern}\n)" if "x" in flags else f"(?{flags}:{pattern})"


@dataclass(frozen=True)
class RedactionSettings:
    """The home's redaction settings (defaults when ``config/redaction.yaml`` is absent)."""

    default_patterns: bool = True
    patterns: tuple[str, ...] = ()
    trace_tool_io: bool = True
    path: Path | None = None

    @property
    def all_patterns(self) -> tuple[str, ...]:
        return (DEFAULT_PATTERNS if self.default_patterns else ()) + self.patterns


def settings_file(root: Path | None = None) -> Path:
    from magent import paths

    return paths.redaction_file(root)


def load_settings(root: Path | None = None) -> RedactionSettings:
    """Read ``config/redaction.yaml``. Raises ``ConfigError`` (file:line, field) when it is wrong."""
    path = settings_file(root)
    if not path.is_file():
        return RedactionSettings()
    from magent.config.yamlfile import load_file

    source = load_file(path)
    data = source.data
    if data is None:
        return RedactionSettings(path=path)
    if not isinstance(data, dict):
        raise source.error("expected a mapping with default_patterns, patterns, trace_tool_io")
    for key in data:
        if key not in _FIELDS:
            import difflib

            close = difflib.get_close_matches(str(key), _FIELDS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise source.error(f"unknown field{hint}; fields: {', '.join(_FIELDS)}", (key,))
    for key in ("default_patterns", "trace_tool_io"):
        if key in data and not isinstance(data[key], bool):
            raise source.error(f"must be true or false, not {data[key]!r}", (key,))
    patterns = data.get("patterns") or []
    if not isinstance(patterns, list):
        raise source.error("must be a list of regular expressions", ("patterns",))
    for i, pattern in enumerate(patterns):
        if not isinstance(pattern, str) or not pattern:
            raise source.error("must be a non-empty string (a regular expression)", ("patterns", i))
        try:
            compiled = re.compile(pattern)
            re.compile(alternative(pattern))
        except re.error as exc:
            raise source.error(f"not a regular expression: {exc}", ("patterns", i)) from None
        if compiled.fullmatch(""):
            raise source.error("matches the empty string, so it would mask nothing useful "
                               "and break every text", ("patterns", i))
    return RedactionSettings(default_patterns=data.get("default_patterns", True), patterns=tuple(patterns),
                             trace_tool_io=data.get("trace_tool_io", True), path=path)


_STRICT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False,
                           default=lambda o: _jsonable(o))
"""``Redactor.json_line``'s first try: compact, refusing what JSON has no form for."""


class Redactor:
    """Masks ``secrets`` (exact values) and ``patterns`` (regular expressions) in text and data.

    A text shorter than every secret and every pattern's shortest match is left as it is. The
    patterns are searched as one alternation, only in a text that holds a built-in pattern's
    start (``BUILT_IN``) or where a configured pattern finds a match. With ``tool_io=False``,
    ``event()`` also drops tool arguments and results from events."""

    def __init__(self, secrets: set[str] | None = None, patterns: tuple[str, ...] = DEFAULT_PATTERNS,
                 *, tool_io: bool = True):
        self.secrets: list[str] = []
        self.patterns_in_use = tuple(patterns)
        self.pattern = re.compile("|".join(alternative(p) for p in patterns)) if patterns else None
        """All the patterns in one; None when there are none."""
        self.starts = tuple(start for p in patterns if p in BUILT_IN for start in BUILT_IN[p].starts)
        """The texts one of which starts every match of a built-in pattern in use."""
        self.others = [re.compile(p) for p in patterns if p not in BUILT_IN]
        """The configured patterns: a text is searched for each of them on its own."""
        self._starts = _by_last_character(self.starts)
        # (a configured pattern's shortest match is taken to be 1 character: load_settings
        # refuses one that matches the empty string)
        self._shortest_match = min((BUILT_IN[p].shortest if p in BUILT_IN else 1 for p in patterns),
                                   default=float("inf"))
        self.shortest = self._shortest_match
        """The length of the shortest text that can hold a secret or a match: a shorter one (most
        names and values an event or a checkpoint carries) is left as it is, unsearched."""
        self.tool_io = tool_io
        self._needles: list[tuple[str, list[str]]] = []
        self.add(secrets or set())

    @classmethod
    def configured(cls, secrets: set[str] | None = None, root: Path | None = None) -> "Redactor":
        """A redactor with the home's settings (``config/redaction.yaml``)."""
        settings = load_settings(root)
        return cls(secrets, settings.all_patterns, tool_io=settings.trace_tool_io)

    def add(self, secrets: set[str]) -> None:
        """Mask these values too."""
        # Longest first, so a secret that holds another is replaced whole.
        self.secrets = sorted(set(self.secrets) | {s for s in secrets if len(s) >= 4}, key=len, reverse=True)
        self.shortest = min([self._shortest_match, *(len(s) for s in self.secrets)])
        # What json_line looks for: each secret and each start as JSON writes them.
        self._needles = _by_last_character([json.dumps(text, ensure_ascii=False)[1:-1]
                                            for text in [*self.secrets, *self.starts]])

    def text(self, value: str) -> str:
        """``value`` with its secrets and the patterns' matches masked."""
        if len(value) < self.shortest:
            return value
        return self.mask_patterns(self.mask_secrets(value))

    def mask_secrets(self, text: str) -> str:
        """``text`` with each secret replaced, the longest first."""
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        return text

    def mask_patterns(self, text: str) -> str:
        """``text`` with each match of the patterns replaced."""
        if self.pattern is not None and self.may_match(text):
            text = self.pattern.sub(MASK, text)
        return text

    def may_match(self, text: str) -> bool:
        """False only when no pattern can match ``text``."""
        return _holds_any(text, self._starts) or any(p.search(text) for p in self.others)

    def data(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):  # a name can be a secret too (--set sk-...=v)
            return {self.text(k) if isinstance(k, str) else k: self.data(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.data(v) for v in value]
        return value

    def json_line(self, doc: dict[str, Any]) -> bytes:
        """``doc`` masked as ``data`` masks it, as compact JSON.

        The JSON is made first and looked at whole: it holds a secret or a pattern's start
        whenever a field does, since JSON writes text character by character. Only then (or with
        a configured pattern) are the fields masked one by one."""
        if not self.others:
            try:
                line = _STRICT.encode(doc)
            except (ValueError, TypeError, RecursionError):  # NaN, infinity, keys JSON cannot have
                pass
            else:
                if not _holds_any(line, self._needles):
                    return line.encode()
        return json.dumps(_jsonable(self.data(doc)), ensure_ascii=False, separators=(",", ":")).encode()

    def event(self, doc: dict[str, Any]) -> dict[str, Any]:
        """An event as it may be written: masked, and without tool I/O when ``tool_io`` is off."""
        doc = self.data(doc)
        if not self.tool_io:
            strip_tool_io(doc)
        return doc


def _by_last_character(texts: list[str] | tuple[str, ...]) -> list[tuple[str, list[str]]]:
    """``texts`` grouped by their last character (for ``_holds_any``)."""
    groups: dict[str, list[str]] = {}
    for text in texts:
        groups.setdefault(text[-1], []).append(text)
    return list(groups.items())


def _holds_any(text: str, groups: list[tuple[str, list[str]]]) -> bool:
    """Whether ``text`` holds one of the grouped texts. A text without a group's last
    character holds none of the group: one character is found far quicker than a word."""
    for last, members in groups:
        if last in text:
            for member in members:
                if member in text:
                    return True
    return False


def strip_tool_io(doc: dict[str, Any]) -> dict[str, Any]:
    """Replace the tool arguments and results an event carries by a note (in place)."""
    kind = doc.get("type")
    if kind == "tool_call":
        doc["arguments"] = dict(OMITTED_ARGS)
    elif kind == "tool_result":
        doc["result"] = TOOL_IO_OMITTED
        for key in ("full_result", "data"):
            doc.pop(key, None)
        if doc.get("error"):
            doc["error"] = TOOL_IO_OMITTED
    elif kind == "llm_call":
        for call in (doc.get("response") or {}).get("tool_calls") or []:
            call["arguments"] = dict(OMITTED_ARGS)
            call.pop("raw_arguments", None)
    elif kind == "node_finished" and doc.get("kind") == "tool" and doc.get("output"):
        doc["output"] = TOOL_IO_OMITTED
    elif kind == "awaiting_human" and (doc.get("kind") in ("tool_approval", "tool_recovery", "tool_changed") or (
            doc.get("kind") == "guardrail" and (doc.get("details") or {}).get("source") == "tool_result")):
        details = doc.get("details") or {}
        if "arguments" in details:
            details["arguments"] = dict(OMITTED_ARGS)
        if doc.get("output"):
            doc["output"] = TOOL_IO_OMITTED
    return doc


def _jsonable(value: Any) -> Any:
    from pydantic_core import to_jsonable_python

    return to_jsonable_python(value)
