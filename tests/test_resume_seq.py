"""A task's live event stream (``--json``, the API's ``on_event``) never gives two events the same
``seq``, across resumes: a live-only event (a checkpoint notice) shown just before a kill keeps
its number to itself, while a run that stopped on its own is continued number after number."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.cli import invoke, run

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "workflows"
pytestmark = pytest.mark.slow


def _events(out: str) -> list[dict]:
    return [doc for doc in map(json.loads, out.splitlines()) if doc.get("type") != "result"]


def test_a_run_killed_after_a_checkpoint_notice_is_resumed_with_new_numbers(magent_home: Path) -> None:
    killed = run("run", str(EXAMPLES / "write_review.yaml"), "-t", "copy", "--json", "--no-input",
                 env={"MAGENT_FAILPOINT": "after_checkpoint@2"})
    assert killed.code == -9, killed.err
    before = _events(killed.out)
    assert before[-1]["type"] == "checkpoint"  # shown live, never written
    task_id = before[0]["task_id"]
    resumed = invoke("resume", task_id, "--json", "--no-input")
    assert resumed.code == 0, resumed.err
    after = _events(resumed.out)
    seqs = [e["seq"] for e in before + after]
    assert len(seqs) == len(set(seqs)), [(e["seq"], e["type"]) for e in before + after]
    assert after[0]["seq"] > before[-1]["seq"]
    # What is on disk reads as before: numbers rise, and the trace shows the whole run.
    on_disk = [json.loads(line)["seq"] for line in (magent_home / "tasks" / task_id / "events.jsonl").open()]
    assert on_disk == sorted(set(on_disk))
    assert invoke("trace", task_id).code == 0


def test_a_paused_run_is_continued_number_after_number(magent_home: Path) -> None:
    paused = invoke("run", str(EXAMPLES / "triage.yaml"), "-t", "the app crashes", "--set", "priority=high",
                    "--set", "ticket=t", "--json", "--no-input")
    assert paused.code == 3, paused.err
    before = _events(paused.out)
    resumed = invoke("resume", before[0]["task_id"], "--approve", "--json", "--no-input")
    assert resumed.code == 0, resumed.err
    after = _events(resumed.out)
    assert after[0]["seq"] == before[-1]["seq"] + 1
    seqs = [e["seq"] for e in before + after]
    assert len(seqs) == len(set(seqs))


def test_a_run_killed_during_a_model_call_is_resumed_with_new_numbers(tmp_path: Path, magent_home: Path) -> None:
    """The start of a model attempt is live only too: killed while the model is asked, the run
    showed it last."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from support.engine import write
    from support.openai_stub import STUB_KEY, OpenAIStub

    with OpenAIStub() as stub:
        stub.hang(60)  # (until the stub closes)
        agent = write(tmp_path, "asker.yaml", f"""
            name: asker
            role: answers
            system_prompt: Answer.
            llm_config: {{model: openai/stub-model, endpoint: {stub.url}, api_key: "${{STUB_TEST_KEY}}"}}
            """)
        env = {**os.environ, "STUB_TEST_KEY": STUB_KEY}
        proc = subprocess.Popen([sys.executable, "-m", "magent", "run", str(agent), "-t", "hi", "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        lines = []
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.append(line)
                if '"llm_started"' in line:
                    break
            deadline = time.monotonic() + 60
            while not stub.received and time.monotonic() < deadline:  # the request is with the model
                time.sleep(0.01)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
        before = _events("".join(lines))
        assert before[-1]["type"] == "llm_started", before
        stub.text("Hello.")
        resumed = invoke("resume", before[0]["task_id"], "--json", "--no-input", env={"STUB_TEST_KEY": STUB_KEY})
    assert resumed.code == 0, resumed.err
    after = _events(resumed.out)
    seqs = [e["seq"] for e in before + after]
    assert len(seqs) == len(set(seqs)), [(e["seq"], e["type"]) for e in before + after]
