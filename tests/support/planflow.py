"""A workflow for plan tests: a planner, two researchers' subtasks in one level, and a draft that
depends on both.

The planner first answers with a plan that has a cycle (sent back to it), then a valid one that
gives the draft to ``flaky``, whose subtask always runs out of iterations; after its retry the
plan is revised and gives the draft to ``writer`` (or, with ``revise_ok=False``, to ``flaky``
again, so the run pauses for a person; a person's note containing "try harder" gets it done).
Every worker writes to the ledger MCP server (not idempotent), so a repeated subtask shows.
"""

from __future__ import annotations

import json
from pathlib import Path

from support.crashflow import write_ledger_servers
from support.engine import write

FACTS = [{"id": "facts_a", "description": "Collect fact A", "agent": "researcher", "depends_on": []},
         {"id": "facts_b", "description": "Collect fact B", "agent": "researcher", "depends_on": []}]


def plan_json(drafter: str, *, cycle: bool = False) -> str:
    draft = {"id": "draft", "description": "Draft the report", "agent": drafter,
             "depends_on": ["facts_a", "facts_b"]}
    facts = [dict(f) for f in FACTS]
    if cycle:
        facts[0]["depends_on"] = ["draft"]
    return json.dumps({"subtasks": [*facts, draft], "success_criteria": "a report with A and B"})


def make_plan_flow(folder: Path, *, revise_ok: bool = True, max_retries: int = 1, nap: float | None = None) -> Path:
    """``nap``: fact B's subtask first calls ledger.nap for that long (a real kill -9 lands there)."""
    write_ledger_servers(folder)
    revised = "writer" if revise_ok else "flaky"
    planner = {"responses": [
        {"when": "Break this task", "content": "Here is my plan: " + plan_json("flaky", cycle=True)},
        {"when": "Break this task", "content": plan_json("flaky")},
        {"when": "A subtask of your plan failed", "content": plan_json(revised)},
        {"when": "Every subtask of the plan is done", "content": "Final report: A is 1, B is 2."},
    ]}
    researcher = {"responses": [
        {"when": "Collect fact A", "tool_calls": [{"name": "ledger.append", "arguments": {"line": "A"}}]},
        {"when": "Collect fact A", "content": "fact A is 1"},
        *([{"when": "Collect fact B", "tool_calls": [{"name": "ledger.nap", "arguments": {"seconds": nap}}]}]
          if nap else []),
        {"when": "Collect fact B", "tool_calls": [{"name": "ledger.append", "arguments": {"line": "B"}}]},
        {"when": "Collect fact B", "content": "fact B is 2"},
    ]}
    writer = {"responses": [
        {"tool_calls": [{"name": "ledger.append", "arguments": {"line": "draft"}}]},
        {"content": "report: A=1, B=2"},
    ]}
    flaky = {"responses": [
        {"when": "try harder", "content": "report after the note"},
        {"when": "Draft the report", "tool_calls": [{"name": "ledger.append", "arguments": {"line": "flaky"}}]},
    ]}
    for name, script, extra in (("planner", planner, ""), ("researcher", researcher, ""),
                                ("writer", writer, ""), ("flaky", flaky, "max_iterations: 1\n")):
        write(folder, f"{name}.script.yaml", json.dumps(script, indent=1))
        tools = "[]" if name == "planner" else "[ledger.*]"
        write(folder, f"{name}.yaml", f"name: {name}\nrole: the {name}\nsystem_prompt: Do your part.\n"
                                      f"tools: {tools}\nllm_config: {{model: scripted, script: {name}.script.yaml}}\n"
                                      + extra)
    return write(folder, "planned.yaml", f"""
name: planned
mcp_servers: mcp.yaml
entry_point: plan
nodes:
  plan: {{type: plan, agent: planner, workers: [researcher, writer, flaky], max_retries: {max_retries}}}
  record: {{type: tool, tool: kv.set, arguments: {{key: final, value: $output}}}}
edges:
  - {{from: plan, to: record}}
""")
