"""Context budgets (issue 12 item 2): ``memory_config.short_term`` on an agent.

A long ReAct run sends at most ``max_tokens`` per request: the oldest turns give way
(fifo), or are summarized (summarize, hybrid). Each compaction is an entry of its own;
the full history stays on disk; a resumed run sends the same view, also when it was
killed right after the compaction entry.
"""

from __future__ import annotations

import json
import shutil
import signal
from pathlib import Path

import pytest

import magent
from support.cli import invoke, run
from support.crashflow import only_task
from support.engine import checkpoint_numbers, events, kv_store, task_dir

ROOT = Path(__file__).resolve().parent.parent
ARCHIVIST = ROOT / "examples/agents/archivist.yaml"
TASK = "File today's twelve meeting notes"


def compactions(task_id: str) -> list:
    return [e for e in task_dir(task_id).entries.load().values() if e.entry_type == "compaction"]


def model_calls(task_id: str) -> list[dict]:
    """The answered model calls' events, each ``request`` with its parameters put back (events
    name them by hash in requests.jsonl)."""
    pieces = task_dir(task_id).requests.load()
    calls = [e.model_dump() for e in events(task_id) if e.type == "llm_call" and not e.field("error")]
    for call in calls:
        call["request"] = {**pieces[call["request"]["params"]], **call["request"]}
    return calls


def archivist(tmp_path: Path, strategy: str = "fifo", max_tokens: int = 600, extra: str = "") -> Path:
    """The example archivist (its script and budget) with another strategy."""
    shutil.copytree(ROOT / "examples/agents/scripts", tmp_path / "scripts", dirs_exist_ok=True)
    text = ARCHIVIST.read_text().replace("strategy: fifo", f"strategy: {strategy}").replace(
        "max_tokens: 600", f"max_tokens: {max_tokens}{extra}")
    path = tmp_path / "archivist.yaml"
    path.write_text(text)
    return path


def test_a_long_run_stays_under_its_budget_and_keeps_its_history() -> None:
    result = magent.run(str(ARCHIVIST), TASK)
    assert result.success and result.output.startswith("Filed all 12")
    calls = model_calls(result.task_id)
    assert len(calls) == 13
    assert max(c["tokens_in"] for c in calls) <= 600  # the scripted model counts what it was sent
    [marker] = compactions(result.task_id)
    c = marker.compaction
    assert (c.agent, c.strategy, c.pinned) == ("archivist", "fifo", 1) and c.tokens_after <= 600 * 0.75
    history = task_dir(result.task_id).entries.path_to(_leaf(result.task_id))
    assert sum(1 for e in history if e.role == "tool") == 12  # every result is still on disk
    assert history[c.keep_from].role == "assistant"  # a turn is never split from its results
    assert history[c.keep_from - 1].role == "tool" and history[0].content == TASK
    assert kv_store(result.task_id)["note_12"].startswith("Notes from the retro meeting")
    # the request after the compaction: system prompt, the task, then whole turns from keep_from
    step = _step_after_compaction(result.task_id)
    sent = json.loads(invoke("trace", result.task_id, "--step", str(step), "--request", "--json").out)
    messages = (sent[0] if isinstance(sent, list) else sent["calls"][0])["request"]["messages"]
    assert [m["role"] for m in messages[:3]] == ["system", "user", "assistant"]
    assert messages[1]["content"] == TASK and messages[2]["content"] == history[c.keep_from].content
    trace = invoke("trace", result.task_id, "--all").out
    assert "context of archivist compacted (fifo): left out 8 messages" in trace


def _leaf(task_id: str) -> str:
    td = task_dir(task_id)
    return td.checkpoints.read(checkpoint_numbers(task_id)[-1]).leaf_entry_id


def _step_after_compaction(task_id: str) -> int:
    out = invoke("trace", task_id, "--all").out.splitlines()
    at = next(i for i, line in enumerate(out) if "compacted" in line)
    return int(out[at + 1].split()[0])


def test_without_a_budget_every_turn_sends_the_whole_history(tmp_path: Path) -> None:
    agent = tmp_path / "archivist.yaml"
    shutil.copytree(ROOT / "examples/agents/scripts", tmp_path / "scripts")
    agent.write_text("\n".join(line for line in ARCHIVIST.read_text().splitlines()
                               if not line.startswith(("memory_config", "  short_term", "    max_tokens",
                                                       "    strategy"))))
    result = magent.run(str(agent), TASK)
    assert result.success and not compactions(result.task_id)
    ins = [c["tokens_in"] for c in model_calls(result.task_id)]
    assert ins == sorted(ins) and ins[-1] > 600  # the scripted model: no window, no default budget


@pytest.mark.parametrize("strategy", ["summarize", "hybrid"])
def test_summarizing_strategies_send_a_summary_of_what_they_leave_out(tmp_path: Path, strategy: str) -> None:
    agent = archivist(tmp_path, strategy, max_tokens=700)
    result = magent.run(str(agent), TASK)
    assert result.success
    markers = compactions(result.task_id)
    assert markers and all(m.content.startswith("Earlier: ") for m in markers)  # the scripted stand-in
    summaries = [c for c in model_calls(result.task_id) if c["request"].get("max_tokens") == 140]
    assert len(summaries) == len(markers)  # one summary call per compaction, recorded
    assert max(c["tokens_in"] for c in model_calls(result.task_id)) <= 700
    history = task_dir(result.task_id).entries.path_to(_leaf(result.task_id))
    for marker in markers:
        assert history[marker.compaction.keep_from].role != "tool"
    if strategy == "hybrid":  # the last three turns (six messages) stay whole, the rest is summarized
        first = markers[0].compaction
        assert first.keep_from == [e.id for e in history].index(markers[0].id) - 6
    step = _step_after_compaction(result.task_id)
    sent = json.loads(invoke("trace", result.task_id, "--step", str(step), "--request", "--json").out)
    messages = (sent[0] if isinstance(sent, list) else sent["calls"][0])["request"]["messages"]
    assert messages[1]["content"] == TASK
    assert messages[2]["content"].startswith("Summary of the earlier conversation") and "Earlier: " in messages[2]["content"]


