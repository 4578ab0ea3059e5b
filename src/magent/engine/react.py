"""The ReAct loop (seed 000): think, call tools, observe, until a final answer.

It runs in one session — the task's own conversation for an ``agent`` node, or a
child session for a sub-agent, a map item or a plan subtask. Each model turn is
persisted as it completes: the assistant message, then each tool result as its
call finishes (calls from one response run concurrently), then a checkpoint. A
turn whose calls are not all answered — after a crash, or a pause to approve a
call — is finished first when the loop is entered again.
"""

from __future__ import annotations

import asyncio
from typing import Any

from magent.engine import (
    argrails, budget, compaction, guard, routing, steering, stops, structured, templating, textmode, toolmode,
)
from magent.engine.context import NodeContext
from magent.engine.control import CancelRun, NodeFailed, PauseRun, Suspended
from magent.engine.delegation import delegate, delegation_specs
from magent.engine.observations import add_observation
from magent.engine.selecting import SEARCH, SEARCH_SPEC, Selector
from magent.engine.tooluse import check_before_call, declined, run_tool_call, turn_refusals
from magent.ids import new_id
from magent.llm.base import LLMRequest, LLMResponse, LLMToolCall, ToolSpec
from magent.memory import run as memory
from magent.models import Agent, Message, ToolCall
from magent.models.progress import AgentProgress
from magent.tools.policy import ToolPolicy

async def react(ctx: NodeContext, agent: Agent, node: str) -> str:
    """Run ``agent``'s loop in ``ctx``'s session until it gives a final answer; return it. Raises
    ``NodeFailed`` at ``max_iterations``, ``LLMError`` when the model cannot be reached,
    ``PauseRun`` when a call needs a person, ``Suspended`` when told to stop."""
    tools = ToolPolicy.for_agent(agent, ctx.deps.tools())
    delegates = delegation_specs(ctx, agent)
    ctx.session.progress_as(AgentProgress)
    specs = tools.specs + delegates
    delegated = {s.name for s in delegates}
    selector = Selector.for_agent(ctx, agent, tools.specs)  # None: every request carries every tool
    text_mode = toolmode.tell(ctx, agent, node, specs if selector is None else specs + [SEARCH_SPEC])
    while True:
        ctx.check_stop()
        outcome = await _turn(ctx, agent, node, tools, delegates, delegated, selector, text_mode)
        if isinstance(outcome, str):
            return outcome
        if outcome:
            ctx.checkpoints.turn_done()


