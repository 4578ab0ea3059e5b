"""A tool's input schema becomes a validator once per process, not once per task (issue 34):
checking a schema against its metaschema costs more than the call it guards."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest

from support.engine import arun_at_once

SEEN: list[str] = []
"""What each task's model was told of its two tool calls, when it answers."""


def reply(request: Any) -> Any:
    done = sum(1 for m in request.messages if m.role == "tool")
    if done == 0:
        return {"tool_calls": [{"name": "kv.set", "arguments": {"key": "city", "value": "Lyon"}}]}
    if done == 1:  # a bad call: the validator (not only the quick check) must still answer
        return {"tool_calls": [{"name": "kv.set", "arguments": {"key": 7}}]}
    SEEN.append(" ".join(str(m.content) for m in request.messages if m.role == "tool"))
    return "stored"


def test_many_tasks_make_each_tools_validator_once(tmp_path: Path, magent_home: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[Any] = []
    real = jsonschema.validators.validator_for

    def counted(schema: Any, *args: Any, **kwargs: Any) -> Any:
        made.append(schema)
        return real(schema, *args, **kwargs)

    monkeypatch.setattr(jsonschema.validators, "validator_for", counted)
    results = arun_at_once(tmp_path, reply, 6)
    # each task saw its bad call refused with the schema's own words, its good one stored
    assert len(SEEN) == 6
    for text in SEEN:
        assert "stored city" in text and "invalid arguments for kv.set:" in text and "value" in text, text
    # the kv.set schema was made into a validator at most once for all six tasks
    kinds = [s for s in made if isinstance(s, dict) and "key" in s.get("properties", {})]
    assert len(kinds) <= 1, len(kinds)
