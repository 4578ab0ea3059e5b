"""What is on disk when a tool runs and when the model is called, in each durability mode: the
README's table ("Durability: when writes reach the disk"), checked at the moments it names.

A power loss cannot be staged in a test, so every fsync the run's group commit makes is recorded
with what it covered (a file's size when it was synced, on a disk made slow; for the task directory, the checkpoint
names it held), and the tools and the model double note, when they run, which lines of
entries.jsonl and events.jsonl and which checkpoints those syncs had covered. Group commit
(store/commit.py) decides when the disk is waited for; these check that the run waits where the
contract says it must, whatever is done to make the waits cheaper.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from magent.engine.context import RunOptions
from magent.engine.graph import load_target
from magent.engine.session import start_run
from magent.store import commit as commit_mod
from magent.testing import FunctionModel, client_factory
from magent.tools.function import FunctionProvider
from support.engine import agent_yaml, write


SLOW_DISK = 0.05
"""Seconds each fsync takes here: long enough that a run that did not wait would get ahead."""


class Synced:
    """What the run's fsyncs covered so far: bytes per file, checkpoint names per directory."""

    def __init__(self) -> None:
        self.bytes: dict[str, int] = {}
        self.names: set[str] = set()
        self.task: Path | None = None

    def fsync(self, real: Any, fd: int, what: str) -> None:
        time.sleep(SLOW_DISK)
        path = Path(what)
        if path.is_dir():
            listed = {n for n in os.listdir(path) if n.startswith("checkpoint_")}
            real(fd, what)
            self.names |= listed
            return
        size = os.fstat(fd).st_size
        real(fd, what)
        self.bytes[path.name] = max(self.bytes.get(path.name, 0), size)

    def lines_synced(self, name: str, match: dict[str, Any]) -> bool | None:
        """Whether the line of ``name`` whose fields include ``match`` was synced (None: no such line)."""
        assert self.task is not None
        data = (self.task / name).read_bytes()
        end = 0
        for line in data.splitlines(keepends=True):
            end += len(line)
            doc = json.loads(line)
            if all(doc.get(k) == v for k, v in match.items()):
                return self.bytes.get(name, 0) >= end
        return None

    def checkpoints(self) -> list[str]:
        assert self.task is not None
        return sorted(n for n in os.listdir(self.task) if n.startswith("checkpoint_"))

    def checkpoint_synced(self, name: str) -> bool:
        """Its content and its name both synced."""
        return name in self.bytes and name in self.names


@pytest.fixture
def synced(monkeypatch: pytest.MonkeyPatch) -> Synced:
    seen = Synced()
    real = commit_mod._fsync
    monkeypatch.setattr(commit_mod, "_fsync", lambda fd, what: seen.fsync(real, fd, what))
    return seen


def run(tmp_path: Path, magent_home: Path, synced: Synced, mode: str) -> dict[str, Any]:
    """An agent that calls an idempotent tool, then one that is not, then answers; returns what
    was durable when each tool ran and when each model call was made."""
    seen: dict[str, Any] = {"model": []}
    replies = iter([
        {"content": "look first", "tool_calls": [{"name": "t.look", "arguments": {}}]},
        {"content": "now act", "tool_calls": [{"name": "t.act", "arguments": {}}]},
        "all done"])

    def task() -> Path:
        if synced.task is None:
            synced.task = next((magent_home / "tasks").iterdir())
        return synced.task

    def turn(request: Any) -> Any:
        task()
        cps = synced.checkpoints()
        seen["model"].append({"last": cps[-1], "synced": synced.checkpoint_synced(cps[-1])})
        return next(replies)

    def tool_run(name: str) -> str:
        task()
        reply = next(json.loads(line) for line in reversed((synced.task / "entries.jsonl").read_text().splitlines())
                     if json.loads(line).get("role") == "assistant")
        call_id = reply["tool_calls"][0]["id"]
        seen[name] = {"reply": synced.lines_synced("entries.jsonl", {"id": reply["id"]}),
                      "record": synced.lines_synced("events.jsonl", {"type": "llm_call", "entry_id": reply["id"]}),
                      "intent": synced.lines_synced("events.jsonl", {"type": "tool_call", "call_id": call_id})}
        return f"{name} ran"

    tools = FunctionProvider("t")
    tools.add("look", lambda: tool_run("look"), "Look.", idempotent=True)
    tools.add("act", lambda: tool_run("act"), "Act.", idempotent=False)
    agent = write(tmp_path, "a.yaml", agent_yaml("a", tools="[t.*]"))
    options = RunOptions(llm_factory=client_factory(FunctionModel(turn)), extra_providers=[tools],
                         durability=mode)
    outcome = asyncio.run(start_run(load_target(str(agent)), "go", options=options))
    assert outcome.status.value == "completed", outcome
    seen["end"] = {"entries": synced.bytes.get("entries.jsonl") == (synced.task / "entries.jsonl").stat().st_size,
                   "events": synced.bytes.get("events.jsonl") == (synced.task / "events.jsonl").stat().st_size,
                   "checkpoints": all(synced.checkpoint_synced(n) for n in synced.checkpoints())}
    return seen


