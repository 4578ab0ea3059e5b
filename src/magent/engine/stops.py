"""What a reply's stop reason decides, before it is read as tool calls or an answer.

A reply cut at the output limit (``length``: Anthropic's ``max_tokens``, Gemini's
``MAX_TOKENS``) is not an answer: per the agent's ``on_truncation`` the model is asked to go
on where it stopped (the parts are joined into one answer) or the node fails naming the
limit. A refusal or a content filter (``refusal``, ``content_filter``) is not an empty reply
to ask again about: per ``on_refusal`` the node fails at once with the provider's reason, or
the run pauses for a person.
"""

from __future__ import annotations

from magent.engine.context import NodeContext
from magent.engine.control import NodeFailed, PauseRun
from magent.ids import new_id
from magent.llm.base import LLMRequest, LLMResponse
from magent.models import Agent, HumanRequest, Message

MAX_CONTINUATIONS = 2
"""How many times a cut reply is continued before the node fails."""

CONTINUE = ("Your reply was cut off at the output limit. Continue exactly where it stopped, "
            "without repeating anything.")
"""What the model is told after a reply cut at the limit (the cut reply stays before it)."""


def stopped_short(response: LLMResponse) -> bool:
    """A reply that is neither tool calls nor an answer because of how it ended."""
    if response.stop_reason in ("refusal", "content_filter"):
        return True
    return response.stop_reason == "length" and not response.tool_calls


def take(ctx: NodeContext, agent: Agent, node: str, iteration: int, request: LLMRequest, response: LLMResponse) -> None:
    """Record a reply that ``stopped_short`` and act on it: return when the model is to be
    asked to continue (the turn is done); raise ``NodeFailed`` or ``PauseRun`` otherwise."""
    entry_id = new_id()
    ctx.models.record(response, ctx.session, node=node, agent=agent.name, iteration=iteration, entry_id=entry_id,
                        request=request)
    refused = response.stop_reason != "length"
    text = (response.refusal or response.content) if refused else response.content
    ctx.add_message(Message(role="assistant", content=text), node=node, turn_id=f"{node}:{iteration}",
                    entry_id=entry_id)
    p = ctx.loop
    p.iteration = iteration + 1
    if refused:
        _refused(ctx, agent, node, response)
    continued = len(p.parts)
    if agent.on_truncation == "fail" or continued >= MAX_CONTINUATIONS:
        p.parts = []
        raise NodeFailed(_cut(ctx, agent, response, continued), kind="truncated")
    p.parts.append(response.content)
    ctx.add_message(Message(role="user", content=CONTINUE), node=node)


def reason(response: LLMResponse) -> str:
    """Why the provider gave no answer, in magent's words (with the model's own, when it wrote some)."""
    said = (response.refusal or response.content or "").strip()
    if response.stop_reason == "refusal" or said:
        return f"the model refused to answer: {said!r}" if said else "the model refused to answer"
    return "the provider's content filter blocked the reply (finish reason content_filter)"


def resume_refusal(ctx: NodeContext, node: str) -> None:
    """Going on after a person decided at a refusal pause: reject fails the node; approve asks
    the model again, with the person's message when they gave one."""
    human = ctx.state.metadata.get("human") or {}
    if human.get("kind") != "refusal":
        return
    answer = ctx.take_feedback(node)
    if answer is None:
        return
    if answer.action == "reject":
        raise NodeFailed(f"a person stopped the node after the model refused"
                         f"{': ' + answer.message if answer.message else ''}", kind="refusal")
    ctx.add_message(Message(role="user", name="human", content=f"[a person, approve] {answer.message}"
                            if answer.message else "[a person, approve] Try again."), node=node)


def _refused(ctx: NodeContext, agent: Agent, node: str, response: LLMResponse) -> None:
    said = f"agent '{agent.name}': {reason(response)} (model {response.model})"
    if agent.on_refusal == "fail":
        raise NodeFailed(said, kind="refusal")
    session = None if ctx.session.is_main else ctx.session.id
    raise PauseRun(HumanRequest(
        kind="refusal", node=node, session=session, allowed_actions=["approve", "reject"],
        question=f"{said}. Ask the model again (approve, with --message to guide it) or fail the node (reject)?",
        output=response.refusal or response.content or None,
        details={"agent": agent.name, "model": response.model, "stop_reason": response.stop_reason}))


def _cut(ctx: NodeContext, agent: Agent, response: LLMResponse, continued: int) -> str:
    limit = ctx.models.config(agent.name).max_tokens
    named = f"llm_config.max_tokens: {limit:,}" if limit else "the model's own limit (no llm_config.max_tokens)"
    where = f"agent '{agent.name}': the reply of model {response.model} was cut off at the output limit ({named})"
    if agent.on_truncation == "fail":
        return f"{where}; on_truncation is fail"
    return (f"{where} after {continued} continuation{'s' if continued != 1 else ''}; raise max_tokens "
            "or ask for a shorter answer")
