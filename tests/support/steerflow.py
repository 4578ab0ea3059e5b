"""A run that keeps going while a test steers it: an agent whose every turn calls the built-in
shell tool to ``sleep``, with a final answer after ``turns`` turns; and helpers to start it as a
real ``magent run`` subprocess and wait for what it writes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

from support.cli import invoke
from support.engine import task_dir, write

HI = "Also say hi to the team"
"""What the tests tell the running agent."""


def make_flow(folder: Path, *, turns: int = 4, nap: float = 0.6, answer: str = "all done",
              server: bool = False) -> Path:
    """``flow.yaml``: one agent node, ``worker``, ``turns`` turns of ``shell.run sleep NAP``;
    with ``server``, the worker may also call the ledger MCP server (a stdio process of the run)."""
    from support.crashflow import LEDGER_SERVER

    ledger = (f"servers:\n  - {{name: ledger, transport: stdio, config: {{command: {sys.executable}, "
              f"args: [{LEDGER_SERVER}], env: {{LEDGER: {folder / 'ledger.txt'}}}}}}}\n") if server else ""
    write(folder, "mcp.yaml", ledger + """
builtins:
  shell: {enabled: true, allow_commands: [sleep, echo], timeout_seconds: 60}
""")
    steps = "".join(f"  - content: step {i}\n    tool_calls: [{{name: shell.run, arguments: {{command: 'sleep {nap}'}}}}]\n"
                    for i in range(1, turns + 1))
    write(folder, "worker.script.yaml", f"responses:\n{steps}  - content: {answer}\n")
    tools = "[shell.run, ledger.*]" if server else "[shell.run]"
    write(folder, "worker.yaml", f"""
        name: worker
        role: a slow worker
        system_prompt: work slowly
        tools: {tools}
        max_iterations: 20
        llm_config: {{model: scripted, script: worker.script.yaml}}
        """)
    return write(folder, "flow.yaml", """
        name: slowflow
        mcp_servers: mcp.yaml
        entry_point: work
        nodes:
          work: {type: agent, agent: worker}
        edges: []
        """)


def start(flow: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    """``magent run FLOW "do the work" --no-input ARGS`` as a subprocess of its own group."""
    return subprocess.Popen([sys.executable, "-m", "magent", "run", str(flow), "-t", "do the work", "--no-input", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})}, start_new_session=True)


def wait_for(home: Path, text: str, proc: subprocess.Popen | None = None, timeout: float = 60) -> str:
    """Until the only task's events.jsonl contains ``text``; returns the task id."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        found = list((home / "tasks").glob("*/events.jsonl"))
        if found and text in found[0].read_text():
            return found[0].parent.name
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the run ended first ({proc.returncode}): {proc.stderr.read() if proc.stderr else ''}")
        time.sleep(0.05)
    raise AssertionError(f"no {text!r} in events.jsonl within {timeout}s")


def main_path(task_id: str) -> list:
    td = task_dir(task_id)
    cp = td.checkpoints.read(td.checkpoints.last_number())
    return td.entries.path_to(cp.leaf_entry_id)


def injections(entries) -> list[tuple[int | None, str]]:
    return [(e.signal, e.content) for e in entries if e.entry_type == "injection"]


def request_after_injection(task_id: str) -> str:
    """What the first model call after the operator's message sent (``trace --step N --request``)."""
    trace = invoke("trace", task_id)
    steps = re.findall(r"^ *(\d+) +✉ operator said: " + re.escape(HI), trace.out, re.M)
    for n in range(int(steps[-1]) + 1, int(steps[-1]) + 6):  # (a resume's steps may come between)
        shown = invoke("trace", task_id, "--step", str(n), "--request")
        if shown.code == 0:
            return shown.out
    raise AssertionError(f"no model call after the operator's message:\n{trace.out}")


def make_lead(folder: Path, *, turns: int = 6, both: bool = False) -> Path:
    """``lead.yaml``'s workflow: a lead agent that delegates to the slow worker (``make_flow``'s),
    then answers "lead done"; with ``both``, to the worker and a second slow worker, ``helper``, at
    once (two sub-agent sessions running side by side)."""
    make_flow(folder, turns=turns, answer="worker done")
    calls = "[{name: agents.worker, arguments: {task: work}}" + (
        ", {name: agents.helper, arguments: {task: help}}]" if both else "]")
    write(folder, "lead.script.yaml", f"responses:\n  - tool_calls: {calls}\n  - content: lead done\n")
    if both:
        script = (folder / "worker.script.yaml").read_text().replace("worker done", "helper done")
        write(folder, "helper.script.yaml", script)
        write(folder, "helper.yaml", (folder / "worker.yaml").read_text()
              .replace("name: worker", "name: helper").replace("worker.script", "helper.script"))
    write(folder, "lead.yaml", f"""
        name: lead
        role: hands the work on
        system_prompt: delegate
        sub_agents: [worker{', helper' if both else ''}]
        llm_config: {{model: scripted, script: lead.script.yaml}}
        """)
    return write(folder, "leadflow.yaml", """
        name: leadflow
        mcp_servers: mcp.yaml
        entry_point: lead
        nodes:
          lead: {type: agent, agent: lead}
        edges: []
        """)


def session_of(task_id: str, agent: str) -> str:
    """The id of the session in which sub-agent ``agent`` ran (from the task's checkpoints)."""
    td = task_dir(task_id)
    for number in range(td.checkpoints.last_number() + 1):
        for session in td.checkpoints.read(number).sessions:
            if session.agent == agent:
                return session.session_id
    raise AssertionError(f"no session of {agent!r} in task {task_id[:8]}")
