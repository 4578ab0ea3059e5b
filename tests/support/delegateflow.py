"""A workflow for sub-agent tests: a lead agent delegates ledger work to two sub-agents in turn.

The worker does what the crash-test worker does (two concurrent calls, one to a
non-idempotent MCP tool, then a second turn and an answer: ledger a, b); then the
scribe appends c. A tool node records the lead's final answer.
"""

from __future__ import annotations

from pathlib import Path

from support.crashflow import make_flow
from support.engine import write


ONE_AFTER_THE_OTHER = """
responses:
  - content: I will hand this to the worker.
    tool_calls: [{name: agents.worker, arguments: {task: "Put a and b in the ledger, and k1 in kv."}}]
  - tool_calls: [{name: agents.scribe, arguments: {task: "Put c in the ledger."}}]
  - content: lead done
"""
BOTH_AT_ONCE = """
responses:
  - tool_calls:
      - {name: agents.worker, arguments: {task: "Put a and b in the ledger, and k1 in kv."}}
      - {name: agents.scribe, arguments: {task: "Put c in the ledger."}}
  - content: lead done
"""


def make_delegation(folder: Path, *, nap: float | None = None, approve: bool = False,
                    at_once: bool = False) -> Path:
    """``at_once``: the lead calls both sub-agents from one turn (they run concurrently)."""
    make_flow(folder, nap=nap)  # mcp.yaml and the worker (worker.yaml, worker.script.yaml)
    if approve:
        text = (folder / "mcp.yaml").read_text()
        write(folder, "mcp.yaml", text.rstrip() + "\n    tools: {append: {needs_approval: true}}\n")
    write(folder, "lead.script.yaml", BOTH_AT_ONCE if at_once else ONE_AFTER_THE_OTHER)
    write(folder, "lead.yaml", """
        name: lead
        role: delegates ledger work
        system_prompt: You lead. Delegate the work.
        sub_agents: [worker, scribe]
        llm_config: {model: scripted, script: lead.script.yaml}
        """)
    write(folder, "scribe.script.yaml", """
responses:
  - tool_calls: [{name: ledger.append, arguments: {line: c}}]
  - content: scribed
""")
    write(folder, "scribe.yaml", """
        name: scribe
        role: writes one line
        system_prompt: Write the line.
        tools: [ledger.append]
        llm_config: {model: scripted, script: scribe.script.yaml}
        """)
    return write(folder, "delegate.yaml", """
name: delegate
mcp_servers: mcp.yaml
entry_point: lead
nodes:
  lead: {type: agent, agent: lead}
  record: {type: tool, tool: kv.set, arguments: {key: final, value: $output}}
edges:
  - {from: lead, to: record}
""")
