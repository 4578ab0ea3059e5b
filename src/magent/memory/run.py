"""What a run does with long-term memory (``RunMemory``, sharing one connection with the
``memory.*`` tools, opened on first use).

``recall`` puts relevant memories from earlier tasks into the system prompt before each turn
(never into the conversation: the stored history stays what was said); ``summarize`` stores an
episodic summary once per task and agent. Every write carries an idempotency key from the task
and the tool call, so a resumed task repeating a write gets the first one back. Memory never
fails a run: a broken database or embedding model is a ``warning`` and the run goes on."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from magent.errors import MagentError
from magent.ids import now
from magent.models.memory import AgentMemory

if TYPE_CHECKING:
    from magent.memory.service import Caller, Memory, Stored
    from magent.models import Agent

RECALL_QUERY_CHARS = 2000
SUMMARY_CHARS = 2000
SHOWN_CHARS = 200
"""Characters of each recalled memory the trace keeps."""


@dataclass(eq=False)
class RunMemory:
    task_id: str | None
    workflow: str | None
    agents: dict[str, AgentMemory | None] = field(default_factory=dict)
    redact: Any = None
    """text → text: the run's redactor (the task's secrets and the home's patterns)."""
    _memory: Memory | None = None
    _warned: set[str] = field(default_factory=set)
    _recalled: dict[tuple[str, str, str], tuple[str, ...]] = field(default_factory=dict)
    _embedders: dict[str | None, Memory] = field(default_factory=dict)
    wrote: bool = False

    @classmethod
    def for_graph(cls, graph: Any, task_id: str | None, redact: Any = None) -> "RunMemory":
        """The run's memory; a broken ``config/memory.yaml`` fails here, before the run (exit 2)."""
        agents = {name: loaded.agent.memory for name, loaded in graph.agents.items()}
        uses = any(agents.values()) or any(p.startswith("memory.") for loaded in graph.agents.values()
                                           for p in loaded.agent.tools)
        if uses:  # read here, so a broken file is a config error; the database waits for first use
            from magent import paths
            from magent.config.files import load_memory_settings

            load_memory_settings(paths.memory_settings_file())
        return cls(task_id=task_id, workflow=graph.name, agents=agents, redact=redact)

    def caller(self, agent: str | None) -> Caller:
        from magent.memory.service import Caller

        return Caller(agent=agent, workflow=self.workflow, task_id=self.task_id)

    def config(self, agent: str | None) -> AgentMemory:
        return (self.agents.get(agent or "") or AgentMemory())

    def memory(self, agent: str | None = None) -> Memory:
        """The open memory (raises the store's clear error when it cannot be opened)."""
        from magent.memory.service import Memory

        if self._memory is None:
            self._memory = Memory.open(redact=self.redact)
        model = self.config(agent).embedding_model
        if model and model != self._memory.embedding_model:
            if model not in self._embedders:
                self._embedders[model] = Memory(self._memory.store, self._memory.settings,
                                                redact=self._memory.redact, embedding_model=model)
            return self._embedders[model]
        return self._memory

    def finish(self, ctx: Any) -> None:
        """The run's end (before ``run_finished``): consolidate if the settings ask for it after
        a task that wrote memories, and say what it did in the trace."""
        if self._memory is None or not self.wrote or not self._memory.settings.consolidation.after_task:
            return
        self.wrote = False  # once per run end
        from magent.memory.consolidate import consolidate

        try:
            report = consolidate(self._memory)
        except MagentError as exc:
            self._warn(ctx, None, f"memory consolidation after the task failed: {exc}")
            return
        ctx.bus.emit("memory_consolidated", None, summary=report.summary(),
                     merged=[m.duplicate for m in report.merged], archived=[c.id for c in report.archived],
                     decayed=len(report.decayed), evict=report.evict or None, notes=report.notes or None)

    def close(self) -> None:
        if self._memory is not None:
            self._memory.close()
            self._memory = None

    # before a model turn
    def recall(self, ctx: Any, agent: "Agent", node: str, system: str) -> str:
        """``system`` with the memories relevant to the task appended (unchanged when there are none)."""
        config = agent.memory
        if config is None or not config.long_term:
            return system
        query = _task_query(ctx)
        try:
            memory = self.memory(agent.name)
            result = memory.search(query, visible=self.caller(agent.name).visible(), top_k=config.top_k,
                                   min_score=config.min_score, exclude_task=self.task_id)
        except MagentError as exc:
            self._warn(ctx, node, f"long-term memory is unavailable for this turn: {exc}")
            return system
        for note in result.notes:
            self._warn(ctx, node, f"memory: {note}")
        ids = tuple(h.entry.id for h in result.hits)
        where = (_session_id(ctx), agent.name, node)
        if self._recalled.get(where) != ids:
            self._recalled[where] = ids
            ctx.bus.emit("memory_recalled", node, agent=agent.name, query=query[:300], mode=result.mode,
                         hits=[{**h.as_dict(), "memory_type": h.entry.memory_type,
                                "scope": h.entry.scope_label,
                                "content": _short(h.entry.content, SHOWN_CHARS)} for h in result.hits],
                         notes=result.notes or None)
            try:  # counted as used once per distinct recall, not once per turn
                memory.store.touch([h.rowid for h in result.hits], now())
            except MagentError as exc:
                self._warn(ctx, node, f"memory: could not record the recall ({exc})")
        if not result.hits:
            return system
        lines = [system.rstrip(), "", "## Memories from earlier tasks",
                 "Retrieved from long-term memory for this task, most relevant first. Use them if they "
                 "help; they may be out of date."]
        for hit in result.hits:
            e = hit.entry
            lines.append(f"- [{e.id[:8]}] ({e.memory_type}, {e.created_at:%Y-%m-%d}) {e.content}")
        return "\n".join(lines)

    # when an agent's node finishes
    def summarize(self, ctx: Any, agent: "Agent", node: str, answer: str) -> None:
        config = agent.memory
        if config is None or not config.summarize_on_finish:
            return
        description = _first_user_message(ctx)
        content = _short(f"Task: {description}\nAnswer from {agent.name}: {answer}", SUMMARY_CHARS)
        from magent.memory.service import idempotency_key

        key = idempotency_key("summary", self.task_id or "", agent.name)
        try:
            stored = self.memory(agent.name).remember(
                content, caller=self.caller(agent.name), memory_type="episodic", scope=config.scope,
                tags=["task-summary"], source="system", key=key, replace=True)
        except MagentError as exc:
            self._warn(ctx, node, f"could not store the task summary in long-term memory: {exc}")
            return
        self.wrote = True
        ctx.bus.emit("memory_stored", node, agent=agent.name, **self.stored_fields(stored, "summary"))

    @staticmethod
    def stored_fields(stored: Stored, kind: str) -> dict[str, Any]:
        """A ``memory_stored`` event's fields: which memory, where, what (shortened). ``again``:
        it was there already (a resumed task repeating a write); ``replaced`` for a summary."""
        e = stored.entry
        repeat = not stored.stored or None
        return {"id": e.id, "kind": kind, "memory_type": e.memory_type, "scope": e.scope_label,
                "content": _short(e.content, SHOWN_CHARS), "notes": stored.notes or None,
                ("replaced" if kind == "summary" else "again"): repeat}

    @staticmethod
    def shown(text: str) -> str:
        return _short(text, SHOWN_CHARS)

    def _warn(self, ctx: Any, node: str | None, message: str) -> None:
        if message not in self._warned:  # once per distinct problem, not every turn
            self._warned.add(message)
            ctx.bus.emit("warning", node, message=message)


