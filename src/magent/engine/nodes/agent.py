"""``type: agent`` — an agent's ReAct loop (``engine/react.py``) in the node's session.

The node adds its ``prompt`` (or a nudge to continue, when the last word was an
assistant's) to the conversation, checkpoints, and runs the loop to a final
answer, which is the node's output.
"""

from __future__ import annotations

from magent.engine import structured, templating
from magent.engine.context import NodeContext
from magent.engine.nodes.base import Node, NodeConfig, NodeResult
from magent.engine.react import react
from magent.models import Agent, Message
from magent.models.progress import AgentProgress

class AgentConfig(NodeConfig):
    agent: str
    """Name of the agent that runs this node."""
    prompt: str | None = None
    """An instruction added to the conversation (as a user message) when the node starts."""


class AgentNode(Node):
    kind = "agent"
    Config = AgentConfig
    Progress = AgentProgress
    config: AgentConfig

    @classmethod
    def agent_refs(cls, config: AgentConfig) -> list[tuple[str, str]]:
        return [("agent", config.agent)]

    async def run(self, ctx: NodeContext) -> NodeResult:
        agent = self.graph.agent(self.config.agent)
        ctx.state.current_agent = agent.name
        p = ctx.session.progress_as(AgentProgress)
        if not p.started:
            self._start(ctx, agent)
            p.started, p.iteration = True, 0
            ctx.checkpoints.node_started()
        answer = await react(ctx, agent, self.name)
        return NodeResult(output=answer, value=structured.value_of(ctx, agent.name, answer))

    def _start(self, ctx: NodeContext, agent: Agent) -> None:
        if self.config.prompt:
            prompt = templating.rendered(ctx, self.config.prompt, f"the prompt of node '{self.name}'")
            ctx.add_message(Message(role="user", content=prompt, name="workflow"), node=self.name)
        elif ctx.state.messages and ctx.state.messages[-1].role == "assistant":
            ctx.add_message(Message(role="user", name="workflow",
                                    content=f"Continue the task. Your role: {agent.role}"), node=self.name)
