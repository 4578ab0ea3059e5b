"""A run's lock, its task directory, the task.json that says it runs and its trace are written
off the event loop's thread (issue 34): their fsyncs, done on it, stalled every other task of
the process. They are still made (in a worker thread), in the same order."""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import magent
from support.engine import arun_at_once

MOVED = {"acquire", "create_task", "write_trace"}
"""Where the fsyncs of the lock's note, the new task.json and trace.json are made."""
BEGUN = "_begin"
"""Where a run's first checkpoint is made and its task.json says running."""


def reply(request: Any) -> Any:
    if not any(m.role == "tool" for m in request.messages):
        return {"tool_calls": [{"name": "kv.set", "arguments": {"key": "city", "value": "Lyon"}}]}
    return "stored"


def test_lock_task_and_trace_fsyncs_leave_the_loops_thread(tmp_path: Path, magent_home: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[bool, set[str]]] = []
    real = os.fsync

    def recorded(fd: int) -> None:
        names, frame = set(), sys._getframe(1)
        while frame is not None:
            names.add(frame.f_code.co_name)
            frame = frame.f_back
        seen.append((threading.current_thread() is threading.main_thread(), names & {*MOVED, BEGUN}))
        real(fd)

    monkeypatch.setattr(os, "fsync", recorded)
    results = arun_at_once(tmp_path, reply, 4)
    on_loop = set().union(*(where for main, where in seen if main))
    elsewhere = set().union(*(where for main, where in seen if not main))
    assert on_loop == set(), on_loop
    assert elsewhere == MOVED  # still made durable, in a worker thread
    for r in results:  # and whole: the trace and the task read back as usual
        assert magent.read_trace(r.task_id).status == "completed"


def test_a_kv_change_is_synced_off_the_loops_thread(tmp_path: Path, magent_home: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """kv.set's journal line is made durable in a worker thread, before the call returns."""
    synced: list[bool] = []  # per fsync of a kv.jsonl: made on the loop's thread
    real = os.fsync

    def recorded(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").endswith("kv.jsonl"):
            synced.append(threading.current_thread() is threading.main_thread())
        real(fd)

    monkeypatch.setattr(os, "fsync", recorded)
    results = arun_at_once(tmp_path, reply, 4)
    assert synced and not any(synced), synced
    for r in results:
        changes = (magent_home / "tasks" / r.task_id / "kv.jsonl").read_text().splitlines()
        assert [json.loads(line) for line in changes] == [{"op": "set", "key": "city", "value": "Lyon"}]


def test_tool_stats_are_added_off_the_loops_thread(tmp_path: Path, magent_home: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Each run's tool results reach cache/tool-stats.json (under a file lock) from a worker thread."""
    from magent.store import toolstats

    on_loop: list[bool] = []
    real = toolstats.add_stats

    def recorded(root: Path, counts: dict) -> bool:
        on_loop.append(threading.current_thread() is threading.main_thread())
        return real(root, counts)

    monkeypatch.setattr(toolstats, "add_stats", recorded)
    arun_at_once(tmp_path, reply, 4)
    assert on_loop == [False] * 4
    stats = json.loads((magent_home / "cache" / "tool-stats.json").read_text())
    assert stats["tools"]["kv.set"] == [4, 4]
