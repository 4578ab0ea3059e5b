"""Small words a newcomer trips on: counts that agree with their number, the closing line of a
resumed batch, what ``tasks show`` calls a tool node, errors in the words of the API a person
used, and a budget pause that asks for the new limit before the message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import magent
from support.cli import invoke
from support.terminal import Terminal

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
TRIAGE = EXAMPLES / "workflows" / "triage.yaml"


def test_a_one_node_workflow_validates_as_one_node(tmp_path: Path) -> None:
    flow = tmp_path / "one.yaml"
    flow.write_text("name: one\nentry_point: only\nnodes:\n  only: {type: condition}\nedges:\n"
                    "  - {from: only, to: END}\n")
    result = invoke("validate", str(flow))
    assert result.code == 0, result.err
    assert "1 node, entry only" in result.out


def test_a_resumed_batch_counts_its_rows_and_says_whose_tokens(magent_home: Path, tmp_path: Path) -> None:
    inputs = tmp_path / "two.jsonl"
    inputs.write_text("\n".join(json.dumps(row) for row in (
        {"task": "Login fails", "set": {"ticket": "T-1", "priority": "low"}},
        {"task": "Checkout is down", "set": {"ticket": "T-2", "priority": "high"}})) + "\n")
    assert invoke("batch", str(TRIAGE), "--inputs", str(inputs)).code == 3
    batch = next((magent_home / "batches").iterdir()).name
    resumed = invoke("batch", "resume", batch[:8], "--approve-all")
    assert resumed.code == 0, resumed.out + resumed.err
    assert "1 row to run (1 completed already)" in resumed.out
    assert "2 completed in " in resumed.out and " in this run)" in resumed.out


def test_tasks_show_names_a_tool_entry_node_as_a_node(magent_home: Path) -> None:
    run = invoke("run", str(TRIAGE), "-t", "Login fails", "--set", "ticket=T-1", "--set", "priority=low")
    assert run.code == 0, run.err
    shown = invoke("tasks", "show", run.out.split()[1][:8])
    assert "entry        store (tool node)" in shown.out
    assert "agent " not in shown.out


def test_the_api_and_the_cli_each_name_their_own_arguments(magent_home: Path) -> None:
    paused = magent.run(EXAMPLES / "workflows" / "publish.yaml", "Announce the closure")
    with pytest.raises(magent.UsageError) as raised:
        magent.resume(paused.task_id, approve=True, reject=True)
    assert str(raised.value) == "give only one of approve=True, reject=True, modify=..."
    with pytest.raises(magent.UsageError, match=r"^message= goes with"):
        magent.resume(paused.task_id, message="hello")
    cli = invoke("resume", paused.task_id[:8], "--approve", "--reject")
    assert cli.code == 2 and "give only one of --approve, --reject, --modify" in cli.err


@pytest.mark.slow
def test_a_budget_pause_asks_for_the_new_limit_before_the_message(magent_home: Path) -> None:
    term = Terminal("run", str(EXAMPLES / "agents" / "fact_finder.yaml"), "-t", "Three facts")
    term.expect("[a]pprove / [r]eject / [l]ater: ")
    term.type("a")
    term.expect("new max_model_calls (above 2): ")
    assert "message (optional)" not in term.seen
    term.type("5")
    term.expect("message (optional): ")
    term.type("")
    assert term.finish() == 0, term.seen
