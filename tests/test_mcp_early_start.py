"""A run with a real model starts its MCP servers while litellm is imported for the model checks."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from support.cli import run

TOOLBOX = Path(__file__).resolve().parent / "servers" / "toolbox.py"


def agent_with_server(folder: Path, pidfile: Path, *, endpoint: bool = True) -> Path:
    (folder / "mcp.yaml").write_text(
        "servers:\n  - name: box\n    transport: stdio\n"
        f"    config: {{command: {sys.executable}, args: [{TOOLBOX}], env: {{TOOLBOX_PIDFILE: '{pidfile}'}}}}\n")
    where = "\n  endpoint: http://127.0.0.1:9/v1\n  api_key: sk-local" if endpoint else ""
    agent = folder / "caller.yaml"
    agent.write_text("name: caller\nrole: calls a tool\nsystem_prompt: Call the tool.\ntools: [box.echo]\n"
                     f"mcp_servers: mcp.yaml\nllm_config:\n  model: openai/gpt-4o-mini{where}\n")
    return agent


def wait_for(path: Path, deadline: float = 60) -> str:
    """The content of ``path`` once a process wrote it (the deadline only catches a hang)."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.05)
    raise AssertionError(f"{path} was never written")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "\nState:\tZ" in status.read_text())


def test_the_server_is_spawned_before_the_task_exists(tmp_path: Path, magent_home: Path) -> None:
    # Killed (SIGKILL) the moment the task's directory is made: before that, a run started its
    # tool servers only after checkpoint 0. A server spawned earlier still starts and writes its pid.
    pidfile = tmp_path / "box.pid"
    agent = agent_with_server(tmp_path, pidfile)
    result = run("run", str(agent), "-t", "echo hi", "--quiet", env={"MAGENT_FAILPOINT": "after_task_created"})
    assert result.code == -9, result.err
    pid = int(wait_for(pidfile))
    end = time.monotonic() + 30  # its magent is gone: the server sees its stdin close and exits
    while alive(pid) and time.monotonic() < end:
        time.sleep(0.05)
    assert not alive(pid)


def test_a_model_check_that_fails_stops_the_servers_started_meanwhile(tmp_path: Path,
                                                                       magent_home: Path) -> None:
    pidfile = tmp_path / "box.pid"
    agent = agent_with_server(tmp_path, pidfile, endpoint=False)  # no key, none in the environment
    assert "OPENAI_API_KEY" not in os.environ
    result = run("run", str(agent), "-t", "echo hi")
    assert result.code == 2
    assert result.err.strip() == ("magent: error: agent 'caller': model 'openai/gpt-4o-mini' needs "
                                  "OPENAI_API_KEY, which is not set")
    assert not (magent_home / "tasks").exists() or not any((magent_home / "tasks").iterdir())
    if pidfile.exists() and pidfile.read_text().strip():  # spawned in time to write it
        assert not alive(int(pidfile.read_text()))
