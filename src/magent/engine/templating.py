"""Where a graph uses templates (``config/templates.py``), checked when it loads.

Agents' system prompts, agent nodes' prompts and tool nodes' string arguments are
checked at load: a syntax error or an unknown name is a ``ConfigError`` at the
template's own line in its file. The ``metadata`` keys the templates need and that
nothing in the workflow sets are the run's *required values*: ``magent run`` without
one of them is a usage error naming it, before anything is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from magent.config.templates import Needs, TemplateProblem, check, is_template, render, values_of
from magent.config.yamlfile import FieldPath, SourceFile, display_path, dotted
from magent.engine.control import NodeFailed
from magent.errors import ConfigError, UsageError

if TYPE_CHECKING:
    from magent.engine.context import NodeContext
    from magent.config.files import LoadedAgent

SET_BY_MAGENT = {"last_output", "outputs", "human", "reflection", "result", "last_value", "result_value"}
"""``metadata`` keys magent itself writes during a run."""


@dataclass(eq=False)
class Templates:
    """The templates of a graph and what they need."""

    required: dict[str, str] = field(default_factory=dict)
    """``metadata`` key → where it is first needed (``file:line``), for keys nothing sets."""
    reads: set[str] = field(default_factory=set)
    """Every ``metadata`` key a template reads (needed or not)."""
    names: set[str] = field(default_factory=set)
    """Top-level names templates use."""


def check_graph(agents: dict[str, "LoadedAgent"], nodes: dict[str, Any],
                workflow_source: SourceFile | None = None) -> Templates:
    found = Templates()
    sets = keys_set(nodes)
    for source, path, text in template_uses(agents, nodes, workflow_source):
        if not is_template(text):
            continue
        try:
            needs: Needs = check(text)
        except TemplateProblem as exc:
            raise template_error(source, path, text, exc.message, exc.line) from None
        found.names |= needs.names
        found.reads |= set(needs.metadata) | needs.optional
        for key, line in needs.metadata.items():
            if key not in sets and key not in found.required:
                found.required[key] = f"{display_path(source.path)}:{_line(source, path, text, line)}"
    return found


def keys_set(nodes: dict[str, Any]) -> set[str]:
    """The ``metadata`` keys magent or the workflow's nodes set during a run."""
    sets = set(SET_BY_MAGENT) | set(nodes)
    for name, node in nodes.items():
        if node.kind == "tool":
            sets.add(node.config.output_key or name)
        into = getattr(node.config, "into", None)
        if isinstance(into, str):
            sets.add(into.removeprefix("metadata.").split(".")[0])
    return sets


def template_uses(agents: dict[str, "LoadedAgent"], nodes: dict[str, Any],
                  workflow_source: SourceFile | None = None) -> list[tuple[SourceFile, FieldPath, str]]:
    """Every text of the graph that may be a template, with its file and field: agents' system
    prompts, agent nodes' prompts, tool nodes' string arguments."""
    uses: list[tuple[SourceFile, FieldPath, str]] = []
    for name, loaded in agents.items():
        if loaded.source is None:
            continue
        inline = workflow_source is not None and loaded.source is workflow_source
        uses.append((loaded.source, (("agents", name) if inline else ()) + ("system_prompt",),
                     loaded.agent.system_prompt))
    if workflow_source is not None:
        for name, node in nodes.items():
            prompt = getattr(node.config, "prompt", None)
            if node.kind == "agent" and isinstance(prompt, str):
                uses.append((workflow_source, ("nodes", name, "prompt"), prompt))
            if node.kind == "tool":
                uses += [(workflow_source, ("nodes", name, "arguments", *at), value)
                         for at, value in _strings(node.config.arguments)]
    return uses


def _strings(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], str]]:
    """Every string in ``value`` (nested mappings and lists) with its path."""
    if isinstance(value, str):
        return [(at, value)]
    if isinstance(value, dict):
        return [found for k, v in value.items() for found in _strings(v, (*at, k))]
    if isinstance(value, list):
        return [found for i, v in enumerate(value) for found in _strings(v, (*at, i))]
    return []


def _line(source: SourceFile, path: FieldPath, text: str, line: int) -> int | None:
    """The file line of line ``line`` of the template at ``path``."""
    at, _ = source.where(path)
    if at is None:
        return None
    try:
        written = source.path.read_text().splitlines()[at - 1]
    except (OSError, IndexError):
        written = ""
    block = written.split(":", 1)[-1].strip()[:1] in ("|", ">")
    return at + line - 1 + (1 if block else 0)


def template_error(source: SourceFile, path: FieldPath, text: str, message: str, line: int) -> ConfigError:
    """``message`` as a ``ConfigError`` at line ``line`` of the template at ``path`` in ``source``."""
    return ConfigError(message, path=display_path(source.path), line=_line(source, path, text, line),
                       field=dotted(path) or None)


def require(templates: Templates, initial: dict[str, Any] | None) -> None:
    """Refuse to start a run without a value its templates need (``UsageError``, exit 2)."""
    given = (initial or {}).get("metadata") or {}
    missing = [key for key in templates.required if key not in given]
    if missing:
        key = missing[0]
        more = f" (and {', '.join(missing[1:])})" if len(missing) > 1 else ""
        raise UsageError(f"a template needs metadata.{key} ({templates.required[key]}): give it with "
                         f"--set {key}=VALUE{more}")


def rendered(ctx: NodeContext, text: str, what: str) -> str:
    """``text`` rendered for ``ctx``'s session; a failure fails the node, naming ``what``."""
    if not is_template(text):
        return text
    try:
        return render(text, values_of(ctx))
    except TemplateProblem as exc:
        raise NodeFailed(f"{what}: {exc.message}", kind="template") from None
