"""The JSON Schema shipped for ``magent trace ID --json`` matches the model and the output."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from magent.models import published
from magent.trace import schema
from support.cli import invoke

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def shipped() -> dict:
    return json.loads(resources.files("magent.trace").joinpath("tracelog.schema.json").read_text())


def test_the_shipped_schema_is_generated_from_the_model() -> None:
    assert schema.SCHEMA_FILE == published.TRACELOG_FILE
    assert schema.SCHEMA_FILE.read_text() == published.render(published.tracelog_schema()), (
        "src/magent/trace/tracelog.schema.json is out of date: run `python -m magent.models.published`")


def test_the_schema_documents_the_fields() -> None:
    doc = shipped()
    jsonschema.Draft202012Validator.check_schema(doc)
    step = doc["$defs"]["StepRecord"]["properties"]
    assert "--step N" in step["step_name"]["description"]
    assert "turn number" in step["iteration"]["description"]
    assert doc["properties"]["usage_by_model"]["description"].startswith("Tokens, cost and calls per model")
    assert doc["$defs"]["ToolCallRecord"]["description"] == "One tool call as the trace keeps it."


@pytest.mark.parametrize("target, args", [
    ("workflows/write_review.yaml", []),
    ("workflows/triage.yaml", ["--set", "ticket=checkout down", "--set", "priority=high"]),
])
def test_trace_json_validates_against_the_schema(target: str, args: list[str]) -> None:
    run = invoke("run", str(EXAMPLES / target), "-t", "example task", "--no-input", *args)
    task_id = run.out.split()[1]
    if run.code == 3:  # paused at an approval gate: answer it, so the trace has a decision too
        assert invoke("resume", task_id, "--approve", "-m", "ok", "--no-input").code == 0
    out = invoke("trace", task_id, "--json")
    assert out.code == 0, out.err
    doc = json.loads(out.out)
    validator = jsonschema.Draft202012Validator(shipped())
    assert list(validator.iter_errors(doc)) == []
    doc["steps"][0]["status"] = "fine"  # not one of info, warning, error
    del doc["steps"][1]["timestamp"]
    errors = {(e.validator, tuple(e.absolute_path)) for e in validator.iter_errors(doc)}
    assert errors == {("enum", ("steps", 0, "status")), ("required", ("steps", 1))}
