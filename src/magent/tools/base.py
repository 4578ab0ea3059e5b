"""The interface every tool source implements: built-in connectors and MCP servers alike."""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Literal, Protocol

from magent.models import Tool

Outcome = Literal["SUCCESS", "FAILURE", "ERROR", "TIMEOUT"]
"""Seed 003: SUCCESS ran and worked; FAILURE ran and reported failure (e.g. file not
found, MCP ``isError``); ERROR could not run (crash, bad arguments, unknown tool);
TIMEOUT exceeded its time limit."""


@dataclass
class ToolResult:
    outcome: Outcome
    content: str
    """Text the model sees as the observation (possibly truncated, with a marker)."""
    data: Any = None
    """Structured result when the tool gave one."""
    error: str | None = None
    duration_ms: int = 0
    artifact: str | None = None
    """Path (relative to the task directory) of the full output when ``content`` was truncated."""
    tool: str = ""
    """Full name of the tool that produced this result (differs from the one asked for after a fallback)."""
    notes: list[str] = field(default_factory=list)
    """Extra facts for the trace: fallbacks taken, server restarts, stderr tail."""
    attempts: list[dict[str, Any]] = field(default_factory=list)
    """When the call was made more than once (``tools.attempts``): each attempt's number, outcome
    and duration, the failed ones with their error and the wait after them; empty otherwise."""

    @property
    def ok(self) -> bool:
        return self.outcome == "SUCCESS"


class ToolProvider(Protocol):
    """A named source of tools: ``kv`` for the built-in key-value store, an MCP server's name..."""

    name: str

    async def start(self) -> None:
        """Connect or spawn; raise ``magent.errors.ToolError`` with a clear message on failure."""
        ...

    async def list_tools(self) -> list[Tool]:
        ...

    async def call(self, tool: str, arguments: dict[str, Any], timeout: float) -> ToolResult:
        """Run ``tool`` (name without the server part); failures come back as a result, never raised."""
        ...

    async def close(self) -> None:
        ...


@dataclass(frozen=True)
class CallContext:
    """Who is calling a tool. The engine sets it around each call (``calling``); an in-process
    tool that needs to know (``memory.*``: whose memories, which call) reads ``current_call``."""

    task_id: str | None = None
    agent: str | None = None
    """The agent whose model asked for the call; None for a workflow's tool node."""
    node: str | None = None
    call_id: str | None = None
    """The call's id, stable across a resume (it is in the conversation)."""
    emit: Callable[..., Any] | None = None
    """The calling session's ``bus.emit``: an in-process tool records in the trace what it did
    beyond its result (``memory.remember``: what it stored). None outside a run."""
    elicitation: str | None = None
    """How an MCP server's question during the call is answered when no person is asked
    (``decline``, ``cancel``, ``defaults``; ``tools.mcp_elicit``). None: decline."""
    record: Callable[..., None] | None = None
    """``record(type, **fields)``: an event about the call into the run's trace, masked (an MCP
    server's question and its answer). None outside a run."""
    output: Callable[[str, str], None] | None = None
    """``output(stream, line)``: a line a tool printed (``stdout``/``stderr``) while it runs, for
    the live view and ``--json --stream`` only (masked; never in events.jsonl). None when no one
    watches."""


current_call: ContextVar[CallContext | None] = ContextVar("magent_current_call", default=None)


@contextmanager
def calling(context: CallContext) -> Iterator[None]:
    token = current_call.set(context)
    try:
        yield
    finally:
        current_call.reset(token)
