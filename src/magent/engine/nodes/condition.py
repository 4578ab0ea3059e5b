"""``type: condition`` — routes only: its outgoing edges' conditions pick the next node."""

from __future__ import annotations

from magent.engine.context import NodeContext
from magent.engine.nodes.base import Node, NodeConfig, NodeResult

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