def test_scripted_summaries_and_a_second_compaction_folds_in_the_first(tmp_path: Path) -> None:
    agent = archivist(tmp_path, "summarize", max_tokens=500)
    script = tmp_path / "scripts/archivist.yaml"
    script.write_text(script.read_text() + "summaries:\n  - content: Notes 1-4 filed.\n"
                      "  - content: Notes 1-8 filed.\n  - content: Notes 1-11 filed.\n")
    result = magent.run(str(agent), TASK)
    assert result.success
    markers = compactions(result.task_id)
    assert len(markers) >= 2 and markers[0].content == "Notes 1-4 filed." and markers[1].content == "Notes 1-8 filed."
    pieces = [json.loads(line) for line in (task_dir(result.task_id).path / "requests.jsonl").read_text().splitlines()]
    asked = [p for p in pieces if "The summary so far" in json.dumps(p)]
    assert asked and "Notes 1-4 filed." in json.dumps(asked[0])  # iterative: never a summary of a summary


def test_default_budget_comes_from_the_models_context_window() -> None:
    from magent.llm.litellm_client import LiteLLMClient

    client = LiteLLMClient()
    assert client.context_window("openai/gpt-4o-mini") == 128000
    assert client.context_window("openai/no-such-model-anywhere") is None
    assert 0 < client.count_tokens("openai/gpt-4o-mini", "hello world") < 5


@pytest.mark.parametrize("config, words", [
    ("{short_term: {strategy: lru}}", "strategy"),
    ("{short_term: {max_tokens: 10}}", "max_tokens"),
    ("{short_term: {max_tokens: -5}}", "max_tokens"),
    ("{short_term: {keep_turns: 0}}", "keep_turns"),
    ("{shortterm: {}}", "did you mean 'short_term'"),
])
def test_a_bad_memory_config_is_a_config_error_at_its_line(tmp_path: Path, config: str, words: str,
                                                           magent_home: Path) -> None:
    agent = tmp_path / "a.yaml"
    agent.write_text(f"name: a\nrole: r\nsystem_prompt: s\nmemory_config: {config}\n"
                     "llm_config: {model: scripted, script: s.yaml}\n")
    (tmp_path / "s.yaml").write_text("responses:\n  - content: hi\n")
    for command in (("validate", str(agent)), ("run", str(agent), "-t", "x")):
        r = invoke(*command)
        assert r.code == 2 and "a.yaml:4:" in r.err and words in r.err, r.err
    assert not list((magent_home / "tasks").glob("*"))


@pytest.mark.parametrize("strategy", ["fifo", "summarize"])
def test_killed_right_after_the_compaction_entry_resumes_to_the_same_end(tmp_path: Path, magent_home: Path,
                                                                         strategy: str) -> None:
    agent = archivist(tmp_path, strategy)
    whole = magent.run(str(agent), TASK)
    assert whole.success
    expected = [c["tokens_in"] for c in model_calls(whole.task_id)]
    stored = kv_store(whole.task_id)
    shutil.rmtree(magent_home / "tasks")

    killed = run("run", str(agent), "-t", TASK, env={"MAGENT_FAILPOINT": "after_compaction_entry@1"})
    assert killed.code == -signal.SIGKILL, (killed.code, killed.out, killed.err)
    task_id = only_task(magent_home)
    [marker] = compactions(task_id)
    last = task_dir(task_id).checkpoints.read(checkpoint_numbers(task_id)[-1])
    assert last.leaf_entry_id != marker.id  # killed before any checkpoint knew of it

    resumed = invoke("resume", task_id)
    assert resumed.code == 0, resumed.out + resumed.err
    task = task_dir(task_id).load_task()
    assert task.status.value == "completed" and task.result == whole.output
    assert [m.id for m in compactions(task_id)] == [marker.id]  # taken back, not made again
    assert [c["tokens_in"] for c in model_calls(task_id)] == expected  # the same requests, none repeated
    assert kv_store(task_id) == stored and len(stored) == 12
    numbers = checkpoint_numbers(task_id)
    assert numbers == list(range(len(numbers)))


def test_fifo_with_attempts_keeps_a_line_per_tool_call_left_out(tmp_path: Path) -> None:
    agent = archivist(tmp_path, "fifo", max_tokens=600, extra="\n    attempts: true")
    result = magent.run(str(agent), TASK)
    assert result.success
    markers = compactions(result.task_id)
    assert markers and max(c["tokens_in"] for c in model_calls(result.task_id)) <= 600
    lines = markers[-1].content.splitlines()
    assert lines[0] == "Earlier attempts (one line per tool call):"
    assert lines[1].startswith('- kv.set({"key": "note_0') and "→ stored note_0" in lines[1]
    assert len(model_calls(result.task_id)) == 13  # no model call made the attempts
    step = _step_after_compaction(result.task_id)
    sent = json.loads(invoke("trace", result.task_id, "--step", str(step), "--request", "--json").out)
    messages = (sent[0] if isinstance(sent, list) else sent["calls"][0])["request"]["messages"]
    assert "Earlier attempts" in messages[2]["content"] and messages[1]["content"] == TASK
