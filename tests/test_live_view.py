"""The live view of a run with a real model (litellm against the local stub) in a real terminal:
a call in progress shows its model, attempt and elapsed seconds (issue 10 item 30, issue 18
item 13)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from support.engine import write
from support.openai_stub import OpenAIStub
from support.terminal import Terminal

pytestmark = pytest.mark.slow

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")


def test_a_model_call_in_progress_shows_its_attempt_and_elapsed_time(tmp_path: Path,
                                                                    magent_home: Path) -> None:
    with OpenAIStub() as stub:
        stub.error(503)                         # attempt 1 fails at once
        stub.text("All done here.", delay=2)    # attempt 2 takes a while
        agent = write(tmp_path, "talker.yaml", f"""
            name: talker
            role: answers
            system_prompt: Answer.
            llm_config: {{model: openai/stub-model, endpoint: '{stub.url}', max_retries: 1}}
            """)
        term = Terminal("run", str(agent), "-t", "go")
        term.expect("completed")  # (the answer streamed: a terminal does not show it twice)
        code = term.finish()
    screen = ANSI.sub("", term.seen)
    assert code == 0, screen
    assert re.search(r"waiting for openai/stub-model · \d+ s", screen), screen
    assert "failed after" in screen and "server error (HTTP 503)" in screen
    assert re.search(r"waiting for openai/stub-model · attempt 2/2 · \d+ s", screen), screen
