"""``magent replay`` of a task that stopped (its model failed, or it was killed) and was then
resumed to the end: the replay plays the answers only, so the stop is not a divergence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.cli import invoke, run
from support.engine import write
from support.openai_stub import OpenAIStub


def probe(folder: Path, url: str) -> Path:
    return write(folder, "probe.yaml", f"""
        name: probe
        role: stores a city
        system_prompt: Store the city you are told.
        tools: [kv.set]
        llm_config: {{model: openai/stub-model, endpoint: '{url}', api_key: sk-test, max_retries: 0}}
        """)


def only_task(home: Path) -> str:
    (task_id,) = [p.name for p in (home / "tasks").iterdir()]
    return task_id


@pytest.mark.parametrize("stop", ["model_failed", "killed"])
def test_a_task_resumed_after_it_stopped_replays_as_a_match(stop: str, tmp_path: Path,
                                                             magent_home: Path) -> None:
    with OpenAIStub() as stub:
        if stop == "model_failed":
            stub.error(400, message="bad request")  # not retried: the run fails
        stub.tool_call("kv__set", {"key": "city", "value": "Lyon"})
        stub.text("Stored.")
        agent = probe(tmp_path, stub.url)
        if stop == "model_failed":
            first = invoke("run", str(agent), "-t", "Lyon", "--no-input")
            assert first.code == 1, first.out + first.err
        else:  # killed once the tool call's turn is checkpointed
            first = run("run", str(agent), "-t", "Lyon", "--no-input", env={"MAGENT_FAILPOINT": "after_checkpoint@2"})
            assert first.code == -9, first.out + first.err
        task_id = only_task(magent_home)
        resumed = invoke("resume", task_id, "--no-input")
        assert resumed.code == 0, resumed.out + resumed.err
    report = invoke("replay", task_id, "--json")
    doc = json.loads(report.out)
    assert report.code == 0 and doc["matched"], doc
    assert (doc["model_calls"], doc["tool_calls"]) == (2, 1)


def test_a_replay_that_ends_differently_names_the_end_not_a_node_none(magent_home: Path) -> None:
    from magent.engine.replay import compare
    from magent.models import Event

    def ev(seq: int, type: str, node: str | None = None, **fields) -> Event:
        return Event.model_validate({"seq": seq, "ts": "2026-01-01T00:00:00.000Z", "type": type, "node": node,
                                     **fields})

    recorded = [ev(1, "run_started"), ev(2, "node_started", "a", kind="agent"),
                ev(3, "run_finished", status="completed", result="done")]
    replayed = [ev(1, "run_started"), ev(2, "node_started", "a", kind="agent"),
                ev(3, "llm_call", "a", agent="a", response={"content": "more"})]
    report = compare("00000000-0000-4000-8000-000000000000", "00000000-0000-4000-8000-000000000001",
                     recorded, replayed)
    assert not report.matched
    assert "None" not in report.divergence
    assert "recorded the end of the run, replay did a model call at node 'a'" in report.divergence
