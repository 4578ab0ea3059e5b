"""A new user's bad input across the newest commands and settings: each mistake is one line
naming what and where, exit code 2, no traceback, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.cli import invoke
from support.engine import write


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
