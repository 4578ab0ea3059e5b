"""Deterministic crash points for tests: ``MAGENT_FAILPOINT=name[@N]`` kills the process with
SIGKILL the N-th time (default first) execution reaches ``hit(name)``."""

from __future__ import annotations

import os
import signal

_SPEC = os.environ.get("MAGENT_FAILPOINT", "")
_NAME, _, _NTH = _SPEC.partition("@")
_WANT = int(_NTH) if _NTH.isdigit() else 1
_count = 0

POINTS = (
    "after_task_created",    # the task's directory exists (status pending), no checkpoint yet
    "after_run_start",       # the first checkpoint is written
    "after_assistant_entry",  # a model turn's message is on disk, its tools not yet run
    "after_tool_intent",      # a tool call's intent event is written, the call not made
    "after_tool_call",        # the tool has run, its result not yet written
    "after_tool_entry",       # a tool result entry is written
    "before_checkpoint",      # entries synced, the checkpoint not yet written
    "after_checkpoint",       # a checkpoint is written
    "after_node_end",         # a node's end checkpoint is written, routing not done
    "after_injection",       # an operator's message is an entry, its checkpoint not yet written
    "after_signals_applied",  # the checkpoint that records the signals just applied is written
    "before_pause",           # a pause is about to be written
    "before_trace",           # a run's end is synced (task.json has its status), trace.json not yet written
    "before_link",            # an immutable file's temp copy is written, not yet linked into place
    "migrate_between_files",  # `magent migrate` replaced one of a task's files, the next not yet
    "memory_before_commit",   # a memory write transaction is complete but not committed
)


def hit(name: str) -> None:
    global _count
    if not _NAME or name != _NAME:
        return
    _count += 1
    if _count == _WANT:
        os.kill(os.getpid(), signal.SIGKILL)

