"""Traces: the TraceLog built from a task's events, and ``magent trace``'s views of it."""

from magent.trace.actions import attempts, compress_actions, hydrate
from magent.trace.build import build_trace, build_trace_doc, write_trace

__all__ = ["attempts", "build_trace", "build_trace_doc", "compress_actions", "hydrate", "write_trace"]
