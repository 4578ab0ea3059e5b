"""A workflow for batch tests: a tool node stamps the row's label through the stamp MCP server
(``$metadata.label``), naps ``$metadata.nap`` seconds, then a scripted agent answers."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from support.engine import write

STAMP_SERVER = Path(__file__).resolve().parent / "stamp_server.py"


def make_batch_flow(folder: Path, *, shared: bool = True, pause: bool = False) -> Path:
    write(folder, "mcp.yaml", f"""
        servers:
          - name: stamp
            transport: stdio
            shared: {'true' if shared else 'false'}
            config:
              command: {sys.executable}
              args: [{STAMP_SERVER}]
              env: {{LEDGER: "${{LEDGER}}", LEDGER_WAKE: "${{LEDGER_WAKE:-}}"}}
            tools:
              nap: {{idempotent: true}}
        """)
    write(folder, "answer.script.yaml", """
        responses:
          - content: row done
        """)
    write(folder, "answerer.yaml", """
        name: answerer
        role: batch test agent
        system_prompt: answer
        tools: []
        llm_config: {model: scripted, script: answer.script.yaml}
        """)
    gate = "checkpoints: [answer]\n" if pause else ""
    return write(folder, "flow.yaml", f"""
name: batchflow
mcp_servers: mcp.yaml
entry_point: stamp
nodes:
  stamp: {{type: tool, tool: stamp.stamp, arguments: {{label: $metadata.label}}}}
  nap: {{type: tool, tool: stamp.nap, arguments: {{seconds: $metadata.nap}}}}
  answer: {{type: agent, agent: answerer}}
edges:
  - {{from: stamp, to: nap}}
  - {{from: nap, to: answer}}
{gate}""")


def write_inputs(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def stamps(ledger: Path) -> list[tuple[int, str]]:
    """``(server pid, label)`` of each stamp in the ledger; a nap's line is ``(0, "nap")``."""
    return [(pid, label) for pid, _, label in stamp_lines(ledger)]


def stamp_lines(ledger: Path) -> list[tuple[int, int, str]]:
    """``(server pid, pid of the process that started the server, label)`` of each line."""
    if not ledger.exists():
        return []
    out = []
    for line in ledger.read_text().splitlines():
        parts = line.split(" ", 2)
        out.append((int(parts[0]), int(parts[1]), parts[2]) if len(parts) == 3 else (0, 0, line))
    return out
