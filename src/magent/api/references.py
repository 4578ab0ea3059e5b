"""What ``magent validate`` checks of the values a workflow's conditions and templates read, so
that a mistake shows before run time: ``outputs.NODE`` and ``visits.NODE`` name a node, an
output field is in the agent's closed ``output_schema``, and a needed ``metadata`` key close to
one the workflow sets is a misspelling. Every finding is a ``ConfigError`` with a did-you-mean."""

from __future__ import annotations

import ast
import difflib
from typing import TYPE_CHECKING, Any

from magent.errors import ConfigError

if TYPE_CHECKING:
    from magent.engine.graph import Graph

Chain = tuple[str, tuple[Any, ...], int]
"""A name and the keys read from it (``metadata``, ``("outputs", "grade", "score")``), with
the 1-based line of the read within its text."""


def check_references(graph: "Graph") -> list[ConfigError]:
    """Every value the graph's edge conditions and templates read that cannot be there."""
    from magent.config.templates import is_template
    from magent.engine.templating import keys_set, template_error, template_uses

    errors: list[ConfigError] = []
    if graph.workflow is not None and graph.source is not None and graph.kind == "workflow":
        for i, edge in enumerate(graph.workflow.edges):
            if edge.condition is None:
                continue
            for chain in condition_chains(edge.condition):
                problem = _problem(graph, chain)
                if problem:
                    errors.append(graph.source.error(problem, ("edges", i, "condition")))
    sets = keys_set(graph.nodes)
    for source, path, text in template_uses(graph.agents, graph.nodes,
                                            graph.source if graph.kind == "workflow" else None):
        if not is_template(text):
            continue
        for chain in template_chains(text):
            problem = _problem(graph, chain) or _unset(chain, sets)
            if problem:
                errors.append(template_error(source, path, text, problem, chain[2]))
    return errors


def _problem(graph: "Graph", chain: Chain) -> str | None:
    name, keys, _ = chain
    nodes = list(graph.nodes)
    if name == "visits" and keys and isinstance(keys[0], str) and keys[0] not in graph.nodes:
        return f"visits.{keys[0]}: no node {keys[0]!r}{_hint(keys[0], nodes)}"
    if name != "metadata" or len(keys) < 2 or keys[0] != "outputs" or not isinstance(keys[1], str):
        return None
    node = keys[1]
    if node not in graph.nodes:
        return f"metadata.outputs.{node}: no node {node!r}{_hint(node, nodes)}"
    agent = graph.nodes[node].agent_name
    schema = graph.output_schemas.get(agent) if agent else None
    if schema is None:
        return None
    return _field_problem(schema.schema, keys[2:], f"metadata.outputs.{node}",
                          f"the output_schema of agent {agent!r} (node {node})")


def _field_problem(schema: Any, keys: tuple[Any, ...], read: str, whose: str) -> str | None:
    """What is wrong with reading ``keys`` from a value that fits ``schema``, if anything."""
    for key in keys:
        if not isinstance(schema, dict):
            return None
        if isinstance(key, int):
            schema = schema.get("items")
            read += f"[{key}]"
            continue
        props = schema.get("properties")
        if not isinstance(props, dict):
            return None
        if key not in props:
            if schema.get("additionalProperties", True) is not False:
                return None  # other fields may be there
            fields = sorted(props)
            close = difflib.get_close_matches(key, fields, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}? " if close else ""
            return f"{read}.{key}: {whose} has no field {key!r} ({hint}fields: {', '.join(fields)})"
        schema, read = props[key], f"{read}.{key}"
    return None


def _unset(chain: Chain, sets: set[str]) -> str | None:
    """A ``metadata`` key nothing sets, close to one something does: a misspelling."""
    name, keys, _ = chain
    if name != "metadata" or not keys or not isinstance(keys[0], str) or keys[0] in sets:
        return None
    close = difflib.get_close_matches(keys[0], sorted(sets), n=1, cutoff=0.75)
    if not close:
        return None  # a value the run is given (--set)
    return f"metadata.{keys[0]}: nothing in the workflow sets it (did you mean {close[0]!r}?)"


def _hint(name: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    if close:
        return f" (did you mean {close[0]!r}?)"
    return f" (nodes: {', '.join(choices)})" if choices else ""


# reading the chains ---------------------------------------------------------------------------

def condition_chains(expression: str) -> list[Chain]:
    """The names and keys a condition reads (``metadata.outputs.grade.score``, ``metadata['outputs']``...)."""
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError:
        return []
    inner: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            inner.add(id(node.value))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            inner.add(id(node.func))
    out = []
    for node in ast.walk(tree):
        if id(node) in inner:
            continue
        chain = _py_chain(node)
        if chain is not None:
            out.append(chain)
    return out


def _py_chain(node: Any) -> Chain | None:
    keys: list[Any] = []
    if isinstance(node, ast.Call):  # x.get('key'): read as x.key
        if not (isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args
                and isinstance(node.args[0], ast.Constant)):
            return None
        keys.append(node.args[0].value)
        node = node.func.value
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Attribute):
            keys.append(node.attr)
        elif isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, (str, int)):
            keys.append(node.slice.value)
        else:
            keys.clear()  # a computed key: only what comes before it is known
        node = node.value
    if not isinstance(node, ast.Name) or not keys:
        return None
    return node.id, tuple(reversed(keys)), 1


def template_chains(text: str) -> list[Chain]:
    """The names and keys a Jinja2 template reads (``metadata.outputs.grade.score``)."""
    from jinja2 import TemplateSyntaxError, nodes

    from magent.config.templates import sandbox

    try:
        tree = sandbox().parse(text)
    except TemplateSyntaxError:
        return []
    reads = (nodes.Getattr, nodes.Getitem)
    inner = {id(n.node) for n in tree.find_all(reads)}
    out = []
    for n in tree.find_all(reads):
        if id(n) in inner:
            continue
        keys: list[Any] = []
        current: Any = n
        while isinstance(current, reads):
            if isinstance(current, nodes.Getattr):
                keys.append(current.attr)
            elif isinstance(current.arg, nodes.Const) and isinstance(current.arg.value, (str, int)):
                keys.append(current.arg.value)
            else:
                keys.clear()
            current = current.node
        if isinstance(current, nodes.Name) and keys:
            out.append((current.name, tuple(reversed(keys)), n.lineno))
    return out
