"""In-process tools: plain Python functions behind the ToolProvider interface."""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Union

from magent.models import Tool
from magent.tools.base import ToolResult

ToolFn = Callable[..., Union[Any, Awaitable[Any]]]


class ToolFailure(Exception):
    """Raised by an in-process tool to report that it ran but failed (outcome FAILURE)."""


@dataclass(eq=False)
class FunctionTool:
    tool: Tool
    fn: ToolFn


def result_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


class FunctionProvider:
    """A named group of Python functions offered as tools ``name.fn``."""

    bounds_its_calls = True
    """A call returns within its timeout or not at all: a coroutine is awaited under it, a plain
    function runs to its end (no outer wait could stop it either)."""

    def __init__(self, name: str, tools: list[FunctionTool] | None = None):
        self.name = name
        self._tools: dict[str, FunctionTool] = {}
        for t in tools or []:
            self._tools[t.tool.name] = t

    def add(self, name: str, fn: ToolFn, description: str = "",
            input_schema: dict[str, Any] | None = None, **settings: Any) -> None:
        tool = Tool(name=name, server=self.name, description=description or (fn.__doc__ or "").strip(),
                    input_schema=input_schema or {"type": "object", "properties": {}}, **settings)
        self._tools[name] = FunctionTool(tool=tool, fn=fn)

    async def start(self) -> None:
        return None

    async def list_tools(self) -> list[Tool]:
        return [t.tool for t in self._tools.values()]

    async def call(self, tool: str, arguments: dict[str, Any], timeout: float) -> ToolResult:
        entry = self._tools.get(tool)
        if entry is None:
            return ToolResult(outcome="ERROR", content=f"no tool {tool!r} on {self.name}",
                              error="unknown tool")
        started = time.perf_counter()
        try:
            value = entry.fn(**arguments)
            if inspect.isawaitable(value):
                value = await asyncio.wait_for(value, timeout)
        except asyncio.TimeoutError:
            return ToolResult(outcome="TIMEOUT", content=f"timed out after {timeout:g}s",
                              error=f"timed out after {timeout:g}s", duration_ms=_ms(started))
        except ToolFailure as exc:
            return ToolResult(outcome="FAILURE", content=str(exc), error=str(exc), duration_ms=_ms(started))
        except TypeError as exc:
            return ToolResult(outcome="ERROR", content=f"bad arguments: {exc}", error=str(exc),
                              duration_ms=_ms(started))
        except Exception as exc:  # a tool's crash is an observation, never the run's crash
            msg = f"{type(exc).__name__}: {exc}"
            return ToolResult(outcome="ERROR", content=msg, error=msg, duration_ms=_ms(started))
        return ToolResult(outcome="SUCCESS", content=result_text(value), data=value,
                          duration_ms=_ms(started))

    async def close(self) -> None:
        return None


def _ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)
