"""``magent trace ID --follow``: a live run shown as it happens, against real subprocesses."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from magent.store.tasks import Store
from magent.trace.follow import Tail
from servers.harness import stdio_server, write_mcp_file
from support.cli import invoke
from support.engine import write

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

pytestmark = pytest.mark.slow

SLOW_WORKFLOW = """
name: slow
mcp_servers: mcp.yaml
entry_point: first
nodes:
  first: {type: tool, tool: tb.slow, arguments: {seconds: 0.2}}
  second: {type: tool, tool: tb.slow, arguments: {seconds: SECONDS}}
edges:
  - {from: first, to: second}
  - {from: second, to: END}
"""


def magent(*args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "magent", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **kw.pop("env", {})}, **kw)


def rest_of(proc: subprocess.Popen) -> tuple[str, str]:
    """What ``proc`` prints until it exits, after a ``readline`` (``communicate`` would skip
    whatever that readline buffered beyond the first line)."""
    out, err = proc.stdout.read(), proc.stderr.read()
    proc.wait(120)
    return out, err


def start_slow_run(tmp_path: Path) -> tuple[subprocess.Popen, str, Path]:
    """A run whose second node stays in ``tb.slow`` until the test creates the returned file."""
    wake = tmp_path / "wake"
    write_mcp_file(tmp_path / "mcp.yaml", [stdio_server("tb", env={"TOOLBOX_WAKE": str(wake)})])
    workflow = write(tmp_path, "slow.yaml", SLOW_WORKFLOW.replace("SECONDS", "600"))
    run = magent("run", str(workflow), "-t", "wait a bit", "--no-input")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ids = Store().task_ids()
        if ids and (Store().tasks_dir / ids[0] / "events.jsonl").exists():
            return run, ids[0], wake
        assert run.poll() is None, run.communicate()
        time.sleep(0.05)
    raise AssertionError("the run did not start")


def test_follow_shows_a_live_run_until_it_ends(tmp_path: Path) -> None:
    run, task_id, wake = start_slow_run(tmp_path)
    follow = magent("trace", task_id[:8], "--follow")
    try:
        first = follow.stdout.readline()
        assert run.poll() is None  # following started while the run was going (it waits for us)
    finally:
        wake.touch()
    out, err = rest_of(follow)
    run.communicate(timeout=120)
    assert follow.returncode == 0, err
    assert run.returncode == 0
    assert first == f"following task {task_id} — Ctrl-C to stop\n"
    at = 0
    for piece in ("▸ first", "← SUCCESS", "▸ second", '→ tb.slow {"seconds": 600}', "← SUCCESS", "completed · "):
        at = out.index(piece, at) + len(piece)  # each after the one before
    assert err == ""


def test_follow_json_streams_events_as_json_lines(tmp_path: Path) -> None:
    run, task_id, wake = start_slow_run(tmp_path)
    follow = magent("trace", task_id, "--follow", "--json")
    try:
        first = follow.stdout.readline()
        assert run.poll() is None
    finally:
        wake.touch()
    out, err = rest_of(follow)
    run.communicate(timeout=120)
    events = [json.loads(line) for line in [first, *out.splitlines()]]
    assert events[0]["type"] == "run_started" and events[-1]["type"] == "run_finished"
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
    assert len({e["seq"] for e in events}) == len(events)  # each event once


def test_ctrl_c_stops_following_quietly_with_130(tmp_path: Path) -> None:
    run, task_id, wake = start_slow_run(tmp_path)
    try:
        follow = magent("trace", task_id, "--follow")
        assert follow.stdout.readline().startswith("following task ")  # it is following now
        follow.send_signal(signal.SIGINT)
        out, err = rest_of(follow)
        assert follow.returncode == 130
        assert "Traceback" not in err and err.strip() == ""
        assert "interrupted" not in out  # the run was not: only the following stopped
        assert run.poll() is None  # the run itself goes on
    finally:
        wake.touch()
        run.communicate(timeout=120)
    assert run.returncode == 0


def test_following_a_finished_or_dead_task_prints_it_and_stops() -> None:
    result = invoke("run", str(EXAMPLES / "workflows/write_review.yaml"), "-t", "copy", "--no-input")
    task_id = result.out.splitlines()[0].split()[1]
    done = invoke("trace", task_id, "--follow")
    assert done.code == 0 and "verdict: pass" in done.out and "completed · 5 model calls" in done.out
    # A run that died: status running, last event not an ending, nobody holds the lock.
    td = Store().task(task_id)
    lines = td.events_file.read_text().splitlines(keepends=True)
    td.events_file.write_text("".join(lines[:-1]))
    dead = invoke("trace", task_id, "--follow")
    assert dead.code == 0 and "the run is not live" in dead.out


def test_tail_reads_only_complete_lines(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    tail = Tail(path)
    assert tail.read() == []  # no file yet
    with open(path, "ab") as fh:
        fh.write(b'{"seq": 1}\n{"seq": 2')
    assert tail.read() == [{"seq": 1}]
    with open(path, "ab") as fh:
        fh.write(b', "type": "x"}\n')
    assert tail.read() == [{"seq": 2, "type": "x"}]
    assert tail.read() == []
