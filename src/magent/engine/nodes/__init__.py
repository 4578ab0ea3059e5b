"""Node kinds. Adding one: a module with a ``Node`` subclass, and one line in ``_WHERE``."""

from __future__ import annotations

import importlib
from typing import Iterator, Mapping

from magent.engine.nodes.base import Node, NodeConfig, NodeResult

_WHERE = {
    "agent": ("agent", "AgentNode"),
    "reflection": ("reflection", "ReflectionNode"),
    "tool": ("tool", "ToolNode"),
    "condition": ("condition", "ConditionNode"),
    "human": ("human", "HumanNode"),
    "map": ("map", "MapNode"),
    "plan": ("plan", "PlanNode"),
}
"""Node kind → its module under ``magent.engine.nodes`` and its class."""


class _Kinds(Mapping[str, "type[Node]"]):
    """Node kind → class, each kind's module imported when a graph first has such a node: a run
    of one agent loads neither the map and plan nodes (their child sessions) nor the others."""

    def __getitem__(self, kind: str) -> type[Node]:
        module, name = _WHERE[kind]
        return getattr(importlib.import_module(f"{__name__}.{module}"), name)

    def __iter__(self) -> Iterator[str]:
        return iter(_WHERE)

    def __len__(self) -> int:
        return len(_WHERE)


NODE_KINDS: Mapping[str, type[Node]] = _Kinds()

__all__ = ["NODE_KINDS", "Node", "NodeConfig", "NodeResult"]
