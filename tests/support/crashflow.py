"""A workflow for crash tests: concurrent calls to a non-idempotent MCP tool and an idempotent
built-in, a second turn, a final answer, and a tool node that records it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from magent.models import Checkpoint, Event
from magent.store.tasks import TaskDir
from support.cli import Result, invoke, run
from support.engine import checkpoint_numbers, task_dir, write

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


# The start, kill and resume that the crash tests of sessions, branches and plans share.
# The run that is killed is always a real process (a failpoint's SIGKILL, or kill -9 from here);
# the resumes after it run in-process (cli.invoke): what they check is what the kill left on disk.

def resume_to_the_end(task_id: str, ledger: Path, env: dict[str, str], *, in_child: bool = False,
                      ran: "Callable[[str, Path, str], bool] | None" = None) -> Result:
    """``magent resume`` until the task stops pausing. A pause here is a non-idempotent call
    that may or may not have run: the ledger tells the truth (``ran(task_id, ledger, line)``;
    by default, whether the line is in it), so it is rejected if it ran, else approved.
    ``in_child``: each such pause must be asked in an open child session."""
    resumed = invoke("resume", task_id, env=env)
    while resumed.code == 3:
        cp = task_dir(task_id).checkpoints.read(checkpoint_numbers(task_id)[-1])
        assert cp.human_request.kind == "tool_recovery", cp.human_request
        if in_child:
            assert cp.human_request.session in {s.session_id for s in cp.sessions}   # asked in the child
        line = cp.human_request.details["arguments"]["line"]
        done = ran(task_id, ledger, line) if ran is not None else line in ledger_lines(ledger)
        resumed = invoke("resume", task_id, "--reject" if done else "--approve", env=env)
    return resumed


def killed_and_resumed(flow: Path, home: Path, point: str, nth: int, text: str, **resume: Any) -> tuple[str, Path]:
    """Run ``flow`` (its ledger beside it) until failpoint ``point@nth`` kills it, then resume it
    to a completed end (``resume`` goes to ``resume_to_the_end``); the task id and the ledger."""
    ledger = flow.parent / "ledger.txt"
    env = {"LEDGER": str(ledger)}
    task_id = killed_at(flow, home, point, nth, env, text)
    resumed = resume_to_the_end(task_id, ledger, env, **resume)
    assert resumed.code == 0, (resumed.out, resumed.err)
    return task_id, ledger


def run_whole(flow: Path, home: Path, text: str) -> tuple[str, Path]:
    """Run ``flow`` once without interruption to a completed end; the task id and the ledger."""
    ledger = flow.parent / "ledger.txt"
    assert invoke("run", str(flow), "-t", text, env={"LEDGER": str(ledger)}).code == 0
    return only_task(home), ledger


def killed_in_nap_then_paused(flow: Path, home: Path, text: str) -> tuple[str, Path, Checkpoint]:
    """kill -9 ``flow`` during its ledger.nap call, resume it: it must pause asking about that
    call. The task id, the ledger and the checkpoint of the pause."""
    ledger = flow.parent / "ledger.txt"
    task_id = killed_during_nap(flow, home, {"LEDGER": str(ledger)}, text)
    paused = invoke("resume", task_id, env={"LEDGER": str(ledger)})
    assert paused.code == 3 and "ledger.nap" in paused.out
    return task_id, ledger, task_dir(task_id).checkpoints.read(checkpoint_numbers(task_id)[-1])


def histories_are_whole(td: TaskDir, finished: list[Event]) -> None:
    """Each child session in ``finished`` (its session_finished events) has one history whose
    tool calls are each answered exactly once."""
    entries = td.entries.load()
    for event in finished:
        mine = [e for e in entries.values() if e.session == event.field("session")]
        answered = [e.tool_call_id for e in mine if e.role == "tool"]
        asked = [c.id for e in mine if e.role == "assistant" for c in e.tool_calls]
        assert sorted(answered) == sorted(asked) and len(set(answered)) == len(answered)
