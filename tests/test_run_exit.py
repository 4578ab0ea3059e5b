"""A run with a real model (litellm against the local OpenAI-compatible stub) ends promptly:
after its answer, and at Ctrl-C or SIGTERM while a model call is outstanding (issue 10 item 6,
issue 18 item 4).

What made those exits slow was Python's own teardown (its final garbage collections over the
objects litellm, mcp and pydantic leave loaded, then freeing module after module: 1 to 5 s).
The tests check that cause, not a time: the process ends without that teardown, and nothing is
left at work in it when it ends (no thread Python would wait for, no child process).
benchmarks/run_exit.py reports the seconds.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from support.cli import invoke
from support.engine import checkpoint_numbers, task_dir, write
from support.exiting import exit_report, watched_magent
from support.openai_stub import OpenAIStub

pytestmark = pytest.mark.slow


def agent_at(folder: Path, url: str, retries: int = 0) -> Path:
    return write(folder, "talker.yaml", f"""
        name: talker
        role: answers
        system_prompt: Answer briefly.
        llm_config:
          model: openai/stub-model
          endpoint: {url}
          max_retries: {retries}
        """)


def start(report: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(watched_magent(str(report), *args), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def assert_left_at_once(report: Path, code: int) -> None:
    """The process ended through magent's immediate exit with ``code``, skipping Python's
    teardown, and nothing in it was still running."""
    left = exit_report(str(report))
    assert left == {"code": code, "threads": [], "children": []}, left


def test_a_run_ends_promptly_after_its_answer(tmp_path: Path, magent_home: Path) -> None:
    report = tmp_path / "exit.json"
    with OpenAIStub() as stub:
        stub.text("Forty two.")
        proc = start(report, "run", str(agent_at(tmp_path, stub.url)), "-t", "the answer?", "--json")
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, out + err
    lines = out.splitlines()
    assert '"type": "run_finished"' in "".join(lines[:-1])
    assert json.loads(lines[-1])["output"] == "Forty two."  # the AgentResult line: all flushed
    # The answer is out: the servers are closed and the trace written before the command returns,
    # then the process ends without Python's teardown of these libraries.
    assert_left_at_once(report, 0)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_signal_during_a_model_call_stops_at_once_and_the_task_resumes(
        sig: signal.Signals, tmp_path: Path, magent_home: Path) -> None:
    report = tmp_path / "exit.json"
    with OpenAIStub() as stub:
        stub.error(503)  # attempt 1 fails,
        stub.hang(3600)  # attempt 2 would be answered in an hour
        stub.text("Answered after the resume.")
        proc = start(report, "run", str(agent_at(tmp_path, stub.url, retries=1)), "-t", "take your time")
        deadline = time.monotonic() + 120
        while len(stub.received) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(stub.received) == 2, "the run never made its second attempt"
        time.sleep(0.2)
        os.killpg(proc.pid, sig)  # Ctrl-C reaches the whole foreground group
        # the model call would be answered in an hour: ending at all means it was stopped
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 130, (out, err)
        assert_left_at_once(report, 130)
        assert "magent resume" in err
        (task_id,) = [p.name for p in (magent_home / "tasks").iterdir() if not p.name.startswith(".")]
        td = task_dir(task_id)
        assert td.checkpoints.read(checkpoint_numbers(task_id)[-1]).reason == "interrupt"
        resumed = invoke("resume", task_id, "--no-input")
    assert resumed.code == 0, resumed.out + resumed.err
    task = td.load_task()
    assert task.result == "Answered after the resume."
    # Both stopped attempts are in the record, and neither counts as a model turn or as usage.
    assert task.usage.calls == 1
    assert "1 model call (3 attempts, 2 failed)" in invoke("trace", task_id).out
