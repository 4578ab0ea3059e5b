"""``type: condition`` — routes only: its outgoing edges' conditions pick the next node."""

from __future__ import annotations

from typing import TYPE_CHECKING

from magent.engine.nodes.base import Node, NodeConfig, NodeResult

if TYPE_CHECKING:
    from magent.engine.context import NodeContext


class ConditionConfig(NodeConfig):
    set_routing_key: str | None = None
    """Optionally set ``routing_key`` to this value before routing."""


class ConditionNode(Node):
    kind = "condition"
    Config = ConditionConfig
    config: ConditionConfig

    async def run(self, ctx: NodeContext) -> NodeResult:
        if self.config.set_routing_key is not None:
            ctx.state.routing_key = self.config.set_routing_key
        return NodeResult(output=None)
