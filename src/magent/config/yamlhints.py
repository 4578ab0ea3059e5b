"""YAML syntax errors in magent's words, each with a hint at its usual cause (often an unquoted
prompt holding ``: `` or starting with ``{``, ``[`` or a quote)."""

from __future__ import annotations

from typing import Any

QUOTE = "if it is text, put the whole value in quotes, or write it as a block after '|'"

# (what PyYAML's problem starts with, what magent says)
_WORDS = [
    ("mapping values are not allowed here",
     f"a ': ' inside a value reads as a new key; {QUOTE}"),
    ("expected <block end>",
     "more follows a value that looked complete (one starting with '{', '[' or a quote ends "
     f"where it closes), or the indentation is off; {QUOTE}"),
    ("could not find expected ':'",
     "a line that is neither 'key: value' nor a list item; a value going on to the next line "
     "must be indented under its key or quoted"),
    ("expected ',' or '}'",
     f"a '{{' begins a mapping that is not closed (a prompt starting with '{{'?); {QUOTE}"),
    ("expected ',' or ']'",
     f"a '[' begins a list that is not closed (a value starting with '['?); {QUOTE}"),
    ("found character '\\t'", "a tab: YAML indents with spaces only"),
    ("found unexpected end of stream", "a quote is not closed before the file ends"),
    ("expected the node content, but found '<stream end>'",
     "the file ends where a value should follow (a '{' or '[' that is not closed, or a ',' or ':' "
     "with nothing after it)"),
    ("found undefined alias", f"a '*' begins a reference to an anchor that is not defined; {QUOTE}"),
    ("found character '@'", f"'@' and '`' cannot begin a plain value; {QUOTE}"),
    ("found character '`'", f"'@' and '`' cannot begin a plain value; {QUOTE}"),
]


def syntax_words(exc: Any) -> str | None:
    """What a ``MarkedYAMLError`` means for a config, in magent's words with a hint (None: a
    problem without one here, said as it was), and where what was open began."""
    problem = exc.problem or ""
    words = next((said for start, said in _WORDS if problem.startswith(start)), None)
    if words is None:
        return None
    mark, begun = exc.problem_mark, exc.context_mark
    opened = any(kind in (exc.context or "") for kind in ("flow", "quoted", "simple key"))
    if opened and begun is not None and mark is not None and begun.line != mark.line:
        words += f" (it began on line {begun.line + 1})"
    return f"YAML syntax: {words}"
