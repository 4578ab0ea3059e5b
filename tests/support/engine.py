"""Driving the engine in-process with test doubles, and reading what a run left on disk."""

from __future__ import annotations

import asyncio
import json
import os
import textwrap
from pathlib import Path
from typing import Any

from magent.engine.context import RunOptions
from magent.engine.graph import load_target
from magent.engine.runner import RunOutcome
from magent.engine.session import Decision, resume_run, start_run
from magent.models import Event
from magent.store.tasks import Store, TaskDir
from magent.testing import client_factory


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def agent_yaml(name: str, tools: str = "[kv.*]", extra: str = "") -> str:
    return (f"name: {name}\nrole: test agent\nsystem_prompt: You are {name}.\ntools: {tools}\n"
            f"llm_config: {{model: scripted, script: {name}.script.yaml}}\n{extra}")


def run_with(model: Any, target: Path, description: str = "do it", *, providers: list | None = None,
             initial: dict | None = None) -> RunOutcome:
    graph = load_target(str(target))
    options = RunOptions(llm_factory=client_factory(model), extra_providers=providers or [])
    return asyncio.run(start_run(graph, description, initial=initial, options=options))


def resume_with(model: Any, task_id: str, action: str | None = None, message: str | None = None,
                providers: list | None = None) -> RunOutcome:
    options = RunOptions(llm_factory=client_factory(model), extra_providers=providers or [])
    decision = Decision(action=action, message=message) if action else None
    return asyncio.run(resume_run(task_id, decision=decision, options=options))


def task_dir(task_id: str) -> TaskDir:
    return Store().task(task_id)


def events(task_id: str) -> list[Event]:
    """The task's events as magent reads them back (texts kept in entries.jsonl put back)."""
    from magent.store.events import read_events

    return [Event.model_validate(e) for e in read_events(task_dir(task_id))]


def all_files_parse(home: Path) -> list[Path]:
    """Parse every JSON / JSON Lines file under ``home``; returns the files checked."""
    checked = []
    for path in home.rglob("*"):
        if not path.is_file() or path.suffix not in (".json", ".jsonl"):
            continue
        text = path.read_text()
        if path.suffix == ".json":
            json.loads(text)
        else:
            assert text == "" or text.endswith("\n"), f"{path} ends with a torn line"
            for line in text.splitlines():
                json.loads(line)
        checked.append(path)
    return checked


def kv_store(task_id: str) -> dict[str, Any]:
    """The task's key-value store, as its journal ``kv.jsonl`` describes it."""
    from magent.tools.kv import kv_state

    return kv_state(task_dir(task_id).path / "kv.jsonl")


def checkpoint_numbers(task_id: str) -> list[int]:
    return task_dir(task_id).checkpoints.numbers()


def home_snapshot(home: Path) -> dict[str, tuple[int, int]]:
    """Every file under the home with its size and mtime, to prove a command changed nothing."""
    out = {}
    for path in home.rglob("*"):
        if path.is_file() and not path.name.endswith(".lock"):
            st = path.stat()
            out[str(path.relative_to(home))] = (st.st_size, st.st_mtime_ns)
    return out


def env_without_debug() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("MAGENT_DEBUG", None)
    return env


KEEPER = """name: keeper
role: stores things
system_prompt: Store it.
tools: [kv.*]
llm_config: {model: openai/gpt-4o-mini}
"""
"""An agent with the kv tools, for runs whose model is a ``magent.testing`` double."""


def arun_at_once(folder: Path, reply: Any, n: int, agent: str = KEEPER) -> list:
    """``n`` tasks of ``agent`` at once (``asyncio.gather(magent.arun(...))``), each answered by
    ``FunctionModel(reply)``; their ``AgentResult``s, every one checked to have succeeded."""
    import magent
    from magent.testing import FunctionModel

    definition = magent.load(write(folder, "keeper.yaml", agent))

    async def tasks() -> list:
        return await asyncio.gather(*(magent.arun(definition, f"job {i}", llm=FunctionModel(reply))
                                      for i in range(n)))

    results = asyncio.run(tasks())
    assert all(r.success for r in results), [r.error for r in results]
    return results
