"""A run with a real model (litellm against the local OpenAI-compatible stub) ends promptly:
after its answer, and at Ctrl-C or SIGTERM while a model call is outstanding (issue 10 item 6,
issue 18 item 4).

Exit latency is judged against the teardown of a plain interpreter that loaded the same
libraries, measured in the same test (``support.exiting``), never against a fixed number
of seconds.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.cli import invoke
from support.engine import checkpoint_numbers, task_dir, write
from support.exiting import seconds_until_exit, teardown_baseline
from support.openai_stub import OpenAIStub

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def baseline() -> float:
    return teardown_baseline()


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


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "magent", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def test_a_run_ends_promptly_after_its_answer(tmp_path: Path, magent_home: Path, baseline: float) -> None:
    with OpenAIStub() as stub:
        stub.text("Forty two.")
        proc = start("run", str(agent_at(tmp_path, stub.url)), "-t", "the answer?", "--json")
        after, lines = seconds_until_exit(proc, lambda line: '"type": "run_finished"' in line)
    assert proc.returncode == 0, "".join(lines) + proc.stderr.read()
    assert json.loads(lines[-1])["output"] == "Forty two."  # the AgentResult line
    # The answer is out; closing servers, writing the trace and leaving Python must not take
    # longer than half of what Python's own teardown of these libraries takes.
    assert after < 0.5 * baseline, (after, baseline)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_signal_during_a_model_call_stops_at_once_and_the_task_resumes(
        sig: signal.Signals, tmp_path: Path, magent_home: Path, baseline: float) -> None:
    with OpenAIStub() as stub:
        stub.error(503)  # attempt 1 fails,
        stub.hang(3600)  # attempt 2 would be answered in an hour
        stub.text("Answered after the resume.")
        proc = start("run", str(agent_at(tmp_path, stub.url, retries=1)), "-t", "take your time")
        deadline = time.monotonic() + 120
        while len(stub.received) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(stub.received) == 2, "the run never made its second attempt"
        time.sleep(0.2)
        os.killpg(proc.pid, sig)  # Ctrl-C reaches the whole foreground group
        waited = time.monotonic()
        out, err = proc.communicate(timeout=120)
        after = time.monotonic() - waited
        assert proc.returncode == 130, (out, err)
        assert after < 0.5 * baseline, (after, baseline)
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