async def _turn(ctx: NodeContext, agent: Agent, node: str, tools: ToolPolicy, delegates: list[ToolSpec],
                delegated: set[str], selector: Selector | None, text_mode: bool) -> str | bool:
    """One step of the loop: the final answer, True when a model turn is done (the caller
    checkpoints), or False when the reply asked for tools (they run on the next step)."""
    p = ctx.session.progress_as(AgentProgress)
    if p.held_answer is not None:  # a person decided on an answer a rail held
        accepted = guard.resume_answer(ctx, node)
        return accepted if accepted is not None else True
    stops.resume_refusal(ctx, node)  # a person decided after the model refused
    if p.turn_open:
        # The last model turn asked for tools: run the ones not answered yet; the turn is done.
        pending = unanswered_calls(ctx.state.messages)
        if pending:
            await _finish_turn(ctx, node, agent, tools, delegated, pending, selector)
        p.iteration += 1
        p.turn_open, p.decisions, p.unsure = None, {}, []
        return True
    steering.drain(ctx, node)  # between turns: an operator's messages, pause, cancel
    iteration = p.iteration
    if iteration >= agent.max_iterations:
        raise NodeFailed(f"agent '{agent.name}' reached max_iterations ({agent.max_iterations}) "
                         "without a final answer", kind="max_iterations")
    budget.before_model_call(ctx, agent.name, node)
    # Only the main conversation streams: children run side by side and would interleave.
    # An answer output rails may still change is not streamed either.
    stream = ctx.deps.options.on_token if ctx.session.is_main and not guard.has_output_rails(ctx, agent.name) else None
    route = routing.choose(ctx, agent, node, iteration)  # recorded before the call
    chosen, selection = (tools.specs, None) if selector is None else await selector.choose(ctx, node)
    request = await request_for(ctx, agent, node, iteration, chosen + delegates, text_mode, route)
    request.selection = selection
    response = await ctx.models.call(request, ctx.session, node=node, iteration=iteration, on_token=stream)
    if stops.stopped_short(response):  # cut at the output limit, refused, filtered
        stops.take(ctx, agent, node, iteration, request, response)
        return True
    message, final, nudge = _interpret(response, text_mode, p.parts)
    p.parts = []
    message, arg_rails = await argrails.screen_turn(ctx, node, agent.name, message)  # before its entry
    screening = None
    if not message.tool_calls and final.strip():  # a final answer: the output rails first
        screening = await guard.check_answer(ctx, node, agent.name, iteration, final)
        response, message, final = guard.screened_reply(screening, response, message, final)
    # The call's record (with the script cursor after it) goes first: a crash between the
    # two leaves a record without an entry, and recovery then makes the call again.
    entry_id = new_id()
    ctx.models.record(response, ctx.session, node=node, agent=agent.name, iteration=iteration,
                      entry_id=entry_id, request=request)
    guard.record_answer(ctx, node, screening, entry_id, iteration)
    ctx.add_message(message, node=node, turn_id=f"{node}:{iteration}", entry_id=entry_id)
    if arg_rails is not None:
        arg_rails.record(ctx, node)
    if message.tool_calls:
        p.turn_open = entry_id
        ctx.checkpoints.reply_written()  # the reply and its record: on disk before its tools run
        return False
    p.iteration = iteration + 1
    if not final.strip():
        ctx.add_message(Message(role="user", content=nudge), node=node)
        return True
    if not guard.accept_answer(ctx, node, screening):
        return True  # a rail asked for a revision
    if not structured.accept(ctx, agent, node, final):
        return True  # not JSON that fits the agent's output_schema: the model tries again
    await argrails.summarize(ctx, agent, node, final)  # (through the memory write filter)
    return final


async def request_for(ctx: NodeContext, agent: Agent, node: str, iteration: int, specs: list[ToolSpec] | None = None,
                      text_mode: bool = False, route: routing.Route | None = None) -> LLMRequest:
    """The model request for ``agent``'s next turn at ``node`` in ``ctx``'s session, built in one
    place: the system prompt (with memories recalled for it), then history → the agent's view
    (its context budget: ``engine/compaction.py``, which may compact first) → the request, to
    the model ``route`` chose (default: the agent's primary)."""
    config = route.config if route is not None else ctx.models.config(agent.name)
    prompt = templating.rendered(ctx, agent.system_prompt, f"the system prompt of agent '{agent.name}'")
    system = memory.recall(ctx, agent, node, prompt)
    specs = specs or []
    if text_mode and specs:
        system = system + "\n\n" + textmode.instructions(specs)
    messages, marker = await compaction.prepare(ctx, agent, node, iteration, system, [] if text_mode else specs)
    if text_mode:
        messages = textmode.as_text_messages(messages)
        specs = []
    return LLMRequest(model=config.model, messages=messages, system=system, tools=specs,
                      temperature=agent.temperature, max_tokens=config.max_tokens,
                      endpoint=config.endpoint, api_key=config.api_key,
                      timeout=config.timeout_seconds, max_retries=config.max_retries,
                      fallback_model=config.fallback_model, agent=agent.name,
                      conversation_leaf=ctx.session.leaf, text_mode=text_mode,
                      compaction=marker._entry if marker is not None else None,
                      output_schema=None if text_mode else _schema(ctx, agent),
                      route=route.rule if route is not None else None)


def _schema(ctx: NodeContext, agent: Agent) -> dict | None:
    schema = structured.schema_of(ctx, agent)
    return schema.schema if schema is not None else None


