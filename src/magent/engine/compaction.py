"""The context budget (seed 000 ``memory_config.short_term``): history → view → request.

Every model request of an agent's ReAct loop is built in three steps, here and in
``react.request_for``: the session's *history* (every message, as on disk), the
agent's *view* of it, then the request. The view is the history as the agent's
latest compaction left it: the task, the compaction's summary (when its strategy
makes one) and the messages from its ``keep_from`` on. When the view would send
more tokens than the budget, a new compaction is made first (the strategies:
docs/guides/agents-and-workflows.md). It never splits a turn (an assistant message that
called tools stays with their results), and leaves the view at three quarters of the
budget, so it does not happen on every turn.

The compaction is appended to the history as an entry of its own (``entry_type:
compaction``: what was left out, up to which entry, and the summary), so the full
history stays on disk and in the trace, a resumed run rebuilds the same view from
the same entries, and a request costs the same however long the run has been going.

Tokens are counted with the model's tokenizer where litellm has one for it
(``LLMClient.count_tokens``), else estimated as ceil(characters / 4) per message (what
the scripted model reports). Without ``max_tokens`` the budget is 90% of the model's
input window as litellm's model map gives it; with neither there is no budget.
"""

from __future__ import annotations

import json
import math
from typing import Any

from magent import failpoints
from magent.engine.context import NodeContext
from magent.ids import new_id
from magent.llm.base import LLMRequest, ToolSpec
from magent.models import Agent, Message
from magent.models.agent import ShortTermMemory
from magent.models.state import Compaction
from magent.store.events import truncate

TARGET = 0.75
"""A compaction leaves the view at most this share of the budget."""
SUMMARY_SHARE = 0.2
"""Of the budget, what a summary may take (its ``max_tokens``)."""
WINDOW_SHARE = 0.9
"""Of the model's input window, the default budget (counting is approximate)."""
SUMMARY_SYSTEM = (
    "You condense a conversation so that an assistant can carry on with its task without it. "
    "Keep every fact, figure, name, decision and tool result that may still matter, and what is "
    "still to do. Leave out greetings and repetition. Write plain prose or short bullet points.")
SUMMARY_INTRO = "Summary of the earlier conversation (older messages are left out to fit the context budget):"


_DEFAULT = ShortTermMemory.model_construct()
"""The settings of an agent that gives none (read only): every field its default, so made without
building a validator a run would use for nothing else."""


def settings(ctx: NodeContext, agent: Agent) -> tuple[int | None, ShortTermMemory]:
    """The agent's budget in tokens (None: unbounded) and its short-term memory settings."""
    config = agent.memory_config.short_term if agent.memory_config is not None else _DEFAULT
    if config.max_tokens:
        return config.max_tokens, config
    window = _ask(ctx.models.client(agent.name, ctx.session), "context_window", ctx.models.config(agent.name).model)
    return (int(window * WINDOW_SHARE) if window else None), config


def view(messages: list[Message], agent: str) -> tuple[list[Message], Message | None]:
    """``agent``'s view of ``messages`` and the compaction it follows (None: the whole history).
    Compaction markers themselves are never part of a view."""
    markers = _markers(messages)
    marker = markers.latest.get(agent)
    if marker is None:
        if markers.latest:
            return [m for m in messages if m.compaction is None], None
        return messages, None
    return _apply(messages, marker), marker


class _Markers:
    """The compaction markers of one history, by agent, found by looking only at the messages
    appended since the last look (a history is append-only), so building a request does not
    scan the whole conversation each turn."""

    __slots__ = ("messages", "seen", "last", "latest")

    def __init__(self, messages: list[Message]):
        self.messages = messages
        self.seen = 0
        self.last: Message | None = None
        self.latest: dict[str, Message] = {}

    def update(self) -> "_Markers":
        messages = self.messages
        if self.seen > len(messages) or (self.seen and messages[self.seen - 1] is not self.last):
            _Markers.__init__(self, messages)  # not the history we scanned: start over
        for m in messages[self.seen:] if self.seen else messages:
            if m.compaction is not None:
                self.latest[m.compaction.agent] = m
        self.seen = len(messages)
        self.last = messages[-1] if messages else None
        return self


_SCANNED: dict[int, _Markers] = {}
_SCANNED_LIMIT = 64


