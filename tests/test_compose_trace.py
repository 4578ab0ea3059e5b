"""The composition examples as a user meets them: they run offline, and ``magent trace`` nests each
child session under its node with a time bar, ``--session`` shows one, usage rolls up per agent
and per session, and ``magent graph`` draws map, fan-out, join and plan nodes."""

from __future__ import annotations

import json
import re
from pathlib import Path

from support.cli import invoke
from support.engine import task_dir

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / "examples" / "workflows"


def run_example(name: str) -> str:
    result = invoke("run", str(WORKFLOWS / f"{name}.yaml"), "-t", "Tidy launch", "--no-input")
    assert result.code == 0, result.out + result.err
    return result.out.split()[1]


def test_the_plan_example_replans_and_its_trace_nests_every_session(magent_home: Path) -> None:
    task_id = run_example("plan_launch")
    td = task_dir(task_id)
    assert td.load_task().result == "Launch note: Tidy, the 20 cm desk tray for home offices, at 29 euros."
    out = invoke("trace", task_id).out
    for text in ("• plan: 3 subtasks in 2 levels: market, price | copy",
                 "• subtask copy (drafter) retrying after try 1: agent 'drafter' reached max_iterations (1)",
                 "• revising the plan (revision 1): subtask 'copy' (drafter) failed 2 time(s)",
                 "⇢ researcher · subtask market#0", "⇢ drafter · subtask copy#1", "⇢ copywriter · subtask copy#2",
                 "⇢ planner · plan revision 1", "⇢ planner · synthesis"):
        assert text in out, text
    header = next(line for line in out.splitlines() if "⇢ drafter · subtask copy#0" in line)
    assert "failed" in header and "▕" in header      # the session's time bar within its siblings'
    # usage per agent and per session, under the per-model table
    assert "\nagent " in out and "\nsession " in out
    calls = dict(re.findall(r"^(planner|drafter|researcher|copywriter) +(\d+) ", out, re.M))
    assert calls == {"planner": "3", "drafter": "2", "researcher": "3", "copywriter": "1"}
    trace = json.loads(td.trace_file.read_text())
    sessions = trace["sub_agent_sessions"]
    assert sorted((s["key"], s["status"]) for s in sessions.values()) == [
        ("plan:0", "completed"), ("plan:1", "completed"), ("subtask:copy#0", "failed"),
        ("subtask:copy#1", "failed"), ("subtask:copy#2", "completed"), ("subtask:market#0", "completed"),
        ("subtask:price#0", "completed"), ("synthesis:1", "completed")]
    # one session alone, by its key or its id's first characters
    one = invoke("trace", task_id, "--session", "subtask:copy#2")
    assert one.code == 0 and "⇢ copywriter · subtask copy#2" in one.out
    assert "researcher" not in one.out and "market" not in one.out
    sid = next(k for k, s in sessions.items() if s["key"] == "subtask:copy#2")
    assert invoke("trace", task_id, "--session", sid[:8]).out == one.out
    missing = invoke("trace", task_id, "--session", "nope")
    assert missing.code == 2 and "no session 'nope' in this task; sessions: " in missing.err
    graph = invoke("graph", str(WORKFLOWS / "plan_launch.yaml"))
    assert "planned by planner, done by researcher, drafter, copywriter" in graph.out


def test_the_map_and_fan_out_example_shows_items_branches_and_the_join(magent_home: Path) -> None:
    task_id = run_example("review_sections")
    td = task_dir(task_id)
    state = td.checkpoints.read(td.checkpoints.last_number()).state
    assert state.metadata["sections"] == [
        "Tidy is a 20 cm desk tray. It holds cables, pens and a phone.",
        "Tidy is for people who work from home. Their desk is also their kitchen table.",
        "A clear desk takes ten seconds. Nothing rolls away."]
    out = invoke("trace", task_id).out
    for text in ("• map: 3 items with section_writer, 2 at a time", "⇢ section_writer · item 1",
                 "• map: 3 of 3 items done", "• ⇉ fan-out to style, facts (joining at assemble)",
                 "▸ style  agent · proofreader · branch style", "▸ facts  agent · fact_checker · branch facts",
                 "• ⋈ joined style, facts"):
        assert text in out, text
    # each branch's turn under its own node, though the two ran at once and their steps interleave
    style, facts = out.index("▸ style "), out.index("▸ facts ")
    assert style < out.index("Style: short sentences") < facts < out.index("Facts: '20 cm'")
    # every map item and every branch has a time bar, 24 cells wide, within its siblings' span
    bars = [line for line in out.splitlines() if ("⇢" in line or "▸" in line)
            and ("· item " in line or "· branch " in line)]
    assert len(bars) == 5 and all(re.search(r"▕[ █]{24}▏", line) for line in bars), bars
    kinds = sorted(s["kind"] for s in json.loads(td.trace_file.read_text())["sub_agent_sessions"].values())
    assert kinds == ["branch", "branch", "map", "map", "map"]
    mermaid = invoke("graph", str(WORKFLOWS / "review_sections.yaml"), "--format", "mermaid").out
    assert '==>|"parallel"|' in mermaid and "⋈ joins style, facts" in mermaid and "map: section_writer" in mermaid


def test_the_delegation_example_runs_its_sub_agents_in_their_own_sessions(magent_home: Path) -> None:
    task_id = run_example("research_brief")
    td = task_dir(task_id)
    assert td.load_task().result.startswith("Brief: Tidy is a 20 cm tray")
    out = invoke("trace", task_id).out
    assert "⇢ researcher · sub-agent" in out and "⇢ summarizer · sub-agent" in out
    sessions = json.loads(td.trace_file.read_text())["sub_agent_sessions"]
    assert sorted(s["agent"] for s in sessions.values()) == ["researcher", "summarizer"]