def test_sync_a_reply_is_on_disk_before_its_tools_run_and_each_checkpoint_before_the_next_call(
        tmp_path: Path, magent_home: Path, synced: Synced) -> None:
    seen = run(tmp_path, magent_home, synced, "sync")
    assert seen["look"]["reply"] and seen["look"]["record"]
    assert seen["act"] == {"reply": True, "record": True, "intent": True}   # not idempotent: its intent too
    assert [m["synced"] for m in seen["model"]] == [True, True, True]
    assert seen["end"] == {"entries": True, "events": True, "checkpoints": True}


def test_step_a_checkpoint_is_on_disk_before_the_next_call_and_an_intent_before_a_tool_that_cannot_repeat(
        tmp_path: Path, magent_home: Path, synced: Synced) -> None:
    seen = run(tmp_path, magent_home, synced, "step")
    assert seen["act"]["intent"] and seen["act"]["reply"] and seen["act"]["record"]
    assert [m["synced"] for m in seen["model"]] == [True, True, True]
    assert seen["end"] == {"entries": True, "events": True, "checkpoints": True}


def test_exit_nothing_is_forced_until_the_run_stops_then_everything(
        tmp_path: Path, magent_home: Path, synced: Synced) -> None:
    seen = run(tmp_path, magent_home, synced, "exit")
    assert seen["look"] == {"reply": False, "record": False, "intent": False}
    assert seen["act"] == {"reply": False, "record": False, "intent": False}
    assert [m["synced"] for m in seen["model"]] == [False, False, False]
    assert seen["end"] == {"entries": True, "events": True, "checkpoints": True}


def test_sync_an_idempotent_call_gets_ready_while_its_reply_is_synced_and_runs_after(
        tmp_path: Path, magent_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The wait before an idempotent tool covers its turn's reply, not the call's own intent:
    the intent is written while the reply's sync is under way (the run does not sit idle
    through it), and the tool still runs only once the reply is on disk."""
    real = commit_mod._fsync
    seen: dict[str, Any] = {}

    def intent_written(task: Path) -> bool:
        events = task / "events.jsonl"
        return events.exists() and any(json.loads(line).get("type") == "tool_call"
                                       for line in events.read_text().splitlines())

    def fsync(fd: int, what: str) -> None:
        path = Path(what)
        if path.name == "entries.jsonl" and "reply_sync" not in seen and any(
                json.loads(line).get("tool_calls") for line in path.read_text().splitlines()):
            # The commit that makes the reply durable: does the intent appear while it runs?
            deadline = time.monotonic() + 5
            while not intent_written(path.parent) and time.monotonic() < deadline:
                time.sleep(0.005)
            seen["reply_sync"] = intent_written(path.parent)
        real(fd, what)
        if path.name == "entries.jsonl":
            seen["entries_synced"] = os.fstat(fd).st_size

    monkeypatch.setattr(commit_mod, "_fsync", fsync)
    replies = iter([{"content": "look", "tool_calls": [{"name": "t.look", "arguments": {}}]}, "done"])

    def look() -> str:
        task = next((magent_home / "tasks").iterdir())
        data = (task / "entries.jsonl").read_bytes()
        reply_end = max(i for i, line in enumerate(data.splitlines(keepends=True))
                        if json.loads(line).get("tool_calls"))
        seen["reply_on_disk"] = seen.get("entries_synced", 0) >= len(b"".join(data.splitlines(keepends=True)[:reply_end + 1]))
        return "looked"

    tools = FunctionProvider("t")
    tools.add("look", look, "Look.", idempotent=True)
    agent = write(tmp_path, "a.yaml", agent_yaml("a", tools="[t.*]"))
    options = RunOptions(llm_factory=client_factory(FunctionModel(lambda request: next(replies))),
                         extra_providers=[tools], durability="sync")
    outcome = asyncio.run(start_run(load_target(str(agent)), "go", options=options))
    assert outcome.status.value == "completed", outcome
    assert seen["reply_sync"] is True
    assert seen["reply_on_disk"] is True
