"""Traces: the TraceLog built from a task's events, and ``magent trace``'s views of it.

The names below are imported on first use (PEP 562): a run reads its telemetry settings
(``magent.trace.telemetry``) at start-up without loading the trace builder."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from magent.trace.actions import attempts as attempts
    from magent.trace.actions import compress_actions as compress_actions
    from magent.trace.actions import hydrate as hydrate
    from magent.trace.build import build_trace as build_trace
    from magent.trace.build import build_trace_doc as build_trace_doc
    from magent.trace.build import write_trace as write_trace

_WHERE = {"attempts": "actions", "compress_actions": "actions", "hydrate": "actions",
          "build_trace": "build", "build_trace_doc": "build", "write_trace": "build"}

__all__ = ["attempts", "build_trace", "build_trace_doc", "compress_actions", "hydrate", "write_trace"]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
