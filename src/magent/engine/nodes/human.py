"""``type: human`` — stop and ask a person; continue with their decision.

The run pauses with the node's ``prompt`` and the last output. ``magent resume
--approve|--reject|--modify`` answers; the decision is in ``human`` for edge
conditions (``human.action == 'reject'``) and in ``routing_key``.
"""

from __future__ import annotations

from magent.engine.context import NodeContext
from magent.engine.control import PauseRun
from magent.engine.nodes.base import Node, NodeConfig, NodeResult
from magent.models import HumanRequest

class HumanConfig(NodeConfig):
    prompt: str
    """The question for the person."""
    allowed_actions: list[str] = ["approve", "reject", "modify"]


class HumanNode(Node):
    kind = "human"
    Config = HumanConfig
    config: HumanConfig

    async def run(self, ctx: NodeContext) -> NodeResult:
        feedback = ctx.take_feedback(self.name)
        if feedback is None:
            raise PauseRun(HumanRequest(kind="human_node", node=self.name, question=self.config.prompt,
                                        output=ctx.last_output or None,
                                        allowed_actions=list(self.config.allowed_actions)))
        return NodeResult(output=None)  # the last output stands; the decision is in State
