"""Keeping secrets out of everything magent writes.

Values resolved from ``${VAR}`` are replaced wherever they appear, and strings
shaped like API keys are masked, before events, entries or traces reach disk.

What is masked can be configured in ``$MAGENT_HOME/config/redaction.yaml``::

    default_patterns: true   # the built-in API-key shapes below
    patterns:                # more regular expressions to mask
      - 'ACME-[0-9]{8}'
    trace_tool_io: true      # false: tool arguments and results are left out of
                             # events.jsonl and trace.json (seed 004's flag)

The conversation (``entries.jsonl``) keeps tool results whatever
``trace_tool_io`` says, with secrets masked: a resumed run needs them.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
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
TOOL_IO_OMITTED = "[left out: trace_tool_io is false in config/redaction.yaml]"
OMITTED_ARGS = {"_omitted": TOOL_IO_OMITTED}
SETTINGS_FILE = "redaction.yaml"
_FIELDS = ("default_patterns", "patterns", "trace_tool_io")

_LEADING_FLAGS = re.compile(r"\(\?([aiLmsux]+)\)")


def alternative(pattern: str) -> str:
    """``pattern`` as one branch of the alternation all patterns are searched with at once.

    Flags a pattern sets for itself at its start (``(?i)acme-[0-9]+``) would apply to the whole
    alternation, which ``re`` refuses; they are scoped to the pattern instead (``(?i:acme-[0-9]+)``).
    A verbose pattern's comment could swallow the closing parenthesis: a newline ends it first."""
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

    return paths.config_dir(root) / SETTINGS_FILE


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


_REMEMBERED = 64
"""Texts this long or longer are remembered once masked (shorter ones cost less to scan than to look up)."""
_REMEMBERED_MAX = 65_536
"""Longer texts are rare and would make the memory large: they are scanned each time."""
_SEEN_LIMIT = 256


_STRICT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False,
                           default=lambda o: _jsonable(o))
"""``Redactor.json_line``'s first try, made once: compact, and refusing what JSON has no form for
(a document that refers to itself fails with ``RecursionError`` instead of being looked for)."""

