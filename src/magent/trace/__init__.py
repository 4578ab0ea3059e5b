"""Traces: the TraceLog built from a task's events, and ``magent trace``'s views of it."""

from magent.trace.build import build_trace, write_trace

__all__ = ["build_trace", "write_trace"]
