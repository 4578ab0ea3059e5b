"""A one-agent workflow on the toolbox MCP server for recovery tests, and waiting on a live run."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from support.engine import write

TOOLBOX = Path(__file__).resolve().parent.parent / "servers" / "toolbox.py"

ECHO = "{name: toolbox.echo, arguments: {text: hello}}"
SLOW = "{name: toolbox.slow, arguments: {seconds: 60}}"


def toolbox_flow(folder: Path, first: str = ECHO, *, idempotent_slow: bool = False) -> Path:
    """One agent that calls a toolbox tool once (``first``), then answers. The server's start-up
    can be slowed (``$START_DELAY``), and ``toolbox.slow`` wakes early once ``$WAKE`` exists;
    ``idempotent_slow`` declares it safe to run again, so a resume reruns it without asking."""
    tools = "\n            tools: {slow: {idempotent: true}}" if idempotent_slow else ""
    write(folder, "mcp.yaml", f"""
        servers:
          - name: toolbox
            transport: stdio
            connect_timeout_seconds: 120
            config:
              command: {sys.executable}
              args: [{TOOLBOX}]
              env: {{TOOLBOX_START_DELAY: "${{START_DELAY:-0}}", TOOLBOX_PIDFILE: "${{PIDFILE:-}}",
                     TOOLBOX_WAKE: "${{WAKE:-}}"}}{tools}
        """)
    write(folder, "echoer.script.yaml", f"""
        responses:
          - tool_calls: [{first}]
          - content: the server said hello
        """)
    write(folder, "echoer.yaml", """
        name: echoer
        role: echoes
        system_prompt: echo
        tools: [toolbox.*]
        llm_config: {model: scripted, script: echoer.script.yaml}
        """)
    return write(folder, "flow.yaml", """
        name: echoflow
        mcp_servers: mcp.yaml
        entry_point: echo
        nodes:
          echo: {type: agent, agent: echoer}
        edges: []
        """)


def started_run(flow: Path, **env: str) -> subprocess.Popen:
    """``magent run FLOW`` in its own session (so a test can signal it and what it started)."""
    return subprocess.Popen([sys.executable, "-m", "magent", "run", str(flow), "-t", "say hello"],
                            env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def wait_for(path: Path, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.time() + timeout
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.time() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def wait_for_event(home: Path, text: str, proc: subprocess.Popen, timeout: float = 60) -> str:
    """Until the run's events.jsonl holds ``text``; returns the task id."""
    deadline = time.time() + timeout
    while True:
        found = list((home / "tasks").glob("*/events.jsonl"))
        if found and text in found[0].read_text():
            return found[0].parent.name
        assert proc.poll() is None, "the run ended early"
        assert time.time() < deadline, f"the run never wrote {text}"
        time.sleep(0.05)
