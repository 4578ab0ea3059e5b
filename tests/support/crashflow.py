"""A workflow for crash tests: concurrent calls to a non-idempotent MCP tool and an idempotent
built-in, a second turn, a final answer, and a tool node that records it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.cli import run
from support.engine import write

LEDGER_SERVER = Path(__file__).resolve().parent / "ledger_server.py"


def write_ledger_servers(folder: Path) -> Path:
    """``mcp.yaml`` with the ledger server, writing to ``$LEDGER``."""
    return write(folder, "mcp.yaml", f"""
        servers:
          - name: ledger
            transport: stdio
            config:
              command: {sys.executable}
              args: [{LEDGER_SERVER}]
              env: {{LEDGER: "${{LEDGER}}", LEDGER_WAKE: "${{LEDGER_WAKE:-}}"}}
        """)


def make_flow(folder: Path, *, nap: float | None = None, pause: bool = False) -> Path:
    write_ledger_servers(folder)
    first = "[{name: ledger.append, arguments: {line: a}}, {name: kv.set, arguments: {key: k1, value: 1}}]"
    napping = f"\n  - tool_calls: [{{name: ledger.nap, arguments: {{seconds: {nap}}}}}]" if nap else ""
    write(folder, "worker.script.yaml", f"""
responses:
  - content: two things at once
    tool_calls: {first}{napping}
  - tool_calls: [{{name: ledger.append, arguments: {{line: b}}}}]
  - content: all done
""")
    write(folder, "worker.yaml", """
        name: worker
        role: crash test worker
        system_prompt: work
        tools: [ledger.*, kv.*]
        llm_config: {model: scripted, script: worker.script.yaml}
        """)
    gate = "checkpoints: [work]\n" if pause else ""
    return write(folder, "flow.yaml", f"""
name: crashflow
mcp_servers: mcp.yaml
entry_point: work
nodes:
  work: {{type: agent, agent: worker}}
  record: {{type: tool, tool: kv.set, arguments: {{key: final, value: $output}}}}
edges:
  - {{from: work, to: record}}
{gate}""")


def only_task(home: Path) -> str:
    (task,) = [p.name for p in (home / "tasks").iterdir() if not p.name.startswith(".")]
    return task


def wait_for_nap(home: Path, proc: subprocess.Popen, timeout: float = 120) -> None:
    """Until the run has started its call to ledger.nap (the intent is in events.jsonl)."""
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        found = list((home / "tasks").glob("*/events.jsonl"))
        if found and '"tool":"ledger.nap"' in found[0].read_text():
            return
        time.sleep(0.1)
    pytest.fail("the run never reached the nap call")


def ledger_lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def killed_at(flow: Path, home: Path, point: str, nth: int, env: dict[str, str], text: str = "crash") -> str:
    """Run ``flow`` until failpoint ``point@nth`` kills it with SIGKILL; the task's id."""
    killed = run("run", str(flow), "-t", text, env={**env, "MAGENT_FAILPOINT": f"{point}@{nth}"})
    assert killed.code == -signal.SIGKILL, (killed.code, killed.out, killed.err)
    return only_task(home)


def killed_during_nap(flow: Path, home: Path, env: dict[str, str], text: str = "nap") -> str:
    """Run ``flow`` in a process group and kill -9 it while its ledger.nap call runs; the task's id."""
    proc = subprocess.Popen([sys.executable, "-m", "magent", "run", str(flow), "-t", text],
                            env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        wait_for_nap(home, proc)
        time.sleep(0.3)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    return only_task(home)
