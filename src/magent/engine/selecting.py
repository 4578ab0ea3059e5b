"""Which of an agent's tools each model request carries (an agent's ``tool_selection:``, ranked
by ``tools.selection``; what it does: docs/guides/tools-and-mcp.md). The tools ``tools.search``
found are read back from the session's history (its results are entries), so a resumed run,
even after kill -9, carries what the run before it had found, and nothing else is kept.

Each request's choice, with every carried tool's score and reason, goes into its
``llm_call`` event (``request.selection``); ``magent trace ID --step N`` and ``--request``
show it. The request itself names its tool set in requests.jsonl like any other.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from magent.errors import ConfigError, LLMError
from magent.llm.base import ToolSpec
from magent.models import Agent, Message, ToolCall
from magent.tools.base import ToolResult
from magent.tools.selection import Scored, bm25, cosine, document, rank

if TYPE_CHECKING:
    from magent.engine.context import NodeContext

SEARCH = "tools.search"
"""The built-in tool that finds the tools a request left out."""
SEARCH_SPEC = ToolSpec(
    name=SEARCH,
    description=("Find more of your tools by what they should do. Only some of your tools are offered "
                 "at a time; the tools this finds are offered from your next turn on."),
    parameters={"type": "object", "properties": {"query": {
        "type": "string", "description": "What the tool should do, in a few words."}}, "required": ["query"]})
SEARCH_LIMIT = 5
"""At most this many tools are found by one search."""
RECENT = 4
"""How many of the latest messages the ranking reads besides the task."""
QUERY_CHARS = 1000
"""At most this much of each message goes into the query."""


class Selector:
    """One agent's choice of tools at one node visit; ``for_agent`` makes it (None: the agent
    carries all its tools)."""

    def __init__(self, agent: Agent, specs: list[ToolSpec], stats: dict[str, tuple[int, int]],
                 embedder: Any = None):
        assert agent.tool_selection is not None
        self.config = agent.tool_selection
        self.specs = specs
        self.names = {s.name for s in specs}
        self.stats = stats
        self.embedder = embedder
        """The embedding model (``memory.vectors.Embedder``) when one is configured, else None."""
        self.method = f"embedding {embedder.model}" if embedder is not None else "bm25"
        self._vectors: list[Any] | None = None

    @classmethod
    def for_agent(cls, ctx: NodeContext, agent: Agent, specs: list[ToolSpec]) -> "Selector | None":
        if agent.tool_selection is None or not specs:
            return None
        from magent.store.toolstats import read_stats

        try:
            embedder = _embedder(agent)
        except ConfigError as exc:  # (a broken memory.yaml: the run goes on, ranking by text)
            ctx.bus.emit("warning", None, message=f"tool selection: {exc}; ranking by BM25 instead")
            embedder = None
        return cls(agent, specs, read_stats(ctx.deps.task_dir.store.root), embedder)

    async def choose(self, ctx: NodeContext, node: str, messages: list[Message] | None = None,
                     ) -> tuple[list[ToolSpec], dict[str, Any]]:
        """The tools the next request carries (the allowed tools' order, ``tools.search`` last)
        and the record of why, for its ``llm_call`` event. ``messages``: the history to choose
        for (default: the session's)."""
        messages = ctx.state.messages if messages is None else messages
        ranked = await self._rank(ctx, node, query_of(messages), self.specs)
        found = found_tools(messages, self.names)
        why: dict[str, dict[str, Any]] = {name: {"by": "always"} for name in self.config.always if name in self.names}
        why.update({name: {"by": "search"} for name in sorted(found) if name not in why})
        pool = [s for s in ranked if s.name not in why and s.score >= self.config.min_score]
        why.update({s.name: {"by": "top_k"} for s in pool[:self.config.top_k]})
        for place, scored in enumerate(ranked, 1):
            if scored.name in why:
                why[scored.name].update(rank=place, score=scored.score, relevance=scored.relevance,
                                        success=scored.success, calls=scored.calls)
        carried = [s for s in self.specs if s.name in why]
        left_out = len(self.specs) - len(carried)
        if left_out:
            carried.append(SEARCH_SPEC)
        record = {"method": self.method, "allowed": len(self.specs), "left_out": left_out,
                  "carried": [{"tool": s.name, **why[s.name]} for s in carried if s.name in why]}
        return carried, record

    async def search(self, ctx: NodeContext, node: str, call: ToolCall) -> None:
        """Make one ``tools.search`` call: its result (the tools found, best first, among those
        the request that asked did not carry) is the call's observation, and those tools are
        carried from the next request on."""
        from magent.engine.tooluse import add_observation

        started = time.perf_counter()
        ctx.bus.emit("tool_call", node, call_id=call.id, tool=SEARCH, arguments=ctx.deps.redactor.data(call.arguments))
        query = call.arguments.get("query") if call.raw_arguments is None else None
        if not isinstance(query, str) or not query.strip():
            add_observation(ctx, node, call, "ERROR", f"{SEARCH} needs a 'query' argument: what the tool "
                            "should do, as text")
            return
        history = ctx.state.messages
        asked = max((i for i, m in enumerate(history) if any(c.id == call.id for c in m.tool_calls)), default=0)
        offered = {s.name for s in (await self.choose(ctx, node, history[:asked]))[0]}  # (as it was chosen)
        others = [s for s in self.specs if s.name not in offered]
        ranked = [s for s in await self._rank(ctx, node, query, others) if s.relevance > 0][:SEARCH_LIMIT]
        by_name = {s.name: s for s in self.specs}
        if ranked:
            text = (f"Found {len(ranked)} tool{'' if len(ranked) == 1 else 's'}; from your next turn on "
                    "you can call:\n" + "\n".join(f"- {s.name}: {by_name[s.name].description}" for s in ranked))
        else:
            text = f"No other tool of yours matches {query!r}."
        result = ToolResult(outcome="SUCCESS", content=text, tool=SEARCH,
                            duration_ms=int((time.perf_counter() - started) * 1000),
                            notes=[f"{s.name}: {s.why()}" for s in ranked])
        add_observation(ctx, node, call, "SUCCESS", text, result)

    async def _rank(self, ctx: NodeContext, node: str, query: str, specs: list[ToolSpec]) -> list[Scored]:
        if self.embedder is not None:
            try:
                vectors = await self._doc_vectors()
                asked = await asyncio.to_thread(self.embedder.query, query)  # (kept for the same text)
                index = {s.name: i for i, s in enumerate(self.specs)}
                return rank([cosine(asked, vectors[index[s.name]]) for s in specs], specs, self.stats)
            except LLMError as exc:  # (said once; BM25 ranks from here on)
                ctx.bus.emit("warning", node, message=f"tool selection: {exc}; ranking by BM25 instead")
                self.embedder, self.method = None, "bm25"
        return rank(bm25(query, [document(s) for s in specs]), specs, self.stats)

    async def _doc_vectors(self) -> list[Any]:
        if self._vectors is None:
            made: list[Any] = await asyncio.to_thread(self.embedder.embed, [document(s) for s in self.specs])
            self._vectors = made
            return made
        return self._vectors


def _embedder(agent: Agent) -> Any:
    """The embedding model of ``config/memory.yaml`` (or the agent's ``memory.embedding_model``)."""
    from magent import paths
    from magent.config.files import load_memory_settings

    override = agent.memory.embedding_model if agent.memory is not None else None
    settings = load_memory_settings(paths.memory_settings_file()).settings
    if not (override or settings.embedding_model):
        return None
    from magent.memory.vectors import Embedder

    return Embedder.configured(settings, override)


def query_of(messages: list[Message]) -> str:
    """What the tools are ranked against: the task (the first user message) and the latest
    messages, with the names of the tools they called (a search's words, not its result: the
    tools it found are carried anyway)."""
    first = next((m for m in messages if m.role == "user" and m.content), None)
    recent = [m for m in messages[-RECENT:] if m is not first and m.name != SEARCH]
    parts = [first.content[:QUERY_CHARS]] if first is not None else []
    for message in recent:
        parts.append(message.content[:QUERY_CHARS])
        for call in message.tool_calls:
            searched = call.full_name == SEARCH and isinstance(call.arguments.get("query"), str)
            parts.append(call.arguments["query"][:QUERY_CHARS] if searched else call.full_name)
    return "\n".join(p for p in parts if p)


def found_tools(messages: list[Message], allowed: set[str]) -> set[str]:
    """The tools ``tools.search`` found in this history (from its results, as the model read them)."""
    found: set[str] = set()
    for message in messages:
        if message.role == "tool" and message.name == SEARCH and message.content.startswith("Found "):
            for line in message.content.splitlines()[1:]:
                name = line[2:].split(":", 1)[0] if line.startswith("- ") else ""
                if name in allowed:
                    found.add(name)
    return found
