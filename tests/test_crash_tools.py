"""No process a tool started outlives a ``kill -9`` of magent: the kernel ends the command
itself (PR_SET_PDEATHSIG), and the next magent process that opens the task ends what the
command started in turn (its process group)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.cli import invoke
from support.engine import write
from support.recoveryflow import started_run, wait_for

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG and /proc are Linux's")


def running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def group_members(pgid: int) -> list[int]:
    """The live processes of group ``pgid`` (zombies left out)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != b"Z":
                found.append(int(name))
    return found


def until(check, timeout: float = 10) -> bool:
    deadline = time.time() + timeout
    while not check():
        if time.time() > deadline:
            return False
        time.sleep(0.05)
    return True


def shell_flow(folder: Path, pids: Path) -> Path:
    """One agent whose first turn runs ``sh``, which starts ``sleep`` and waits."""
    write(folder, "shell.yaml", """
        builtins:
          shell: {enabled: true, allow_commands: [sh], timeout_seconds: 600}
        """)
    script = write(folder, "start.sh", f"sleep 300 &\necho $$ $! > {pids}.tmp\nmv {pids}.tmp {pids}\nwait\n")
    write(folder, "script.yaml", f"""
        responses:
          - tool_calls: [{{name: shell.run, arguments: {{command: [sh, "{script}"]}}}}]
          - content: done
        """)
    return write(folder, "runner.yaml", """
        name: runner
        role: runs a command
        system_prompt: run it
        tools: [shell.run]
        mcp_servers: shell.yaml
        llm_config: {model: scripted, script: script.yaml}
        """)


@pytest.mark.parametrize("opener", [("resume", "{id}", "--no-input"), ("tasks", "list"), ("trace", "{id}")],
                         ids=["resume", "tasks-list", "trace"])
def test_a_shell_command_and_what_it_started_do_not_outlive_kill_9(magent_home: Path, tmp_path: Path,
                                                                   opener: tuple[str, ...]) -> None:
    pids = tmp_path / "pids"
    run = started_run(shell_flow(tmp_path, pids))
    leftovers: list[int] = []
    try:
        wait_for(pids, run)
        sh, sleeper = (int(p) for p in pids.read_text().split())
        assert group_members(sh) == sorted([sh, sleeper])
        (task_id,) = [p.name for p in (magent_home / "tasks").iterdir()]
        assert (magent_home / "locks" / f"{task_id}.tools" / str(sh)).exists()   # beside its lock

        os.kill(run.pid, signal.SIGKILL)
        run.wait(timeout=30)
        assert until(lambda: not running(sh)), "the command outlived magent"   # the kernel ended it
        leftovers = group_members(sh)
        assert leftovers == [sleeper]   # what it started lives on in its group, until...

        opened = invoke(*(a.format(id=task_id[:8]) for a in opener))   # ...the next magent opens the task
        assert opened.code in (0, 3), opened.out + opened.err
        assert until(lambda: not group_members(sh)), f"{group_members(sh)} outlived {opener}"
        assert not (magent_home / "locks" / f"{task_id}.tools").exists()
    finally:
        for pid in leftovers:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if run.poll() is None:
            run.kill()


def test_a_finished_command_leaves_no_note(magent_home: Path, tmp_path: Path) -> None:
    flow = tmp_path / "flow"
    flow.mkdir()
    write(flow, "shell.yaml", "builtins:\n  shell: {enabled: true, allow_commands: [echo]}\n")
    write(flow, "script.yaml", """
        responses:
          - tool_calls: [{name: shell.run, arguments: {command: echo hi}}]
          - content: done
        """)
    agent = write(flow, "runner.yaml", "name: runner\nrole: r\nsystem_prompt: s\ntools: [shell.run]\n"
                                       "mcp_servers: shell.yaml\nllm_config: {model: scripted, script: script.yaml}\n")
    result = invoke("run", str(agent), "-t", "go")
    assert result.code == 0, result.err
    assert list((magent_home / "locks").iterdir()) == []   # locks/ keeps nothing of a finished run
