"""Traces: the TraceLog built from a task's events, and ``magent trace``'s views of it. Names load
on first use (PEP 562), so a run reads its telemetry settings without the trace builder."""

from __future__ import annotations

import os
from pathlib import Path
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


OTEL_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
"""The variables that name an endpoint (``telemetry.configured`` reads them, first wins)."""
OTEL_SETTINGS = "otel.yaml"
"""The home's file that may name one, under ``config/``."""


def may_export(root: Path | None = None) -> bool:
    """False when ``telemetry.configured()`` is sure to be None (no endpoint variable set, no
    ``config/otel.yaml``, or ``OTEL_SDK_DISABLED=true``): a run then loads nothing of telemetry."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if any(os.environ.get(name, "").strip() for name in OTEL_VARIABLES):
        return True
    from magent import paths

    return os.path.lexists(paths.config_dir(root) / OTEL_SETTINGS)


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
