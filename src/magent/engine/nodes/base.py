"""What a node kind is: a config model and a class with ``run(ctx)``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import ConfigDict

from magent.engine.context import NodeContext
from magent.models import NodeDef
from magent.models.progress import NodeProgress, ProgressOfAKind

if TYPE_CHECKING:
    from magent.engine.graph import Graph
class NodeConfig(NodeDef):
    """Base of each kind's config: unlike ``NodeDef``, unknown fields are errors."""

    model_config = ConfigDict(extra="forbid")


@dataclass(eq=False)
class NodeResult:
    output: str | None = None
    """The node's answer/output (the task's result when it is the last node)."""
    value: Any = None
    """The parsed answer of an agent with an ``output_schema`` (None otherwise)."""


class Node:
    """A node kind. Subclasses set ``kind`` and ``Config`` and implement ``run``."""

    kind: ClassVar[str]
    Config: ClassVar[type[NodeConfig]]
    Progress: ClassVar[type[ProgressOfAKind]] = NodeProgress
    """What it keeps in checkpoints while it runs (``models/progress.py``)."""

    def __init__(self, name: str, config: NodeConfig, graph: "Graph"):
        self.name = name
        self.config = config
        self.graph = graph

    @classmethod
    def agent_refs(cls, config: Any) -> list[tuple[str, str]]:
        """``(field, agent name)`` pairs the graph loader must resolve."""
        return []

    @property
    def agent_name(self) -> str:
        refs = self.agent_refs(self.config)
        return refs[0][1] if refs else ""

    async def run(self, ctx: "NodeContext") -> NodeResult:
        raise NotImplementedError
