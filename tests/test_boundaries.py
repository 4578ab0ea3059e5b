"""Import boundaries that hold at run time, read from the source with ``ast``.

Every ``import`` counts, at the top of a module or inside a function (an import moved into a
function to dodge a cycle still makes the cycle when it runs); only those under
``if TYPE_CHECKING:`` do not run, so they make no cycle.

The layer rules (DESIGN.md), top to bottom: a module may import from its own concern and from
the concerns below it, never from one above.

    cli, mcpserve          parse, call the API, render
    render, liveview       the terminal (rich)
    magent (the package)   the public names, forwarded to api
    api                    run / resume / batch / read, from Python
    batching               many tasks in one process or on Ray: runs what the api hands it
    engine                 the executor, node kinds, the ReAct loop
    trace                  reading, building and exporting a task's trace
    guardrails, tools      rails; tool registry, MCP clients, built-in tools
    memory                 long-term memory
    llm                    model clients (the only place that imports litellm)
    config, redact         YAML loading and settings; masking secrets
    store                  the files under the home: knows no engine, no model client
    models                 pydantic models of the seeds' entities
    foundation             errors, ids, paths, schema, failpoints, vocabulary, money, version

The test checks what keeps that order honest without pinning each pair: no cycle between
concerns; the store imports only models and the foundation; no cycle among modules (the
engine's included); and no module imports another's ``_name`` (a private name is its
module's own).
"""

from __future__ import annotations

import ast
import graphlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
FOUNDATION = frozenset({"errors", "ids", "paths", "schema", "failpoints", "vocabulary", "money", "version"})
"""Modules that import nothing of magent's (schema: errors only), each a concern of its own."""


@dataclass(frozen=True)
class Import:
    importer: str
    target: str
    """The module run by the import: ``magent.engine.events``."""
    name: str | None
    """The name taken from ``target`` (``from target import name``), if not a module itself."""
    where: str
    """``src/magent/store/tasks.py:191``."""
    runtime: bool
    """False under ``if TYPE_CHECKING:``."""

    def __str__(self) -> str:
        return f"{self.where} imports {self.target}" + (f".{self.name}" if self.name else "")


@cache
def modules() -> dict[str, Path]:
    """Every module under src/magent, by its dotted name."""
    found = {}
    for path in sorted((SRC / "magent").rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> list[tuple[str, str | None]]:
    if isinstance(node, ast.Import):
        return [(alias.name, None) for alias in node.names]
    base = node.module or ""
    if node.level:
        package = module.split(".")
        if modules()[module].name != "__init__.py":
            package.pop()
        package = package[:len(package) - node.level + 1]
        base = ".".join(package + ([node.module] if node.module else []))
    out: list[tuple[str, str | None]] = []
    for alias in node.names:
        sub = f"{base}.{alias.name}"
        out.append((sub, None) if sub in modules() else (base, alias.name))
    return out


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


@cache
def imports() -> tuple[Import, ...]:
    """Every import of a magent module in src/magent."""
    found = []
    for module, path in modules().items():
        where = path.relative_to(SRC.parent)

        def walk(node: ast.AST, runtime: bool) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    for target, name in _targets(module, child):
                        if target == "magent" or target.startswith("magent."):
                            found.append(Import(module, target, name, f"{where}:{child.lineno}", runtime))
                walk(child, runtime and not _is_type_checking(child))

        walk(ast.parse(path.read_text(encoding="utf-8")), True)
    return tuple(found)


def concern(module: str) -> str:
    """``magent.engine.nodes.map`` → ``engine``; ``magent.errors`` → ``errors``; ``magent`` → ``magent``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _cycles(edges: dict[tuple[str, str], Import]) -> list[str]:
    """The cycles of the graph ``edges`` describes, each edge told by an import that makes it
    (one cycle found, one of its edges set aside, and again, until none is left)."""
    edges = dict(edges)
    found = []
    while True:
        graph: dict[str, set[str]] = {}
        for a, b in edges:
            graph.setdefault(a, set()).add(b)
        try:
            graphlib.TopologicalSorter(graph).prepare()
        except graphlib.CycleError as exc:
            ring = exc.args[1][::-1]   # [x, ..., x], each importing the next (graphlib lists them backwards)
            found.append("\n".join(f"  {a} -> {b}: {edges[a, b]}" for a, b in zip(ring, ring[1:])))
            del edges[ring[0], ring[1]]
        else:
            return found


def test_the_store_imports_only_models_and_the_foundation():
    bad = [i for i in imports() if concern(i.importer) == "store"
           and concern(i.target) not in {"store", "models", *FOUNDATION}]
    assert not bad, "the store may import only models and the foundation:\n" + "\n".join(f"  {i}" for i in bad)


def test_no_cycle_between_concerns():
    edges = {}
    for i in imports():
        a, b = concern(i.importer), concern(i.target)
        if i.runtime and a != b:
            edges.setdefault((a, b), i)
    cycles = _cycles(edges)
    assert not cycles, "cycles between concerns:\n" + "\n\n".join(cycles)


def test_no_cycle_among_modules():
    """Inside a concern too: the engine's react, delegation and children, guard and tooluse,
    and every other group of modules import one way."""
    edges = {}
    for i in imports():
        if i.runtime and i.importer != i.target:
            edges.setdefault((i.importer, i.target), i)
    cycles = _cycles(edges)
    assert not cycles, "cycles among modules:\n" + "\n\n".join(cycles)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_no_module_imports_anothers_private_names():
    """``from m import _name``, and ``m._name`` on a module ``m`` the file imported."""
    bad = [str(i) for i in imports() if i.target != i.importer
           and (_private(i.name or "") or any(_private(part) for part in i.target.split(".")))]
    for module, path in modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bound = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                for alias, (target, name) in zip(node.names, _targets(module, node)):
                    if name is None and target != module:
                        bound[alias.asname or alias.name] = target
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and _private(node.attr) and isinstance(node.value, ast.Name)
                    and node.value.id in bound):
                bad.append(f"{path.relative_to(SRC.parent)}:{node.lineno} uses {bound[node.value.id]}.{node.attr}")
    assert not bad, "private names used outside their module:\n" + "\n".join(f"  {b}" for b in sorted(bad))
