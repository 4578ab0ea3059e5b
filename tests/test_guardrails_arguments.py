"""Input rails on tool arguments and memory writes (issue 33): mask, block, ask a person."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.cli import invoke
from support.engine import events

EMAIL = "jane@example.com"


def keeper(folder: Path, rail: str, content: str = f"Jane's email is {EMAIL}") -> Path:
    (folder / "s.yaml").write_text(f"""responses:
  - tool_calls: [{{name: memory.remember, arguments: {{content: "{content}", scope: global}}}}]
  - content: noted
""")
    (folder / "keeper.yaml").write_text(f"""name: keeper
role: keeps notes
system_prompt: Remember what you are told.
tools: [memory.remember]
guardrails:
  input:
    - {rail}
llm_config: {{model: scripted, script: s.yaml}}
""")
    return folder / "keeper.yaml"


def no_file_holds(home: Path, text: str) -> None:
    for f in home.rglob("*"):
        if f.is_file() and not f.name.startswith("memory.db"):  # (the database: read back below)
            assert text.encode() not in f.read_bytes(), f


def test_remember_under_a_pii_mask_rail_stores_the_mask(tmp_path, magent_home):
    r = invoke("run", str(keeper(tmp_path, "{type: pii, action: mask}")), "-t", "note Jane's address",
               "--no-input")
    assert r.code == 0, r.out + r.err
    task_id = r.out.split()[1]
    listed = invoke("memory", "list")
    assert "Jane's email is [EMAIL]" in listed.out and EMAIL not in listed.out
    found = invoke("memory", "search", "jane", "--json")
    assert "[EMAIL]" in found.out and EMAIL not in found.out
    no_file_holds(magent_home, EMAIL)
    trace = invoke("trace", task_id)
    assert ("input rail 'pii' masked the arguments of memory.remember (content): found 1 email address"
            in trace.out)
    (masked,) = [e.model_dump() for e in events(task_id)
                 if e.type == "guardrail" and e.model_dump().get("outcome") == "mask"]
    assert masked["source"] == "tool_arguments" and masked["argument"] == "content"
    assert masked["findings"] == {"email": 1}


def test_a_blocking_rail_drops_the_memory_and_the_model_is_told(tmp_path, magent_home):
    r = invoke("run", str(keeper(tmp_path, "{type: pii, action: block}")), "-t", "x", "--no-input")
    assert r.code == 0, r.out + r.err
    task_id = r.out.split()[1]
    assert "no memories" in invoke("memory", "list").out.lower() or EMAIL not in invoke("memory", "list").out
    (result,) = [e.model_dump() for e in events(task_id) if e.type == "tool_result"]
    assert result["outcome"] == "ERROR"
    assert "input rail 'pii' blocked the arguments of memory.remember (content): found 1 email address" \
        in result["error"]
    assert not [e for e in events(task_id) if e.type == "tool_call"]  # never made
    no_file_holds(magent_home, EMAIL)


@pytest.mark.parametrize("decision,stored", [("--approve", True), ("--reject", False)])
def test_a_pausing_rail_asks_a_person_before_the_call(tmp_path, magent_home, decision, stored):
    r = invoke("run", str(keeper(tmp_path, "{type: pii, action: pause}")), "-t", "x", "--no-input")
    assert r.code == 3, r.out + r.err
    task_id = r.out.split()[1]
    assert "flagged the arguments of memory.remember (content)" in r.out + r.err
    assert not [e for e in events(task_id) if e.type == "tool_call"]
    done = invoke("resume", task_id, decision)
    assert done.code == 0, done.out + done.err
    assert (EMAIL in invoke("memory", "list").out) is stored


def test_a_rail_can_be_turned_off_or_on_for_arguments(tmp_path, magent_home):
    r = invoke("run", str(keeper(tmp_path, "{type: pii, action: mask, tool_arguments: false}")), "-t", "x",
               "--no-input")
    assert r.code == 0 and EMAIL in invoke("memory", "list").out
    # a max_length rail leaves arguments alone unless told
    (tmp_path / "b").mkdir()
    long = "x" * 50
    r = invoke("run", str(keeper(tmp_path / "b", "{type: max_length, max_chars: 10, action: block, "
                                                  "tool_arguments: true}", content=long)), "-t", "short",
               "--no-input")
    assert r.code == 0, r.out + r.err
    task_id = r.out.split()[1]
    (result,) = [e.model_dump() for e in events(task_id) if e.type == "tool_result"]
    assert "blocked the arguments of memory.remember (content)" in result["error"]


def test_tool_arguments_must_be_true_or_false(tmp_path):
    path = keeper(tmp_path, "{type: pii, tool_arguments: sometimes}")
    r = invoke("validate", str(path))
    assert r.code == 2 and r.err.count("\n") == 1 and "tool_arguments" in r.err


def test_the_task_summary_meets_the_memory_write_filter(tmp_path, magent_home):
    (tmp_path / "s.yaml").write_text(f"responses:\n  - content: Jane writes from {EMAIL}\n")
    (tmp_path / "a.yaml").write_text("""name: summer
