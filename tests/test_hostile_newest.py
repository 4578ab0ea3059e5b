"""A new user's bad input across the newest commands and settings: each mistake is one line
naming what and where, exit code 2, no traceback, nothing written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from support.cli import invoke, run
from support.engine import agent_yaml, write


def routed_agent(folder: Path, llm_lines: str) -> Path:
    return write(folder, "routed.yaml", "name: routed\nrole: r\nsystem_prompt: s\ntools: [kv.*]\n"
                 "llm_config:\n  model: openai/big-model\n" + llm_lines)


@pytest.mark.parametrize(("lines", "said"), [
    ("  models: [openai/big-model, 3]\n",
     "routed.yaml:7:30: llm_config.models[1]: expected text or a mapping, got 3"),
    ("  models: [openai/big-model, openai/small]\n  routing: [{turn: first, model: true}]\n",
     "routed.yaml:8:27: llm_config.routing[0].model: expected a whole number or text, got True"),
    ("  models: [openai/big-model, {}]\n",
     "routed.yaml:7:30: llm_config.models[1].model: missing required field 'model'"),
    ("  models: [openai/big-model, {model: openai/small, api_key: 5}]\n",
     "routed.yaml:7:52: llm_config.models[1].api_key: expected text, got 5"),
])
def test_a_value_that_fits_no_form_of_a_setting_is_one_line(tmp_path: Path, magent_home: Path,
                                                            lines: str, said: str) -> None:
    """A model given as neither a string nor a mapping was two lines naming pydantic's members
    (``models[1].str``, ``models[1].FallbackModel``); a mapping with a bad field also said
    ``expected text, got a mapping``."""
    result = invoke("validate", str(routed_agent(tmp_path, lines)))
    assert result.code == 2
    assert result.err.splitlines() == [f"magent: error: invalid agent: {tmp_path / said}"]


def test_text_that_is_not_utf8_is_refused_before_anything_is_written(tmp_path: Path, magent_home: Path) -> None:
    """A message, a task or a --set value with bytes that are not UTF-8 (a shell's $'\\xff') was an
    internal error (exit 1) naming a UnicodeEncodeError; a file of that name is still read."""
    write(tmp_path, "note.script.yaml", "responses:\n  - content: noted\n")
    agent = write(tmp_path, "note.yaml", agent_yaml("note").replace("note.script.yaml", str(tmp_path / "note.script.yaml")))
    first = invoke("run", str(agent), "-t", "remember milk")
    assert first.code == 0, first.err
    task_id = first.out.split()[1]
    before = sorted(p.name for p in (magent_home / "tasks" / task_id).iterdir())
    for args, number, shown in (
            (("chat", task_id[:8], "\udcff hi"), 3, r"b'\xff hi'"),
            (("run", str(agent), "-t", "caf\udce9"), 4, r"b'caf\xe9'"),
            (("run", str(agent), "-t", "hi", "--set", "tone=\udcff"), 6, r"b'tone=\xff'")):
        refused = run(*args)
        assert refused.code == 2, refused.err
        assert refused.err == f"magent: error: argument {number} ({shown}) is not UTF-8 text; magent keeps text as UTF-8\n"
    assert [p.name for p in (magent_home / "tasks").iterdir()] == [task_id]
    assert sorted(p.name for p in (magent_home / "tasks" / task_id).iterdir()) == before
    odd = tmp_path / "\udcffnote.yaml"
    odd.write_bytes(agent.read_bytes())
    shown = subprocess.run([sys.executable, "-m", "magent", "validate", str(odd)], capture_output=True)
    assert shown.returncode == 0, shown.stderr
