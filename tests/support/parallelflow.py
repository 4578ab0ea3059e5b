"""A workflow for parallel tests: a fan-out to two branches that meet at a join, then a map.

plan → [left, right] → merge → items (a map over merge's JSON list) → record. Every branch and
item writes to the ledger MCP server (not idempotent), so a repeated call shows.
"""

from __future__ import annotations

from pathlib import Path

from support.crashflow import write_ledger_servers
from support.engine import write

ITEMS = ["x", "y", "z"]


def agent(folder: Path, name: str, script: str, tools: str = "[ledger.append]") -> None:
    write(folder, f"{name}.script.yaml", script)
    write(folder, f"{name}.yaml", f"""
        name: {name}
        role: {name} of the parallel test
        system_prompt: Do your part.
        tools: {tools}
        llm_config: {{model: scripted, script: {name}.script.yaml}}
        """)


def make_parallel(folder: Path, *, nap: float | None = None, right_pause: bool = False,
                  item_error: bool = False, on_error: str = "fail") -> Path:
    write_ledger_servers(folder)
    agent(folder, "planner", "responses:\n  - content: two tracks, then the items\n", tools="[]")
    agent(folder, "lefty", """
responses:
  - tool_calls: [{name: ledger.append, arguments: {line: L1}}]
  - content: left done
""")
    napping = f"\n  - tool_calls: [{{name: ledger.nap, arguments: {{seconds: {nap}}}}}]" if nap else ""
    agent(folder, "righty", f"""
responses:
  - tool_calls: [{{name: ledger.append, arguments: {{line: R1}}}}]{napping}
  - tool_calls: [{{name: ledger.append, arguments: {{line: R2}}}}]
  - content: right done
""", tools="[ledger.*]")
    agent(folder, "merger", f"""
responses:
  - content: '{ITEMS}'
""".replace("'", '"').replace('"[', "'[").replace(']"', "]'"), tools="[]")
    lines = []
    for item in ITEMS:
        if item_error and item == "y":  # two calls and no answer: the item runs out of iterations
            lines.append(f"  - {{when: 'Record {item}', tool_calls: [{{name: ledger.append, arguments: {{line: {item}}}}}]}}")
            lines.append(f"  - {{when: 'Record {item}', tool_calls: [{{name: ledger.append, arguments: {{line: {item}2}}}}]}}")
            continue
        lines.append(f"  - {{when: 'Record {item}', tool_calls: [{{name: ledger.append, arguments: {{line: {item}}}}}]}}")
        lines.append(f"  - {{when: 'Record {item}', content: 'recorded {item}'}}")
    agent(folder, "itemizer", "responses:\n" + "\n".join(lines) + "\n")
    if item_error:
        write(folder, "itemizer.yaml", (folder / "itemizer.yaml").read_text() + "max_iterations: 2\n")
    pause = "  check: {type: human, prompt: \"Is the right track fine?\"}\n" if right_pause else ""
    right_next = "check" if right_pause else "merge"
    extra_edge = "  - {from: check, to: merge}\n" if right_pause else ""
    return write(folder, "parallel.yaml", f"""
name: parallel
mcp_servers: mcp.yaml
entry_point: plan
nodes:
  plan: {{type: agent, agent: planner}}
  left: {{type: agent, agent: lefty}}
  right: {{type: agent, agent: righty}}
{pause}  merge: {{type: agent, agent: merger}}
  items: {{type: map, agent: itemizer, over: output, prompt: "Record {{item}}", max_concurrency: 2, on_error: {on_error}}}
  record: {{type: tool, tool: kv.set, arguments: {{key: final, value: $metadata.items}}}}
edges:
  - {{from: plan, to: [left, right]}}
  - {{from: left, to: merge}}
  - {{from: right, to: {right_next}}}
{extra_edge}  - {{from: merge, to: items}}
  - {{from: items, to: record}}
""")
