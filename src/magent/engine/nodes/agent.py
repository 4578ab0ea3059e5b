"""``type: agent`` — a ReAct loop (seed 000): think, call tools, observe, until a final answer.

Each model turn is persisted as it completes: the assistant message, then each
tool result as its call finishes (calls from one response run concurrently),
then a checkpoint. A turn whose calls are not all answered — after a crash, or a
pause to approve a call — is finished first when the node is entered again.
"""

from __future__ import annotations

import asyncio

from magent.engine import textmode
from magent.engine.control import NodeFailed
from magent.engine.nodes.base import Node, NodeConfig, NodeResult
from magent.engine.tooluse import (
    add_observation, check_before_call, declined, run_tool_call, turn_refusals,
)
from magent.tools.policy import ToolPolicy
from magent.ids import new_id
from magent.llm.base import LLMRequest, LLMResponse, LLMToolCall
from magent.models import Agent, Message, ToolCall


class AgentConfig(NodeConfig):
    agent: str
    """Name of the agent that runs this node."""
    prompt: str | None = None
    """An instruction added to the conversation (as a user message) when the node starts."""


class AgentNode(Node):
    kind = "agent"
    Config = AgentConfig

    @classmethod
    def agent_refs(cls, config: AgentConfig) -> list[tuple[str, str]]:
        return [("agent", config.agent)]

    async def run(self, ctx) -> NodeResult:
        agent = self.graph.agent(self.config.agent)
        ctx.state.current_agent = agent.name
        tools = ToolPolicy.for_agent(agent, ctx.registry)
        p = ctx.progress
        if not p.get("started"):
            self._start(ctx, agent)
            p.update(started=True, iteration=0)
            ctx.checkpoint("node_start")
        client = ctx.client_for(agent.name)
        text_mode = agent.tool_calling == "text" or (
            agent.tool_calling == "auto" and tools.specs and not client.supports_tools(ctx.llm_config(agent.name).model))
        while True:
            if p.get("turn_open"):
                # The last model turn asked for tools: run the ones not answered yet, then checkpoint.
                pending = unanswered_calls(ctx.state.messages)
                if pending:
                    await self._finish_turn(ctx, agent, tools, pending)
                p["iteration"] = p.get("iteration", 0) + 1
                p.pop("turn_open", None)
                p.pop("decisions", None)
                ctx.checkpoint("llm_turn")
                continue
            iteration = p.get("iteration", 0)
            if iteration >= agent.max_iterations:
                raise NodeFailed(f"agent '{agent.name}' reached max_iterations ({agent.max_iterations}) "
                                 "without a final answer")
            response = await client.complete(self._request(ctx, agent, tools, text_mode),
                                             ctx.options.on_token)
            message, final = self._interpret(response, text_mode)
            # The call's record (with the script cursor after it) goes first: a crash between the
            # two leaves a record without an entry, and recovery then makes the call again.
            entry_id = new_id()
            ctx.record_llm_call(response, node=self.name, agent=agent.name, iteration=iteration,
                                entry_id=entry_id)
            ctx.add_message(message, node=self.name, turn_id=f"{self.name}:{iteration}", entry_id=entry_id)
            if message.tool_calls:
                p["turn_open"] = entry_id
                continue
            p["iteration"] = iteration + 1
            if not final.strip():
                ctx.add_message(Message(role="user", content="Your reply was empty. Call a tool or "
                                        "give your final answer."), node=self.name)
                ctx.checkpoint("llm_turn")
                continue
            return NodeResult(output=final)

    def _start(self, ctx, agent: Agent) -> None:
        if self.config.prompt:
            ctx.add_message(Message(role="user", content=self.config.prompt, name="workflow"), node=self.name)
        elif ctx.state.messages and ctx.state.messages[-1].role == "assistant":
            ctx.add_message(Message(role="user", name="workflow",
                                    content=f"Continue the task. Your role: {agent.role}"), node=self.name)

    def _request(self, ctx, agent: Agent, tools: ToolPolicy, text_mode: bool) -> LLMRequest:
        config = ctx.llm_config(agent.name)
        system = agent.system_prompt
        messages = ctx.state.messages
        specs = tools.specs
        if text_mode:
            if specs:
                system = system + "\n\n" + textmode.instructions(specs)
            messages = textmode.as_text_messages(messages)
            specs = []
        return LLMRequest(model=config.model, messages=messages, system=system, tools=specs,
                          temperature=agent.temperature, max_tokens=config.max_tokens,
                          endpoint=config.endpoint, api_key=config.api_key,
                          timeout=config.timeout_seconds, max_retries=config.max_retries,
                          fallback_model=config.fallback_model, agent=agent.name)

    def _interpret(self, response: LLMResponse, text_mode: bool) -> tuple[Message, str]:
        calls: list[LLMToolCall] = list(response.tool_calls)
        final = response.content
        if text_mode and not calls:
            parsed = textmode.parse(response.content)
            if parsed.action:
                calls = [LLMToolCall(id=f"call_{new_id()[:8]}", name=parsed.action,
                                     arguments=parsed.arguments, raw_arguments=parsed.raw_arguments)]
            elif parsed.final is not None:
                final = parsed.final
        tool_calls = [to_tool_call(c) for c in calls]
        return Message(role="assistant", content=response.content, tool_calls=tool_calls), final

    async def _finish_turn(self, ctx, agent: Agent, policy: ToolPolicy, pending: list[ToolCall]) -> None:
        turn = next(m for m in reversed(ctx.state.messages) if m.role == "assistant")
        refused = turn_refusals(policy, turn.tool_calls, pending)
        for call in pending:  # every pause is asked before any call of the turn runs
            if call.id not in refused:
                check_before_call(ctx, self.name, call.id, call.full_name, call.arguments,
                                  f"Agent '{agent.name}'")
        to_run: list[ToolCall] = []
        for call in pending:
            reason = refused.get(call.id) or declined(ctx, call.id)
            if reason:
                add_observation(ctx, self.name, call, "ERROR", reason)
            else:
                to_run.append(call)
        await asyncio.gather(*(run_tool_call(ctx, self.name, call, policy) for call in to_run))


def to_tool_call(call: LLMToolCall) -> ToolCall:
    server, dot, tool = call.name.partition(".")
    if not dot:
        server, tool = "", call.name
    return ToolCall(id=call.id or f"call_{new_id()[:8]}", server=server, tool=tool,
                    arguments=call.arguments if call.arguments is not None else {},
                    raw_arguments=None if call.arguments is not None else (call.raw_arguments or ""))


def unanswered_calls(messages: list[Message]) -> list[ToolCall]:
    """Tool calls of the last assistant message that have no result after it yet."""
    answered: set[str] = set()
    for message in reversed(messages):
        if message.role == "tool":
            if message.tool_call_id:
                answered.add(message.tool_call_id)
            continue
        if message.role == "assistant" and message.tool_calls:
            return [c for c in message.tool_calls if c.id not in answered]
        return []
    return []