role: answers
system_prompt: Answer.
memory: {summarize_on_finish: true, scope: global}
guardrails:
  input:
    - {type: pii, action: mask}
llm_config: {model: scripted, script: s.yaml}
""")
    r = invoke("run", str(tmp_path / "a.yaml"), "-t", "who writes?", "--no-input")
    assert r.code == 0, r.out + r.err
    listed = invoke("memory", "list").out
    assert "[EMAIL]" in listed and EMAIL not in listed
    trace = invoke("trace", r.out.split()[1]).out
    assert "input rail 'pii' masked the task summary for long-term memory: found 1 email address" in trace


def test_a_blocked_sub_agent_call_is_not_made(tmp_path, magent_home):
    (tmp_path / "boss.s.yaml").write_text(
        f'responses:\n  - tool_calls: [{{name: agents.helper, arguments: {{task: "mail {EMAIL}"}}}}]\n'
        "  - content: done\n")
    (tmp_path / "helper.s.yaml").write_text("responses:\n  - content: helped\n")
    (tmp_path / "boss.yaml").write_text("""name: boss
role: delegates
system_prompt: Delegate.
sub_agents: [helper]
guardrails:
  input:
    - {type: pii, action: block}
llm_config: {model: scripted, script: boss.s.yaml}
""")
    (tmp_path / "helper.yaml").write_text("name: helper\nrole: helps\nsystem_prompt: Help.\n"
                                          "llm_config: {model: scripted, script: helper.s.yaml}\n")
    r = invoke("run", str(tmp_path / "boss.yaml"), "-t", "go", "--no-input")
    assert r.code == 0, r.out + r.err
    task_id = r.out.split()[1]
    (result,) = [e.model_dump() for e in events(task_id) if e.type == "tool_result"]
    assert "input rail 'pii' blocked the arguments of agents.helper (task)" in result["error"]
    assert not [e for e in events(task_id) if e.type == "node_started" and e.model_dump().get("agent") == "helper"]
    assert "helped" not in invoke("trace", task_id).out
    no_file_holds(magent_home, EMAIL)


def test_a_tool_node_meets_the_workflows_argument_rails(tmp_path, magent_home):
    (tmp_path / "wf.yaml").write_text(f"""name: saver
entry_point: save
guardrails:
  input:
    - {{type: pii, action: mask}}
nodes:
  save: {{type: tool, tool: kv.set, arguments: {{key: contact, value: "write to {EMAIL}"}}}}
edges:
  - {{from: save, to: END}}
""")
    r = invoke("run", str(tmp_path / "wf.yaml"), "-t", "save it", "--no-input")
    assert r.code == 0, r.out + r.err
    task_id = r.out.split()[1]
    (call,) = [e.model_dump() for e in events(task_id) if e.type == "tool_call"]
    assert call["arguments"] == {"key": "contact", "value": "write to [EMAIL]"}
    kv = (magent_home / "tasks" / task_id / "kv.jsonl").read_text()  # (task.json keeps the config as written)
    assert "write to [EMAIL]" in kv and EMAIL not in kv
    assert "masked the arguments of kv.set (value)" in invoke("trace", task_id).out
