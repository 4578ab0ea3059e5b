"""``magent trace ID``: the tree, ``--step N``, ``--json``, and what it says about damaged tasks."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from magent.models import SCHEMA_VERSION, TaskStatus, TraceLog
from magent.store.tasks import Store
from magent.testing import QueueModel
from magent.tools.function import FunctionProvider
from support.cli import invoke
from support.engine import agent_yaml, home_snapshot, run_with, task_dir, write
from support.holders import hold_task

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_example(target: str, *args: str) -> str:
    result = invoke("run", str(EXAMPLES / target), "-t", "example task", "--no-input", *args)
    assert result.code in (0, 3), result.out + result.err
    return result.out.splitlines()[0].split()[1]


def numbered(out: str) -> dict[int, str]:
    """Step number → its line in the tree."""
    lines = {}
    for line in out.splitlines():
        m = re.match(r"^\s*(\d+) (.*)$", line)
        if m:
            lines[int(m.group(1))] = m.group(2)
    return lines


def test_the_tree_tells_the_story_of_a_reflection_loop() -> None:
    task_id = run_example("workflows/write_review.yaml")
    result = invoke("trace", task_id[:8])
    assert result.code == 0 and result.err == ""
    out = result.out
    assert out.startswith(f"task {task_id} · write_review · completed\n")
    steps = numbered(out)
    assert steps[1].startswith("▸ write  agent · writer · ") and steps[1].endswith(" ms")
    assert steps[2].startswith("  turn 0 · scripted · ") and "tokens · $0.0000 · " in steps[2]
    assert steps[4].startswith("▸ review  reflection · critic")
    assert steps[5].startswith("▸ write  agent · writer · visit 2")
    order = [out.index(s) for s in ("Let me save a working title", '→ kv.set {"key": "title", "value": "Tidy"}  SUCCESS',
                                    "verdict revise (round 1/3): Too vague", "visit 2", "verdict pass (round 2/3)",
                                    "→ END")]
    assert order == sorted(order)
    totals = out[out.index("\nmodel ") + 1:].splitlines()
    assert re.match(r"^scripted\s+5\s+\d+\s+\d+\s+\$0\.0000$", totals[1])
    assert f"magent trace {task_id[:8]} --step N" in out


def test_pauses_and_decisions_show_in_the_tree() -> None:
    task_id = run_example("workflows/triage.yaml", "--set", "ticket=checkout down", "--set", "priority=high")
    paused = invoke("trace", task_id)
    assert "· awaiting_human" in paused.out.splitlines()[0]
    assert "⏸ waiting for a person (approval): Node 'escalate' has finished" in paused.out
    assert invoke("resume", task_id, "--approve", "-m", "page them", "--no-input").code == 0
    out = invoke("trace", task_id).out
    assert "· completed" in out.splitlines()[0]
    steps = numbered(out)
    assert steps[1].startswith("▸ store  tool")
    assert "→ kv.set" in out and "→ route" in out and "→ escalate" in out
    tail = [steps[n] for n in sorted(steps)][-3:]
    assert tail[0].startswith("  ⏸ waiting for a person (approval)")
    assert tail[1].startswith("  ↻ resumed from checkpoint")
    assert tail[2] == "  ✔ a person chose approve: page them"


def test_a_human_node_reject_then_approve(tmp_path: Path) -> None:
    task_id = run_example("workflows/publish.yaml")
    assert "▸ approve  human  ⏸ waiting for a person" in invoke("trace", task_id).out
    assert invoke("resume", task_id, "--reject", "-m", "shorter please", "--no-input").code == 3
    assert invoke("resume", task_id, "--approve", "--no-input").code == 0
    out = invoke("trace", task_id).out
    assert "✔ a person chose reject: shorter please" in out and "✔ a person chose approve" in out
    assert out.index("chose reject") < out.index("▸ revise") < out.index("chose approve") < out.index("▸ publish")


def test_step_shows_one_step_whole(tmp_path: Path) -> None:
    tools = FunctionProvider("t")
    long_page = "".join(f"line {i}\n" for i in range(800))  # ~6,000 characters: truncated in the trace
    tools.add("read", lambda: long_page, "read")
    tools.add("huge", lambda: "y" * 30_000 + "TAIL", "too big for the model")
    model = QueueModel([{"content": "Reading.", "tool_calls": [{"name": "t.read", "arguments": {}},
                                                               {"name": "t.huge", "arguments": {}}]},
                        "All " + "words " * 400 + "read."])
    outcome = run_with(model, write(tmp_path, "w.yaml", agent_yaml("w", "[t.*]")), providers=[tools])
    tree = invoke("trace", outcome.task_id).out
    assert "line 799" not in tree  # the tree shows a short preview
    step = invoke("trace", outcome.task_id, "--step", "2")
    assert step.code == 0, step.err
    assert step.out.startswith("step 2 · turn · w:0")
    assert "line 0\n" in step.out and "  line 799\n" in step.out  # the whole result, as the model saw it
    assert "result (from entries.jsonl (what the model saw))" in step.out
    artifact = re.search(r"full output: (\S+) \((\d+) bytes\)", step.out)
    assert artifact, step.out
    assert Path(artifact.group(1)).read_text().endswith("TAIL") and int(artifact.group(2)) == 30_004
    node = invoke("trace", outcome.task_id, "--step", "1").out
    assert "All " + "words " * 399 + "words read." in node.replace("\n  ", " ")  # the answer, untruncated
    assert "t.read() → SUCCESS" in node and "steps inside: 2, 3" in node
    as_json = json.loads(invoke("trace", outcome.task_id, "--step", "2", "--json").out)
    assert as_json["tool_calls"][0]["result"] == long_page
    assert as_json["tool_calls"][1]["artifact"]["exists"] is True


def test_json_is_the_tracelog_with_action_results() -> None:
    task_id = run_example("workflows/write_review.yaml")
    result = invoke("trace", task_id, "--json")
    assert result.code == 0
    trace = TraceLog.model_validate_json(result.out)
    assert trace.task_id == task_id and len(trace.steps) == 7
    assert trace.actions[0].tool_calls[0].result == "stored title"
    assert {"task_id", "steps", "sub_agent_sessions", "created_at", "updated_at"} <= set(json.loads(result.out))


def test_a_running_task_is_shown_from_its_events(tmp_path: Path, magent_home: Path) -> None:
    """A run in progress (another process holds the lock; no trace.json yet)."""
    task_id = run_example("workflows/write_review.yaml")
    td = task_dir(task_id)
    td.trace_file.unlink()
    lines = td.events_file.read_text().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if '"type":"node_started","node":"review"' in line)
    td.events_file.write_text("".join(lines[:cut + 1]) + lines[cut + 1][:20])  # a line being written
    task = td.load_task()
    td.save_task(task.model_copy(update={"status": TaskStatus.running}))
    with hold_task(task_id):
        result = invoke("trace", task_id)
        assert result.code == 0 and result.err == ""  # a half-written last line is not a problem
        head = result.out.splitlines()[0]
        assert head.endswith("· running · live")
        assert "▸ review  reflection · critic · running…" in result.out
    dead = invoke("trace", task_id)  # nobody holds it: the run died
    assert dead.out.splitlines()[0].endswith("· interrupted")
    assert "did not finish" in dead.out
    assert "events.jsonl: torn last line ignored" in dead.err


@pytest.mark.parametrize("damage, note", [
    ("missing", "trace.json is missing; built from events.jsonl"),
    ("older", f"trace.json has an older schema version (0; this magent writes {SCHEMA_VERSION}); "
              "built from events.jsonl"),
    ("garbage", "trace.json is unreadable"),
])
def test_a_damaged_trace_json_is_rebuilt_from_events_with_a_note(damage: str, note: str) -> None:
    task_id = run_example("workflows/write_review.yaml")
    td = task_dir(task_id)
    good = invoke("trace", task_id).out
    if damage == "missing":
        td.trace_file.unlink()
    elif damage == "older":
        doc = json.loads(td.trace_file.read_text())
        doc["schema_version"] = 0
        td.trace_file.write_text(json.dumps(doc))
    else:
        td.trace_file.write_text("{not json")
    before = home_snapshot(td.store.root)
    result = invoke("trace", task_id)
    assert result.code == 0
    assert note in result.err
    assert result.out == good  # the same story
    assert home_snapshot(td.store.root) == before  # and nothing written


def test_without_events_an_older_trace_is_shown_as_it_is() -> None:
    task_id = run_example("workflows/write_review.yaml")
    td = task_dir(task_id)
    doc = json.loads(td.trace_file.read_text())
    doc["schema_version"] = 0
    td.trace_file.write_text(json.dumps(doc))
    td.events_file.unlink()
    result = invoke("trace", task_id)
    assert result.code == 0
    assert "events.jsonl is missing" in result.err and "showing what it holds" in result.err
    assert "verdict pass" in result.out
    step = invoke("trace", task_id, "--step", "2")
    assert "stored title" in step.out and "inputs and outputs are shown as the trace kept them" in step.out


def test_a_torn_line_in_the_middle_of_events_is_reported_and_skipped() -> None:
    task_id = run_example("workflows/write_review.yaml")
    td = task_dir(task_id)
    td.trace_file.unlink()
    lines = td.events_file.read_text().splitlines(keepends=True)
    lines[3] = lines[3][:15] + "\n"
    td.events_file.write_text("".join(lines))
    result = invoke("trace", task_id)
    assert result.code == 0
    assert "events.jsonl:4: not valid JSON, skipped" in result.err
    assert "verdict pass" in result.out


def test_missing_task_json_still_shows_the_trace() -> None:
    task_id = run_example("agents/note_taker.yaml")
    task_dir(task_id).task_file.unlink()
    result = invoke("trace", task_id)
    assert result.code == 0
    assert "task.json is missing" in result.err
    assert "▸ note_taker" in result.out


@pytest.mark.parametrize("args, message", [
    (["0000"], "no task matches '0000'"),
    (["../etc"], "is not a task id or id prefix"),
    (["STEP", "--step", "99"], "has no step 99 (its steps are 1..7)"),
    (["STEP", "--step", "0"], "--step counts from 1"),
    (["STEP", "--follow", "--step", "2"], "--follow and --step do not go together"),
])
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    task_id = run_example("workflows/write_review.yaml")
    args = [task_id if a == "STEP" else a for a in args]
    result = invoke("trace", *args)
    assert result.code == 2
    assert result.err.count("\n") == 1 and message in result.err and result.out == ""


def test_an_ambiguous_prefix_is_refused() -> None:
    ids = [run_example("agents/note_taker.yaml") for _ in range(12)]
    prefix = next(a[:1] for a in ids if sum(b.startswith(a[:1]) for b in ids) > 1)
    result = invoke("trace", prefix)
    assert result.code == 2 and "give more characters" in result.err


@pytest.mark.slow
def test_colour_on_a_terminal_plain_text_elsewhere() -> None:
    task_id = run_example("workflows/write_review.yaml")
    plain = invoke("trace", task_id)
    assert plain.code == 0 and "\x1b[" not in plain.out
    coloured = invoke("trace", task_id, env={"FORCE_COLOR": "1"})
    assert "\x1b[" in coloured.out
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured.out).splitlines()[:3] == plain.out.splitlines()[:3]
    assert "\x1b[" not in invoke("trace", task_id, env={"FORCE_COLOR": "1", "NO_COLOR": "1"}).out


@pytest.mark.slow
def test_trace_never_imports_litellm_or_mcp() -> None:
    task_id = run_example("workflows/write_review.yaml")
    # (the command run in-process: the magent program itself ends with os._exit, so nothing
    # would be printed after it)
    code = ("import sys; sys.argv = ['magent', 'trace', sys.argv[1]] + sys.argv[2:]\n"
            "from magent.cli.app import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print('MODULES', sorted({m.split('.')[0] for m in sys.modules}))")
    for extra in ([], ["--step", "2"], ["--json"], ["--follow"], ["--html", "-"]):
        p = subprocess.run([sys.executable, "-c", code, task_id, *extra], capture_output=True, text=True,
                           timeout=60)
        modules = p.stdout.rsplit("MODULES", 1)[1]
        assert "'litellm'" not in modules and "'mcp'" not in modules and "'openai'" not in modules, extra
    graph = subprocess.run([sys.executable, "-c", code.replace("'trace', sys.argv[1]", "'graph', sys.argv[1]"),
                            str(EXAMPLES / "workflows/triage.yaml")], capture_output=True, text=True, timeout=60)
    modules = graph.stdout.rsplit("MODULES", 1)[1]
    assert "'litellm'" not in modules and "'mcp'" not in modules


def test_every_step_number_in_the_tree_opens_with_step() -> None:
    task_id = run_example("workflows/triage.yaml", "--set", "ticket=x", "--set", "priority=high")
    invoke("resume", task_id, "--approve", "--no-input")
    steps = numbered(invoke("trace", task_id).out)
    trace = TraceLog.model_validate_json(invoke("trace", task_id, "--json").out)
    assert sorted(steps) == list(range(1, len(trace.steps) + 1))
    for n in steps:
        result = invoke("trace", task_id, "--step", str(n))
        assert result.code == 0 and result.out.startswith(f"step {n} · ")
        assert trace.steps[n - 1].step_name in result.out.splitlines()[0]
    assert Store().resolve(task_id[:8]) == task_id


def test_a_fork_says_where_it_came_from() -> None:
    parent = run_example("workflows/publish.yaml")
    forked = invoke("resume", parent, "--from-checkpoint", "2", "--no-input")
    child = forked.out.splitlines()[0].split()[1]
    steps = numbered(invoke("trace", child).out)
    assert steps[1] == f"↻ forked from task {parent[:8]} at checkpoint 2"


def test_each_visit_of_a_tool_node_shows_its_own_call(tmp_path: Path) -> None:
    """A tool node visited twice in a run (a loop), then twice again in a follow-up (where its
    visits count from 1 again): each of its four steps shows the call that visit made."""
    write(tmp_path, "w.script.yaml", "responses:\n  - content: one\n  - content: two\n"
                                     "  - content: three\n  - content: four\n")
    write(tmp_path, "w.yaml", agent_yaml("w"))
    flow = write(tmp_path, "flow.yaml", """
        name: loop
        entry_point: work
        nodes:
          work: {type: agent, agent: w}
          record: {type: tool, tool: kv.set, arguments: {key: final, value: $output}}
        edges:
          - {from: work, to: record}
          - {from: record, to: work, condition: "visits.record < 2"}
          - {from: record, to: END}
        """)
    task_id = invoke("run", str(flow), "-t", "work", "--no-input").out.split()[1]
    assert invoke("chat", task_id, "one more thing", "--no-input").code == 0
    out = invoke("trace", task_id).out
    records = [n for n, line in numbered(out).items() if line.startswith("▸ record  tool")]
    words = ["one", "two", "three", "four"]
    assert len(records) == 4, out
    for number, word in zip(records, words):
        block = out[out.index(f"\n{number:>2} ▸ record") + 1:].split("\n")[1]
        assert f'→ kv.set {{"key": "final", "value": "{word}"}}  SUCCESS' in block, out
    assert out.count("→ END") == 2 and out.count("→ work") == 2, out
    asked = next(n for n, line in numbered(out).items() if line.startswith("↻ follow-up for work: one more thing"))
    assert out.index("→ END") < out.index(f"{asked} ↻ follow-up"), out  # the first exchange ended before it
    assert "steps inside" not in invoke("trace", task_id, "--step", str(records[1])).out
    steps = json.loads(invoke("trace", task_id, "--json").out)["steps"]
    called = [[c["arguments"]["value"] for c in s["tool_calls"]] for s in steps if s["step_name"] == "record"]
    assert called == [[word] for word in words]
    last = invoke("trace", task_id, "--step", str(records[-1])).out
    assert "kv.set" in last and "four" in last and "three" not in last, last
