"""Which State values a workflow reads — so a value a person sets that nothing reads is
reported instead of silently doing nothing.

A workflow reads State in two places: edge conditions (``metadata.priority == 'high'``,
``routing_key == 'revise'``) and ``$`` references in a tool node's arguments
(``$metadata.ticket``). Agents see the conversation, not State. magent itself reads
``metadata.last_output`` (the output the next node works on and the task's result).
A node kind this module does not know may read anything, so with one in the graph
nothing is reported.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from magent.engine.context import NodeContext

KNOWN_KINDS = {"agent", "reflection", "tool", "condition", "human"}
FIELDS = ("routing_key", "next_action", "current_agent")
READ_BY_MAGENT = {"last_output", "outputs", "human", "reflection"}


@dataclass(eq=False)
class Reads:
    fields: set[str] = field(default_factory=set)
    """State fields read: ``routing_key``, ``next_action``, ``current_agent``, and ``metadata``
    when something reads it whole."""
    metadata: set[str] = field(default_factory=lambda: set(READ_BY_MAGENT))
    """Top-level ``metadata`` keys read."""
    everything: bool = False
    """Something may read any value (a node kind we cannot look into)."""

    def unread(self, updates: dict[str, Any]) -> list[str]:
        """The keys of ``updates`` (State updates: fields, ``metadata`` nested) nothing reads."""
        if self.everything:
            return []
        out = []
        for key, value in updates.items():
            if key == "metadata" and isinstance(value, dict):
                if "metadata" not in self.fields:
                    out += [f"metadata.{k}" for k in value if k not in self.metadata]
            elif key in FIELDS and key not in self.fields:
                out.append(key)
        return out


def reads_of(graph: Any) -> Reads:
    """What ``graph``'s edge conditions and tool arguments read."""
    reads = Reads()
    for edge in graph.workflow.edges:
        if edge.condition:
            _expression(edge.condition, reads)
    templates = getattr(graph, "templates", None)
    if templates is not None:  # prompts and tool arguments that are templates
        reads.metadata |= templates.reads
        reads.fields |= {n for n in templates.names if n in FIELDS or n == "metadata" and not templates.reads}
    for node in graph.nodes.values():
        if node.kind not in KNOWN_KINDS:
            reads.everything = True
        elif node.kind == "tool":
            collect_references(node.config.model_dump(), reads)
    return reads


def _expression(text: str, reads: Reads) -> None:
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        return
    placed: set[int] = set()  # ``metadata`` names accounted for by a key read
    for node in ast.walk(tree):
        key = None
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "metadata"
                and node.attr != "get"):  # (metadata.get('x') is the call below)
            key = node.attr
            placed.add(id(node.value))
        elif (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "metadata"
              and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)):
            key = node.slice.value
            placed.add(id(node.value))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and isinstance(node.func.value, ast.Name) and node.func.value.id == "metadata" and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            key = node.args[0].value
            placed.add(id(node.func.value))
        if key is not None:
            reads.metadata.add(key)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if node.id in FIELDS:
                reads.fields.add(node.id)
            elif node.id == "metadata" and id(node) not in placed:
                reads.fields.add("metadata")  # read whole: len(metadata), metadata[some_name]...


def collect_references(value: Any, reads: Reads) -> None:
    """Add to ``reads`` what the ``$...`` strings in ``value`` (at any depth) read of State."""
    if isinstance(value, dict):
        for item in value.values():
            collect_references(item, reads)
    elif isinstance(value, list):
        for item in value:
            collect_references(item, reads)
    elif isinstance(value, str) and value.startswith("$") and not value.startswith("$$"):
        path = value[1:].split(".")
        if path[0] == "metadata":
            if len(path) > 1:
                reads.metadata.add(path[1])
            else:
                reads.fields.add("metadata")
        elif path[0] in FIELDS:
            reads.fields.add(path[0])


def changed(before: Any, after: Any) -> dict[str, Any]:
    """The State updates that turn ``before`` into ``after``: fields, and top-level
    ``metadata`` keys whose values differ."""
    out: dict[str, Any] = {k: getattr(after, k) for k in FIELDS if getattr(after, k) != getattr(before, k)}
    meta = {k: v for k, v in after.metadata.items() if before.metadata.get(k, object()) != v}
    if meta:
        out["metadata"] = meta
    return out


def report_unread(ctx: NodeContext, before: Any, after: Any) -> None:
    """A ``warning`` event for each value a person set (``--set``, ``--modify``, an inline edit)
    that nothing in the workflow reads: it is kept in State, but changes nothing."""
    for key in reads_of(ctx.deps.graph).unread(changed(before, after)):
        ctx.bus.emit("warning", None, message=(
            f"{key} was set, but nothing in {ctx.deps.graph.kind} '{ctx.deps.graph.name}' reads it (no edge "
            "condition or tool argument uses it); it is kept in State and changes nothing"))
