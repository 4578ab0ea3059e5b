"""Templates in prompts and tool-node arguments: Jinja2, sandboxed, strict.

Text holding ``{{``, ``{%`` or ``{#`` is a template over ``task``, ``metadata``, ``output``,
``routing_key``, ``next_action`` and ``current_agent``; other text is used as written. A missing
value is an error, never an empty string. What a template needs is read from it, so an unknown
name is a config error at its line, and a ``metadata`` key nothing sets must come from ``--set``
(unless it has a ``default``)."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

NAMES = ("task", "metadata", "output", "routing_key", "next_action", "current_agent")
MARKS = ("{{", "{%", "{#")


class TemplateProblem(ValueError):
    """A template that does not parse, names something unknown, or cannot render."""

    def __init__(self, message: str, line: int = 1):
        super().__init__(message)
        self.message = message
        self.line = line
        """1-based line within the template."""


@dataclass(eq=False)
class Needs:
    """What one template reads."""

    names: set[str] = field(default_factory=set)
    """Top-level names it uses."""
    metadata: dict[str, int] = field(default_factory=dict)
    """``metadata`` keys it must have (not behind ``default``), with the line of their first use."""
    optional: set[str] = field(default_factory=set)
    """``metadata`` keys it reads with a default."""


def is_template(text: Any) -> bool:
    return isinstance(text, str) and any(mark in text for mark in MARKS)


@lru_cache(maxsize=1)
def sandbox() -> Any:
    """The one sandboxed Jinja2 environment templates are parsed and rendered in."""
    from jinja2 import StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    return SandboxedEnvironment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)


def check(text: str) -> Needs:
    """What ``text`` needs; ``TemplateProblem`` (with its line) for a syntax error or unknown name."""
    from jinja2 import TemplateSyntaxError, meta, nodes

    try:
        tree = sandbox().parse(text)
    except TemplateSyntaxError as exc:
        raise TemplateProblem(f"template does not parse: {exc.message}", exc.lineno or 1) from None
    needs = Needs(names=set(meta.find_undeclared_variables(tree)))
    for name in sorted(needs.names):
        if name not in NAMES:
            line = next((n.lineno for n in tree.find_all(nodes.Name) if n.name == name), 1)
            close = difflib.get_close_matches(name, NAMES, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise TemplateProblem(f"template uses unknown name {name!r} ({hint}available: {', '.join(NAMES)})",
                                  line)
    defaulted: set[int] = set()
    for f in tree.find_all(nodes.Filter):
        if f.name in ("default", "d") and f.node is not None:
            defaulted |= {id(n) for n in f.node.find_all((nodes.Getattr, nodes.Getitem))}
            defaulted.add(id(f.node))
    for test in tree.find_all(nodes.Test):
        if test.name in ("defined", "undefined", "none"):
            defaulted.add(id(test.node))
            defaulted |= {id(n) for n in test.node.find_all((nodes.Getattr, nodes.Getitem))}
    for n in tree.find_all((nodes.Getattr, nodes.Getitem)):
        key = _metadata_key(n)
        if key is None:
            continue
        if id(n) in defaulted:
            needs.optional.add(key)
        else:
            needs.metadata.setdefault(key, n.lineno)
    return needs


def _metadata_key(n: Any) -> str | None:
    """``x`` for ``metadata.x`` / ``metadata['x']``; None for anything else."""
    from jinja2 import nodes

    if not (isinstance(n.node, nodes.Name) and n.node.name == "metadata"):
        return None
    if isinstance(n, nodes.Getattr):
        return str(n.attr)
    if isinstance(n.arg, nodes.Const) and isinstance(n.arg.value, str):
        return n.arg.value
    return None


def render(text: str, values: dict[str, Any]) -> str:
    """``text`` rendered with ``values`` (text that is not a template comes back as it is).
    Raises ``TemplateProblem`` when a value is missing or the sandbox refuses something."""
    if not is_template(text):
        return text
    from jinja2 import TemplateError

    try:
        return _compiled(text).render(**values)
    except TemplateError as exc:
        raise TemplateProblem(f"template cannot render: {exc}") from None


@lru_cache(maxsize=256)
def _compiled(text: str) -> Any:
    return sandbox().from_string(text)


def values_of(ctx: Any) -> dict[str, Any]:
    """What a template sees in ``ctx``'s session."""
    state = ctx.state
    main = ctx.run.state.main.messages  # the task as given (task.json keeps it masked)
    task = main[0].content if main and main[0].role == "user" else ctx.deps.task.description
    return {"task": task, "metadata": state.metadata, "output": ctx.last_output,
            "routing_key": state.routing_key, "next_action": state.next_action,
            "current_agent": state.current_agent}
