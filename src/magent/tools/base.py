"""The interface every tool source implements: built-in connectors and MCP servers alike."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

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
        """Run ``tool`` (name without the server part). Never raises for tool failures:
        they come back as a result with outcome FAILURE, ERROR or TIMEOUT."""
        ...

    async def close(self) -> None:
        ...
