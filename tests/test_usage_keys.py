"""Usage is counted under one key per model everywhere: checkpoints, trace.json, recovery
(issue 10 item 22: a resumed run split its usage between 'scripted' and 'scripted/scripted')."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from magent.models.task import usage_key
from support.cli import invoke, run
from support.crashflow import make_flow
from support.engine import checkpoint_numbers, task_dir


def test_one_key_scheme() -> None:
    assert usage_key("scripted", "scripted") == "scripted"
    assert usage_key("openai/gpt-4o-mini", "openai") == "openai/gpt-4o-mini"
    assert usage_key("gpt-4o-mini", "openai") == "openai/gpt-4o-mini"
    assert usage_key("llama3", "") == "llama3"


@pytest.mark.slow
def test_a_resumed_run_keeps_its_usage_under_one_key(tmp_path: Path, magent_home: Path) -> None:
    flow = make_flow(tmp_path)
    env = {"LEDGER": str(tmp_path / "ledger.txt")}
    # killed after the model's first reply was recorded but before any checkpoint counted it
    killed = run("run", str(flow), "-t", "count me", env={**env, "MAGENT_FAILPOINT": "after_assistant_entry@1"})
    assert killed.code == -signal.SIGKILL
    (task_id,) = [p.name for p in (magent_home / "tasks").iterdir() if not p.name.startswith(".")]
    resumed = invoke("resume", task_id, env=env)
    if resumed.code == 3:  # the ledger call may have run: a person decides
        resumed = invoke("resume", task_id, "--reject", env=env)
    assert resumed.code == 0, resumed.err
    td = task_dir(task_id)
    last = td.checkpoints.read(checkpoint_numbers(task_id)[-1])
    trace = json.loads((td.path / "trace.json").read_text())
    assert set(last.usage_by_model) == set(trace["usage_by_model"]) == {"scripted"}
    assert last.usage_by_model["scripted"].calls == trace["usage_by_model"]["scripted"]["calls"] == 3
    assert td.load_task().usage.calls == 3
