"""The built-in memory tools: ``memory.search``, ``memory.remember``, ``memory.forget``, acting for
the calling agent (``tools.base.current_call``). A remember repeated by a resumed task returns the
memory stored the first time."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from magent.errors import MagentError
from magent.models.memory import MEMORY_TYPES, SCOPES
from magent.tools.base import current_call
from magent.tools.function import FunctionProvider, ToolFailure

if TYPE_CHECKING:
    from magent.memory.run import RunMemory


def memory_provider(run: "RunMemory") -> FunctionProvider:
    def caller() -> tuple[str | None, str | None]:
        call = current_call.get()
        return (call.agent, call.call_id) if call else (None, None)

    def record(type_: str, **fields: Any) -> None:
        """Into the trace, beside the call's result: what was written or removed."""
        call = current_call.get()
        if call is not None and call.emit is not None:
            call.emit(type_, call.node, agent=call.agent, call_id=call.call_id, **fields)

    def search(query: str, top_k: int = 5, memory_type: str | None = None) -> Any:
        agent, _ = caller()
        try:
            memory = run.memory(agent)
            result = memory.search(query, visible=run.caller(agent).visible(), top_k=top_k,
                                   types=[memory_type] if memory_type else (), touch=True)
        except MagentError as exc:
            raise ToolFailure(str(exc)) from None
        hits = [{"id": h.entry.id[:8], "content": h.entry.content, "memory_type": h.entry.memory_type,
                 "score": round(h.score, 3), "why": h.why(), "scope": h.entry.scope_label,
                 "created_at": h.entry.created_at.isoformat(timespec="seconds")} for h in result.hits]
        if result.notes:
            return {"memories": hits, "notes": result.notes}
        return hits if hits else "no memories match"

    def remember(content: str, memory_type: str = "semantic", importance: float = 0.5,
                 tags: list[str] | None = None, scope: str | None = None) -> str:
        agent, call_id = caller()
        who = run.caller(agent)
        # default: the agent's memory.scope; a workflow's tool node writes for the workflow;
        # a person (magent tools call) for everyone
        scope = scope or (run.config(agent).scope if agent else "workflow" if run.workflow else "global")
        key = None
        if run.task_id and call_id:
            from magent.memory.service import idempotency_key

            key = idempotency_key("call", run.task_id, call_id, scope, content)
        try:
            stored = run.memory(agent).remember(content, caller=who, memory_type=memory_type,
                                                importance=importance, tags=tags or [], scope=scope,
                                                source="agent", key=key)
        except MagentError as exc:
            raise ToolFailure(str(exc)) from None
        run.wrote = True
        e = stored.entry
        record("memory_stored", **run.stored_fields(stored, "memory"))
        text = (f"remembered [{e.id[:8]}] ({e.memory_type}, {e.scope_label})" if stored.stored
                else f"already remembered [{e.id[:8]}] ({e.memory_type}, {e.scope_label})")
        return text + "".join(f"; note: {n}" for n in stored.notes)

    def forget(id: str) -> str:  # noqa: A002 (the tool's argument is called id)
        agent, _ = caller()
        try:
            entry = run.memory(agent).forget(id, visible=run.caller(agent).visible())
        except MagentError as exc:
            raise ToolFailure(f"{exc} (it may have been forgotten already)") from None
        run.wrote = True
        record("memory_forgotten", id=entry.id, scope=entry.scope_label,
               content=run.shown(entry.content))
        return f"forgot [{entry.id[:8]}]: {entry.content[:80]}"

    p = FunctionProvider("memory")
    p.add("search", search,
          "Search long-term memory (facts, past tasks, procedures kept across tasks) for memories "
          "relevant to a query. Returns the best matches with their ids and scores.",
          {"type": "object", "properties": {
              "query": {"type": "string", "description": "Words to look for (or full-text syntax)."},
              "top_k": {"type": "integer", "minimum": 1, "maximum": 50, "default": 5},
              "memory_type": {"type": "string", "enum": list(MEMORY_TYPES)}},
           "required": ["query"]}, idempotent=True)
    p.add("remember", remember,
          "Store something worth knowing in later tasks (a fact, a preference, how something is "
          "done). It stays after this task ends.",
          {"type": "object", "properties": {
              "content": {"type": "string", "minLength": 1, "description": "The memory, self-contained."},
              "memory_type": {"type": "string", "enum": list(MEMORY_TYPES), "default": "semantic",
                              "description": "semantic: a fact; episodic: what happened; "
                                             "procedural: how to do something."},
              "importance": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.5},
              "tags": {"type": "array", "items": {"type": "string"}},
              "scope": {"type": "string", "enum": list(SCOPES),
                        "description": "Who may read it: this agent, this workflow, or everyone."}},
           "required": ["content"]}, idempotent=True)
    p.add("forget", forget, "Delete a memory by its id (as memory.search shows it).",
          {"type": "object", "properties": {"id": {"type": "string", "minLength": 4}},
           "required": ["id"]}, idempotent=True)
    return p