def _markers(messages: list[Message]) -> _Markers:
    found = _SCANNED.get(id(messages))
    if found is None or found.messages is not messages:
        if len(_SCANNED) >= _SCANNED_LIMIT:
            _SCANNED.clear()
        found = _SCANNED[id(messages)] = _Markers(messages)
    return found.update()


def _apply(messages: list[Message], marker: Message) -> list[Message]:
    c = marker.compaction
    assert c is not None
    shown = list(messages[:c.pinned])
    if marker.content:
        shown.append(summary_message(marker.content))
    shown += [m for m in messages[c.keep_from:] if m.compaction is None]
    return shown


def latest(messages: list[Message], agent: str) -> Message | None:
    """The last compaction of ``agent``'s view in ``messages``."""
    return _markers(messages).latest.get(agent)


def summary_message(summary: str) -> Message:
    return Message(role="user", name="magent", content=f"{SUMMARY_INTRO}\n{summary}")


async def prepare(ctx: NodeContext, agent: Agent, node: str, iteration: int, system: str,
                  specs: list[ToolSpec]) -> tuple[list[Message], Message | None]:
    """The messages of ``agent``'s next request at ``node``: its view, after a compaction when
    the view would go over the budget. Returns the view and the compaction it follows."""
    messages = ctx.state.messages
    shown, marker = view(messages, agent.name)
    budget, config = settings(ctx, agent)
    if budget is None:
        return shown, marker
    count = Counter(ctx, agent)
    base = count.text(system) + count.tools(specs)
    total = base + sum(count.message(m) for m in shown)
    if total <= budget:
        return shown, marker
    if await _compact(ctx, agent, node, iteration, config, budget, base, total, marker, count):
        return view(messages, agent.name)
    return shown, marker


async def _compact(ctx: NodeContext, agent: Agent, node: str, iteration: int, config: ShortTermMemory, budget: int,
                   base: int, total: int, marker: Message | None, count: "Counter") -> bool:
    messages = ctx.state.messages
    pinned = 1 if messages and messages[0].role == "user" and messages[0].compaction is None else 0
    start = marker.compaction.keep_from if marker is not None and marker.compaction else pinned
    summarizes = config.strategy != "fifo"
    room = budget * TARGET - base - sum(count.message(m) for m in messages[:pinned])
    if summarizes or config.attempts:
        room -= budget * SUMMARY_SHARE
    # Where a kept part may start (never at a tool result: its call stays with it), and the
    # tokens from there to the end.
    starts: list[tuple[int, int]] = []
    tail = 0
    for i in range(len(messages) - 1, start - 1, -1):
        m = messages[i]
        if m.compaction is not None:
            continue
        tail += count.message(m)
        if m.role != "tool":
            starts.append((i, tail))
    starts.reverse()
    if len(starts) < 2:
        return False  # one turn left: nothing can give way
    fits = next((i for i, size in starts if size <= room), starts[-1][0])
    keep_from = max(starts[-config.keep_turns][0] if len(starts) >= config.keep_turns else start, fits) \
        if config.strategy == "hybrid" else fits
    dropped = [m for m in messages[start:keep_from] if m.compaction is None]
    if not dropped:
        return False
    entry_id = new_id()
    summary = ""
    previous = marker.content if marker is not None else ""
    if summarizes:
        summary = await _summarize(ctx, agent, node, iteration, previous, dropped, budget, entry_id)
    elif config.attempts:
        summary = attempts(previous, dropped, int(budget * SUMMARY_SHARE), count)
    after = base + sum(count.message(m) for m in messages[:pinned]) + sum(
        count.message(m) for m in messages[keep_from:] if m.compaction is None)
    if summary:
        after += count.message(summary_message(summary))
    c = Compaction(agent=agent.name, strategy=config.strategy, keep_from=keep_from, pinned=pinned,
                   dropped=len(dropped), through=dropped[-1]._entry, budget=budget,
                   tokens_before=total, tokens_after=after)
    ctx.add_message(Message(role="system", name="magent", content=summary, compaction=c), node=node,
                    entry_id=entry_id)
    ctx.bus.emit("compaction", node, agent=agent.name, strategy=c.strategy, dropped=c.dropped,
                 kept=sum(1 for m in messages[keep_from:] if m.compaction is None), through=c.through,
                 budget=budget, tokens_before=total, tokens_after=after, entry_id=entry_id,
                 summary=truncate(ctx.deps.redactor.text(summary), 500) or None)
    failpoints.hit("after_compaction_entry")
    return True


