"""Fan-out edges and their joins, found and checked when a workflow loads.

An edge ``{from: x, to: [a, b, c]}`` runs ``a``, ``b`` and ``c`` as parallel branches. Each
branch walks the graph on its own until it reaches the *join*: the nearest node every
branch can reach. The join runs once, after all of them. The checks here make that
well defined before anything runs: the branches must meet, no branch may end the run
or loop back to the fan-out without passing through the join, and no node may belong
to two branches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from magent.models import Workflow

END = "END"


@dataclass(frozen=True)
class Join:
    """Where the branches of one fan-out edge meet."""

    edge: int
    """Index of the fan-out edge in the workflow's ``edges``."""
    source: str
    targets: tuple[str, ...]
    node: str
    """The join node: runs once all branches have reached it."""
    branches: dict[str, frozenset[str]]
    """Per target, the nodes its branch may run before the join."""
    on_error: str


def successors(workflow: Workflow) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {name: [] for name in workflow.nodes}
    for edge in workflow.edges:
        out.setdefault(edge.from_, []).extend(edge.targets)
    return out


def _reach(start: str, succ: dict[str, list[str]], stop: str | None = None) -> tuple[list[str], bool]:
    """Nodes reachable from ``start`` (itself included) in breadth-first order without passing
    through ``stop``, and whether the run can end on the way (an edge to END, or a node
    without edges)."""
    seen, order, ends = {start}, [start], False
    i = 0
    while i < len(order):
        node = order[i]
        i += 1
        nxt = succ.get(node, [])
        if not nxt:
            ends = True
        for target in nxt:
            if target == END:
                ends = True
            elif target != stop and target not in seen:
                seen.add(target)
                order.append(target)
    return order, ends


def find_joins(workflow: Workflow, fail: Callable[[str, tuple], Exception]) -> dict[int, Join]:
    """The join of every fan-out edge, by edge index. ``fail(message, field path)`` builds the
    error to raise for a fan-out that cannot work."""
    succ = successors(workflow)
    joins: dict[int, Join] = {}
    for i, edge in enumerate(workflow.edges):
        targets = edge.targets
        if len(targets) < 2:
            continue
        at = ("edges", i, "to")
        shown = f"fan-out {edge.from_} → [{', '.join(targets)}]"
        orders = {t: _reach(t, succ)[0] for t in targets}
        common = set.intersection(*(set(o) for o in orders.values()))
        if not common:
            raise fail(f"{shown}: the branches never meet — no node is reachable from all of them, so "
                       "there is no join to wait at; lead each branch to a common node", at)
        # The nearest meeting point: the fewest steps from the farthest branch.
        join = min(common, key=lambda n: (max(orders[t].index(n) for t in targets),
                                          list(workflow.nodes).index(n)))
        branches: dict[str, frozenset[str]] = {}
        for t in targets:
            if t == join:
                raise fail(f"{shown}: '{t}' is where the branches meet, so it cannot also be a branch", at)
            nodes, ends = _reach(t, succ, stop=join)
            if ends:
                exit_ = next((n for n in nodes if not succ.get(n) or END in succ[n]), t)
                raise fail(f"{shown}: the branch from '{t}' can end the run (at '{exit_}') without "
                           f"reaching '{join}', where the branches join; every path of a branch must "
                           "lead to the join", at)
            if edge.from_ in nodes:
                raise fail(f"{shown}: the branch from '{t}' leads back to '{edge.from_}' before the "
                           f"join '{join}'", at)
            for other, theirs in branches.items():
                shared = sorted(set(nodes) & theirs)
                if shared:
                    raise fail(f"{shown}: the branches from '{other}' and '{t}' both run "
                               f"'{shared[0]}' before the join '{join}'; a node belongs to one branch", at)
            branches[t] = frozenset(nodes)
        joins[i] = Join(edge=i, source=edge.from_, targets=tuple(targets), node=join, branches=branches,
                        on_error=edge.on_error)
    return joins