def _session_id(ctx: Any) -> str:
    session = getattr(ctx, "session", None)
    return str(getattr(session, "id", "") or "")


def _first_user_message(ctx: Any) -> str:
    """What the agent was asked: its session's first user message (the task, for the main one)."""
    return next((m.content for m in ctx.state.messages if m.role == "user" and m.content),
                ctx.deps.task.description)


def _task_query(ctx: Any) -> str:
    """What the task is about: its first user message, and the latest one when it differs
    (a node's prompt, a person's message)."""
    users = [m.content for m in ctx.state.messages if m.role == "user" and m.content]
    if not users:
        return ctx.deps.task.description[:RECALL_QUERY_CHARS]
    parts = [users[0]] + ([users[-1]] if len(users) > 1 and users[-1] != users[0] else [])
    return "\n".join(parts)[:RECALL_QUERY_CHARS]


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def of(ctx: Any) -> RunMemory:
    """The run's memory (made here if the run's registry was built without one)."""
    run = getattr(ctx.deps.registry, "memory", None)
    if run is None:
        run = RunMemory.for_graph(ctx.deps.graph, ctx.deps.task.id, ctx.deps.redactor.text)
        ctx.deps.registry.memory = run
    return run


def recall(ctx: Any, agent: "Agent", node: str, system: str) -> str:
    """The engine's hook before a model turn (see ``RunMemory.recall``)."""
    if agent.memory is None or not agent.memory.long_term:
        return system
    return of(ctx).recall(ctx, agent, node, system)


def summarize(ctx: Any, agent: "Agent", node: str, answer: str) -> None:
    """The engine's hook when an agent's node finishes (see ``RunMemory.summarize``)."""
    if agent.memory is not None and agent.memory.summarize_on_finish:
        of(ctx).summarize(ctx, agent, node, answer)


def finish(ctx: Any) -> None:
    """The engine's hook when a run ends (see ``RunMemory.finish``)."""
    run = getattr(ctx.deps.registry, "memory", None)
    if run is not None:
        run.finish(ctx)