async def _summarize(ctx: NodeContext, agent: Agent, node: str, iteration: int, previous: str,
                     dropped: list[Message], budget: int, entry_id: str) -> str:
    """The model's summary of ``dropped`` (and of the summary they follow)."""
    config = ctx.models.config(agent.name)
    parts = []
    if previous:
        parts.append(f"The summary so far:\n{previous}\n")
    parts.append("The conversation to condense" + (" into it" if previous else "") + ":")
    parts += [_as_line(m) for m in dropped]
    request = LLMRequest(model=config.model, messages=[Message(role="user", content="\n".join(parts))],
                         system=SUMMARY_SYSTEM, temperature=0.0, max_tokens=max(64, int(budget * SUMMARY_SHARE)),
                         endpoint=config.endpoint, api_key=config.api_key, timeout=config.timeout_seconds,
                         max_retries=config.max_retries, fallback_model=config.fallback_model,
                         agent=agent.name, purpose="summary")
    response = await ctx.models.call(request, ctx.session, node=node, iteration=iteration)
    ctx.models.record(response, ctx.session, node=node, agent=agent.name, iteration=iteration, entry_id=entry_id,
                        request=request)
    return response.content.strip()


ATTEMPTS_INTRO = "Earlier attempts (one line per tool call):"


def attempts(previous: str, dropped: list[Message], limit: int, count: "Counter") -> str:
    """Seed 003's compressed ``attempts``: the previous ones and a line per tool call in ``dropped``
    (``name(arguments) → the start of its result``), the latest kept within ``limit`` tokens."""
    results = {m.tool_call_id: m.content for m in dropped if m.role == "tool"}
    lines = [line for line in previous.splitlines()[1:] if line.startswith("- ")] if previous else []
    for m in dropped:
        for c in m.tool_calls:
            args = json.dumps(c.arguments, ensure_ascii=False)
            args = args if len(args) <= 60 else args[:57] + "..."
            result = " ".join(results.get(c.id, "(no result)").split()[:12])
            lines.append(f"- {c.full_name}({args}) → {result}")
    while lines and count.text("\n".join([ATTEMPTS_INTRO, *lines])) > limit:
        lines.pop(0)
    return "\n".join([ATTEMPTS_INTRO, *lines]) if lines else ""


def _as_line(m: Message) -> str:
    who = m.name if m.role == "tool" and m.name else m.role
    text = m.content
    if m.tool_calls:
        calls = "; ".join(f"{c.full_name}({json.dumps(c.arguments, ensure_ascii=False)})" for c in m.tool_calls)
        text = (text + " " if text else "") + f"[called {calls}]"
    return f"{who}: {text}"


class Counter:
    """Token counts for one agent's model, each message counted once per run."""

    def __init__(self, ctx: NodeContext, agent: Agent):
        self.model = ctx.models.config(agent.name).model
        self.cache = ctx.models.token_counts.setdefault(self.model, {})
        self.client = ctx.models.client(agent.name, ctx.session)

    def text(self, text: str) -> int:
        if not text:
            return 0
        counted = _ask(self.client, "count_tokens", self.model, text)
        return counted if counted is not None else math.ceil(len(text) / 4)

    def tools(self, specs: list[ToolSpec]) -> int:
        return self.text(json.dumps([{"name": s.name, "description": s.description, "parameters": s.parameters}
                                     for s in specs])) if specs else 0

    def message(self, m: Message) -> int:
        key = m._entry
        if key is not None and key in self.cache:
            return self.cache[key]
        text = m.content + "".join(c.tool + json.dumps(c.arguments) for c in m.tool_calls)
        n = self.text(text)
        if key is not None:
            self.cache[key] = n
        return n


def _ask(client: Any, method: str, *args: Any) -> Any:
    """``client.method(*args)`` when the client has it (test doubles may not), else None."""
    fn = getattr(client, method, None)
    return fn(*args) if fn is not None else None


def recorded_view(messages: list[Message], compaction: str | None) -> list[Message]:
    """The view a recorded request sent: ``messages`` (a history) as the compaction entry
    ``compaction`` left it (None: the history without compaction markers)."""
    marker = next((m for m in reversed(messages) if compaction is not None and m._entry == compaction), None)
    if marker is None or marker.compaction is None:
        return [m for m in messages if m.compaction is None]
    return _apply(messages, marker)
