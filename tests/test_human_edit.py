"""The human step's edit: the output itself replaced (in $EDITOR inline, ``output:`` with
``--modify``) as well as State values, and a value a person sets that nothing reads is reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from magent.engine.graph import load_target
from magent.engine.statekeys import reads_of
from support.cli import invoke
from support.engine import kv_store, task_dir, write
from support.terminal import Terminal

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
PUBLISH = str(EXAMPLES / "workflows/publish.yaml")
TRIAGE = str(EXAMPLES / "workflows/triage.yaml")


def _paused(target: str = PUBLISH, *args: str) -> str:
    result = invoke("run", target, "-t", "Announce the Friday closure", "--no-input", *args)
    assert result.code == 3, result.out + result.err
    return result.out.split()[1]


def _kv(task_id: str) -> dict:
    return kv_store(task_id)


def test_modify_with_output_replaces_what_the_next_nodes_work_on(magent_home: Path, tmp_path: Path) -> None:
    task_id = _paused()
    edits = write(tmp_path, "edits.yaml", "output: |\n  The office is closed on Friday 28 November.\n")
    result = invoke("resume", task_id, "--modify", str(edits))
    assert result.code == 0, result.err
    assert _kv(task_id)["published"] == "The office is closed on Friday 28 November.\n"
    td = task_dir(task_id)
    state = td.full_state(td.checkpoints.read(td.checkpoints.numbers()[-1]))
    assert any(m.content.startswith("[a person replaced the output with]\nThe office is closed on Friday 28")
               for m in state.messages)
    [decision] = [e for e in td.read_events() if e.type == "human_decision"]
    assert decision.field("action") == "modify"
    assert decision.field("state_updates")["output"].startswith("The office is closed")
    assert "warning" not in result.err


@pytest.mark.parametrize("text, message", [
    ("output: [not, text]\n", "output: expected the replacement text"),
    ("output: '  '\n", "output: the replacement must be text, not empty"),
    ("outptu: x\n", "unknown State field 'outptu' (fields: output, "),
])
def test_a_bad_output_is_refused_and_the_task_stays_paused(magent_home: Path, tmp_path: Path, text: str,
                                                          message: str) -> None:
    task_id = _paused()
    edits = write(tmp_path, "edits.yaml", text)
    result = invoke("resume", task_id, "--modify", str(edits))
    assert result.code == 2 and message in result.err
    assert task_dir(task_id).load_task().status.value == "awaiting_human"


def test_a_value_nothing_reads_is_reported_and_one_that_is_read_is_not(magent_home: Path, tmp_path: Path) -> None:
    task_id = _paused()
    edits = write(tmp_path, "edits.yaml", "metadata:\n  reviewer: sam\n")
    result = invoke("resume", task_id, "--modify", str(edits))
    assert result.code == 0
    assert ("metadata.reviewer was set, but nothing in workflow 'publish' reads it (no edge condition or "
            "tool argument uses it); it is kept in State and changes nothing") in result.err
    warnings = [e.field("message") for e in task_dir(task_id).read_events() if e.type == "warning"]
    assert len(warnings) == 1 and "metadata.reviewer" in warnings[0]

    read = invoke("run", TRIAGE, "-t", "t", "--set", "ticket=down", "--set", "priority=low", "--no-input")
    assert read.code == 0 and "warning" not in read.err
    unread = invoke("run", TRIAGE, "-t", "t", "--set", "ticket=down", "--set", "priorty=high", "--no-input")
    assert unread.code == 0 and "metadata.priorty was set, but nothing in workflow 'triage' reads it" in unread.err


def test_what_a_workflow_reads(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", "name: a\nrole: r\nsystem_prompt: s\nllm_config: {model: scripted, script: s.yaml}\n")
    flow = write(tmp_path, "flow.yaml", """
        name: reads
        entry_point: t
        nodes:
          t: {type: tool, tool: kv.set, arguments: {key: k, value: {deep: [$metadata.ticket]}}}
          c: {type: condition}
          x: {type: agent, agent: a}
        edges:
          - {from: t, to: c}
          - {from: c, to: x, condition: "metadata.priority == 'high' and metadata['team'] != 'ops'"}
          - {from: c, to: x, condition: "metadata.get('score', 0) > 0.5 or routing_key == 'go'"}
          - {from: c, to: END}
        """)
    reads = reads_of(load_target(str(flow)))
    assert {"ticket", "priority", "team", "score"} <= reads.metadata and reads.fields == {"routing_key"}
    assert reads.unread({"metadata": {"ticket": 1, "other": 2}, "routing_key": "go", "next_action": "x"}) == [
        "metadata.other", "next_action"]
    whole = write(tmp_path, "whole.yaml", flow.read_text().replace("metadata.get('score', 0)", "len(metadata)"))
    assert reads_of(load_target(str(whole))).unread({"metadata": {"anything": 1}}) == []


@pytest.mark.slow
def test_inline_edit_opens_the_output_in_the_editor_then_asks_for_state_values(magent_home: Path) -> None:
    term = Terminal("run", PUBLISH, "-t", "Announce the Friday closure",
                    env={"EDITOR": "sed -i -e 's/Friday/Friday 28 November/'", "VISUAL": ""})
    term.expect("[a]pprove / [r]eject / [e]dit / [l]ater: ")
    term.type("e")
    term.expect("the output is replaced with your edit")
    term.expect("empty line to finish")
    term.type("reviewer=sam")
    term.type("")
    term.expect("message (optional): ")
    term.type("dated it")
    assert term.finish() == 0, term.seen
    assert "metadata.reviewer was set, but nothing in workflow 'publish' reads it" in term.seen
    task_id = next(p.name for p in (magent_home / "tasks").iterdir())
    assert "Friday 28 November" in _kv(task_id)["published"]


@pytest.mark.slow
def test_inline_edit_left_unsaved_keeps_the_output(magent_home: Path) -> None:
    term = Terminal("run", PUBLISH, "-t", "Announce the Friday closure", env={"EDITOR": "true", "VISUAL": ""})
    term.expect("[a]pprove / [r]eject / [e]dit / [l]ater: ")
    term.type("e")
    term.expect("the output is unchanged")
    term.expect("empty line to finish")
    term.type("")
    term.expect("message (optional): ")
    term.type("")
    assert term.finish() == 0, term.seen
    task_id = next(p.name for p in (magent_home / "tasks").iterdir())
    assert _kv(task_id)["published"].startswith("Hi all! The office is closed on Friday")