def _interpret(response: LLMResponse, text_mode: bool, parts: list[str] | None = None) -> tuple[Message, str, str]:
    """The reply as a message, its final answer ("" when none) and, when it has neither tool
    calls nor an answer, what to tell the model before it tries again. ``parts``: the replies
    cut at the output limit that this one continues (the answer joins them)."""
    calls: list[LLMToolCall] = list(response.tool_calls)
    content = response.content
    final = "".join(parts or ()) + content
    nudge = "Your reply was empty. Call a tool or give your final answer."
    if text_mode and not calls:
        parsed = textmode.parse(final)
        if parsed.action:
            calls = [LLMToolCall(id=f"call_{new_id()[:8]}", name=parsed.action,
                                 arguments=parsed.arguments, raw_arguments=parsed.raw_arguments)]
            content = textmode.step_text(response.content)  # not its own made-up Observation
        elif parsed.final is not None:
            final = parsed.final
        elif parsed.labelled:  # only a Thought: not an answer, it thinks on
            final, nudge = "", textmode.NO_STEP
    tool_calls = [to_tool_call(c) for c in calls]
    return Message(role="assistant", content=content, tool_calls=tool_calls), final, nudge


async def _finish_turn(ctx: NodeContext, node: str, agent: Agent, policy: ToolPolicy, delegates: set[str],
                       pending: list[ToolCall], selector: Selector | None = None) -> None:
    turn = next(m for m in reversed(ctx.state.messages) if m.role == "assistant")
    pending = guard.release_held(ctx, node, pending)  # results a rail held: never run twice
    refused = turn_refusals(policy, turn.tool_calls, pending)
    # (a server that restarted or changed its tools shows its new definitions to the pin check)
    searches = {SEARCH} if selector is not None else set()
    local = delegates | searches  # (answered here, not by the registry)
    to_run = [(c, name) for c in pending if c.id not in refused and (name := c.full_name) not in local]
    await ctx.deps.tools().ready([name for _, name in to_run])
    for call, name in to_run:  # every pause is asked before any call of the turn runs
        check_before_call(ctx, node, call.id, name, call.arguments, f"Agent '{agent.name}'")
    budget.before_tool_calls(ctx, agent.name, node, sum(1 for c, _ in to_run if not declined(ctx, c.id)))
    jobs: list[Any] = []
    for call in pending:
        reason = refused.get(call.id) or declined(ctx, call.id)
        if reason:
            add_observation(ctx, node, call, "ERROR", reason)
        elif call.full_name in delegates:
            jobs.append(delegate(ctx, node, call, agent, react))
        elif call.full_name in searches:
            assert selector is not None
            jobs.append(selector.search(ctx, node, call))
        else:
            jobs.append(run_tool_call(ctx, node, call, policy))
    # Every call of the turn settles before a pause or a stop goes up: a sub-agent that
    # paused must not leave its siblings running unobserved.
    outcomes: list[Any]
    if len(jobs) == 1:  # the usual turn: awaited as it is (no task, no extra turns of the loop)
        try:
            outcomes = [await jobs[0]]
        except Exception as exc:
            outcomes = [exc]
    else:
        outcomes = await asyncio.gather(*jobs, return_exceptions=True)
    raise_first(outcomes)
    guard.settle_turn(ctx, node)  # a blocked result fails the node; a held one pauses


def raise_first(outcomes: list) -> None:
    """Re-raise what a group of concurrent jobs raised: an operator's cancel first (it ends
    everything), then a pause (it is what the person must see), then a real failure, and a
    stop last (it only says a sibling asked for it)."""
    errors = [o for o in outcomes if isinstance(o, BaseException)]
    for wanted in (CancelRun, PauseRun):
        for error in errors:
            if isinstance(error, wanted):
                raise error
    for error in errors:
        if not isinstance(error, Suspended):
            raise error
    if errors:
        raise errors[0]


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