class Redactor:
    """Masks ``secrets`` (exact values) and ``patterns`` (regular expressions) in text and data.

    With ``tool_io=False``, ``event()`` also drops tool arguments and results from events.
    """

    def __init__(self, secrets: set[str] | None = None, patterns: tuple[str, ...] = DEFAULT_PATTERNS,
                 *, tool_io: bool = True):
        # Longest first so a secret that contains another is replaced whole.
        self.secrets = sorted({s for s in (secrets or set()) if len(s) >= 4}, key=len, reverse=True)
        self.patterns_in_use = tuple(patterns)
        self._re = re.compile("|".join(alternative(p) for p in patterns)) if patterns else None
        self._screen = _Screen(patterns)
        self.tool_io = tool_io
        self._floor = self._shortest()
        self._seen: dict[str, str] = {}
        """Texts already masked, with their masked form: the same text reaches disk several
        times (an entry, its event, the trace, each checkpoint's metadata), so it is scanned
        once, when it is first written."""
        self._needles: list[tuple[str, list[str]]] | None = self._json_needles()

    @classmethod
    def configured(cls, secrets: set[str] | None = None, root: Path | None = None) -> "Redactor":
        """A redactor with the home's settings (``config/redaction.yaml``)."""
        settings = load_settings(root)
        return cls(secrets, settings.all_patterns, tool_io=settings.trace_tool_io)

    def add(self, secrets: set[str]) -> None:
        self.secrets = sorted(set(self.secrets) | {s for s in secrets if len(s) >= 4},
                              key=len, reverse=True)
        self._seen.clear()
        self._floor = self._shortest()
        self._needles = self._json_needles()

    def _shortest(self) -> float:
        """The length of the shortest text that can hold something to mask (most texts an
        event carries, its field names first, are shorter and pass as they are)."""
        floors = [len(self.secrets[-1])] if self.secrets else []
        if self._re is not None:
            floors.append(self._screen.shortest if self._screen.exact else 0)
        return min(floors, default=float("inf"))

    def text(self, value: str) -> str:
        if len(value) < self._floor:
            return value
        if not _REMEMBERED <= len(value) <= _REMEMBERED_MAX:
            return self._mask(value)
        masked = self._seen.get(value)
        if masked is None:
            if len(self._seen) >= _SEEN_LIMIT:
                self._seen.clear()
            masked = self._seen[value] = self._mask(value)
        return masked

    def _mask(self, value: str) -> str:
        for secret in self.secrets:
            if secret in value:
                value = value.replace(secret, MASK)
        if self._re is not None and self._screen.may_match(value) and self._re.search(value):
            value = self._re.sub(MASK, value)
        return value

    def data(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):  # a name can be a secret too (--set sk-...=v)
            return {self.text(k) if isinstance(k, str) else k: self.data(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.data(v) for v in value]
        return value

    def json_line(self, doc: dict[str, Any]) -> bytes:
        """``doc`` masked as ``data`` masks it, as compact JSON (``ensure_ascii=False``; values
        JSON has no form for turned into JSON as pydantic does): dumped once, and the JSON
        screened whole, so a document with nothing to mask (most events) is not walked field by
        field. The screen never passes what ``data`` would change: every text to mask holds a
        secret or a pattern's literal start, and JSON keeps each text whole, escaped character
        by character, so the JSON holds that secret or start escaped the same way."""
        if self._needles is not None:
            try:
                text = _STRICT.encode(doc)
            except (ValueError, TypeError, RecursionError):  # NaN, infinity, keys JSON cannot have: as below
                pass
            else:
                for key, needles in self._needles:
                    if key in text and any(needle in text for needle in needles):
                        break
                else:
                    return text.encode()
        return json.dumps(_jsonable(self.data(doc)), ensure_ascii=False, separators=(",", ":")).encode()

    def _json_needles(self) -> list[tuple[str, list[str]]] | None:
        """What ``json_line`` looks for in a JSON text: each secret and each pattern's literal
        start as JSON writes them, in groups that start alike, each with the start its needles
        share (``gh`` for ``ghp_``, ``gho_``...: a text without it is looked at once per group,
        not once per needle); None when a pattern has no literal start (it could match across
        what JSON escapes: such documents are masked field by field)."""
        if self._re is not None and (not self._screen.exact or self._screen.others):
            return None
        texts = [*self.secrets, *(self._screen.prefixes if self._re is not None else ())]
        groups: dict[str, list[str]] = {}
        for text in texts:
            needle = json.dumps(text, ensure_ascii=False)[1:-1]
            groups.setdefault(needle[:2], []).append(needle)
        return [(os.path.commonprefix(needles), needles) for needles in groups.values()]

    def event(self, doc: dict[str, Any]) -> dict[str, Any]:
        """An event as it may be written: masked, and without tool I/O when ``tool_io`` is off."""
        doc = self.data(doc)
        if not self.tool_io:
            strip_tool_io(doc)
        return doc


class _Screen:
    """A quick test that a text cannot match any of the patterns, so the full search (one pass
    of every alternative at every position: about a millisecond for a 10 KB tool result) runs
    only on texts that may hold a secret. It never says no where the patterns would match:

    - a text shorter than the shortest match cannot match;
    - a pattern that starts with literal text (``sk-``, ``AKIA``, ``[Bb]earer``, ``gh[pousr]_``)
      can match only a text that contains one of its prefixes, which ``str.__contains__`` finds
      far faster; and a text that lacks the prefix's rarest character (``-`` of ``xoxb-``, found
      by ``memchr``) cannot contain the prefix, so the prefix is not looked for at all (most
      texts lack most of them: a prefix looked for in a long run of a letter it repeats costs
      a pass per character);
    - any other pattern is searched on its own (still cheaper than the alternation).

    The patterns are read with ``re``'s own parser (``re._parser``, ``sre_parse`` before 3.11);
    if that cannot be done every text gets the full search, as before."""

    def __init__(self, patterns: tuple[str, ...]):
        self.shortest = 0
        self.prefixes: list[str] = []
        self.keyed: list[tuple[str, list[str]]] = []
        """The prefixes by their rarest character (``-`` for ``sk-`` and the five ``xox?-``): a
        text is searched for each such character once."""
        self.others: list[re.Pattern[str]] = []
        self.exact = False
        """False: no screen, every text is searched."""
        if not patterns:
            return
        try:
            try:
                from re import _constants as c, _parser  # type: ignore[attr-defined]
            except ImportError:
                import sre_constants as c  # type: ignore[no-redef]
                import sre_parse as _parser  # type: ignore[no-redef]
            shortest = []
            for pattern in patterns:
                parsed = _parser.parse(pattern)
                shortest.append(int(parsed.getwidth()[0]))
                starts = _literal_starts(parsed, c)
                if starts is None:
                    self.others.append(re.compile(pattern))
                else:
                    self.prefixes.extend(starts)
            self.shortest = min(shortest)
            keyed: dict[str, list[str]] = {}
            for prefix in self.prefixes:
                keyed.setdefault(min(prefix, key=_rarity), []).append(prefix)
            self.keyed = list(keyed.items())
            self.exact = True
        except Exception:  # re's internals changed: search every text
            self.exact = False

    def may_match(self, text: str) -> bool:
        if not self.exact:
            return True
        if len(text) < self.shortest:
            return False
        for key, prefixes in self.keyed:
            if key in text:
                for prefix in prefixes:
                    if prefix in text:
                        return True
        return any(o.search(text) for o in self.others)


_COMMON = " etaoinshrdlcumwfgypbvkjxqz"
"""Letters by how often they occur in ordinary text, most often first."""


def _rarity(ch: str) -> int:
    """Sorts a prefix's characters rarest first (in ordinary text): punctuation and digits,
    then capitals, then small letters from the rarest up."""
    if ch.lower() in _COMMON:
        return (100 if ch.islower() or ch == " " else 50) - _COMMON.index(ch.lower())
    return 0


def _literal_starts(parsed: Any, c: Any) -> list[str] | None:
    """The texts (at least two characters long) one of which starts every match of a parsed
    pattern; None when it does not start with literal text or ignores case."""
    if parsed.state.flags & c.SRE_FLAG_IGNORECASE:
        return None
    starts = [""]
    for op, arg in parsed:
        if op is c.LITERAL:
            starts = [s + chr(arg) for s in starts]
        elif (op is c.IN and 0 < len(arg) <= 8 and len(starts) * len(arg) <= 32
              and all(kind is c.LITERAL for kind, _ in arg)):
            starts = [s + chr(ch) for s in starts for _, ch in arg]
        else:
            break
    return starts if min(len(s) for s in starts) >= 2 else None


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
