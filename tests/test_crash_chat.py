"""A follow-up survives ``kill -9`` (issue 12 item 1): killed during its model call or between
its checkpoints, ``magent chat ID`` (or ``magent resume ID``) continues it to the end state
an uninterrupted follow-up reaches. Real processes, real SIGKILL."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from support.cli import invoke, run
from support.crashflow import only_task
from support.engine import all_files_parse, task_dir, write
from support.openai_stub import OpenAIStub
from support.terminal import Terminal
from test_chat import prompts

pytestmark = pytest.mark.slow


def scripted_agent(folder: Path) -> Path:
    write(folder, "talk.yaml", """
        responses:
          - content: "Let me note it."
            tool_calls: [{name: kv.set, arguments: {key: meeting, value: "Thursday"}}]
          - content: "Noted: Thursday."
          - content: "Checking."
            tool_calls: [{name: kv.get, arguments: {key: meeting}}]
          - content: "It is on Thursday."
        """)
    return write(folder, "noter.yaml", """
        name: noter
        role: takes notes
        system_prompt: Note things.
        tools: [kv.*]
        llm_config: {model: scripted, script: talk.yaml}
        """)


def conversation(task_id: str) -> list[tuple[str, str]]:
    td = task_dir(task_id)
    cp = td.checkpoints.read(td.checkpoints.last_number())
    return [(e.role, e.content) for e in td.entries.path_to(cp.leaf_entry_id)]


END_STATE = [("user", "The meeting is Thursday"), ("assistant", "Let me note it."), ("tool", "stored meeting"),
             ("assistant", "Noted: Thursday."), ("user", "When is it?"), ("assistant", "Checking."),
             ("tool", "Thursday"), ("assistant", "It is on Thursday.")]


@pytest.mark.parametrize("point,go_on", [
    ("after_checkpoint@1", "chat"),        # the follow-up's message and checkpoint are written
    ("after_assistant_entry@1", "chat"),   # its first reply is written, its tool not yet run
    ("after_tool_entry@1", "chat"),        # the tool's result is written, no checkpoint yet
    ("before_checkpoint@3", "resume"),     # the final reply is written, its node not yet closed
    ("before_link@1", "resume"),           # the message is written, its checkpoint not yet in place
])
def test_a_follow_up_killed_between_its_checkpoints_continues_to_the_same_end(
        tmp_path: Path, magent_home: Path, point: str, go_on: str) -> None:
    agent = scripted_agent(tmp_path)
    first = invoke("chat", str(agent), "The meeting is Thursday")
    assert first.code == 0, first.err
    task_id = only_task(magent_home)
    killed = run("chat", task_id[:8], "When is it?", env={"MAGENT_FAILPOINT": point})
    assert killed.code == -signal.SIGKILL, (killed.out, killed.err)
    all_files_parse(magent_home)
    assert '"status": "interrupted"' in invoke("tasks", "show", task_id[:8], "--json").out

    done = invoke(go_on, task_id[:8])
    assert done.code == 0, done.err
    assert "It is on Thursday." in done.out
    # The end state of an uninterrupted follow-up: each message once, in order, under the last.
    assert conversation(task_id) == END_STATE
    task = task_dir(task_id).load_task()
    assert task.status.value == "completed" and task.result == "It is on Thursday."
    numbers = task_dir(task_id).checkpoints.numbers()
    assert numbers == list(range(len(numbers)))
    shown = invoke("trace", task_id[:8]).out   # one exchange for the one message
    assert shown.count("When is it?") == 1, shown
    said = [e.content for e in task_dir(task_id).entries.load().values() if e.role == "user"]
    assert said == ["The meeting is Thursday", "When is it?"]   # no copy left beside the path


def test_an_interactive_chat_killed_during_a_model_call_continues_with_chat_id(
        tmp_path: Path, magent_home: Path) -> None:
    with OpenAIStub() as stub:
        agent = write(tmp_path, "talker.yaml", f"""
            name: talker
            role: answers
            system_prompt: Answer briefly.
            llm_config: {{model: openai/stub-model, endpoint: {stub.url}, max_retries: 0}}
            """)
        stub.text("Noted: Thursday.").hang(600)
        term = Terminal("chat", str(agent))
        # Generous waits: they only guard against a hang (loading litellm under a loaded
        # machine takes what it takes); the verdict never depends on them.
        try:
            term.expect("you> ", timeout=240)
            term.type("The meeting is Thursday")
            term.expect("Noted: Thursday.", timeout=240)
            prompts(term, 2)
            term.type("When is it?")
            deadline = time.time() + 240
            while len(stub.requests) < 2:  # the follow-up's model call is in flight
                assert time.time() < deadline, term.seen
                time.sleep(0.05)
        finally:
            if term.proc.poll() is None:
                os.kill(term.proc.pid, signal.SIGKILL)
            term.proc.wait(timeout=60)
            os.close(term.master)
        task_id = only_task(magent_home)
        all_files_parse(magent_home)
        assert conversation(task_id)[-1] == ("user", "When is it?")
        stub.text("It is on Thursday.")
        done = invoke("chat", task_id[:8])
    assert done.code == 0, done.err
    assert "It is on Thursday." in done.out
    assert conversation(task_id) == [("user", "The meeting is Thursday"), ("assistant", "Noted: Thursday."),
                                     ("user", "When is it?"), ("assistant", "It is on Thursday.")]
    # The model saw the whole conversation when asked again.
    sent = stub.requests[-1]["messages"]
    assert [m["content"] for m in sent if m["role"] != "system"] == [
        "The meeting is Thursday", "Noted: Thursday.", "When is it?"]
