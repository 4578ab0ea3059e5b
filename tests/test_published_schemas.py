"""The published schemas (``docs/schemas/``) match the models."""

from __future__ import annotations

import json
import re

import jsonschema

from magent.models import published
from test_examples import ROOT

SCHEMAS = ROOT / "docs" / "schemas"
SEED_FIELDS = {
    "task": ("id", "description", "status", "assigned_agent"),
    "checkpoint": ("task_id", "sequence", "position", "state", "awaiting_human"),
    "trace": ("task_id", "steps", "sub_agent_sessions"),
    "step": ("step_name", "message", "timestamp", "status", "agent", "tool_calls", "duration_ms"),
}
"""Seed 002's required fields: present in every record, whatever their value."""


def test_the_published_schemas_are_generated_from_the_models() -> None:
    assert published.stale() == [], f"the schemas are out of date: run `{published.COMMAND}`"
    names = {p.name for p in SCHEMAS.glob("*.json")}
    assert names == set(published.files()), f"docs/schemas holds other files: run `{published.COMMAND}`"
    for path in SCHEMAS.glob("*.json"):
        doc = json.loads(path.read_text())
        jsonschema.Draft202012Validator.check_schema(doc)
        assert doc["x-magent-schema-version"] == published.SCHEMA_VERSION
        assert doc["$id"].endswith(f":{published.SCHEMA_VERSION}:{path.name}") and doc["title"]


def test_the_schemas_state_what_is_always_there_and_the_defaults() -> None:
    checkpoint = json.loads((SCHEMAS / "checkpoint.schema.json").read_text())
    assert set(SEED_FIELDS["checkpoint"]) <= set(checkpoint["required"])
    assert checkpoint["properties"]["visits"]["default"] == {}
    assert checkpoint["properties"]["schema_version"]["const"] == published.SCHEMA_VERSION
    trace = json.loads((SCHEMAS / "trace.schema.json").read_text())
    assert set(SEED_FIELDS["step"]) <= set(trace["$defs"]["StepRecord"]["required"])
    assert trace["$defs"]["ToolCallRecord"]["properties"]["outcome"]["default"] == "SUCCESS"
    assert "ReAct turn number" in trace["$defs"]["StepRecord"]["properties"]["iteration"]["description"]


def test_every_event_type_magent_emits_is_published() -> None:
    """Each ``emit("kind", ...)`` in the source names a type the event schema describes."""
    emitted = set()
    for path in (ROOT / "src" / "magent").rglob("*.py"):
        emitted |= set(re.findall(r"""\bemit\(\s*["']([a-z_]+)["']""", path.read_text()))
    emitted |= set(re.findall(r'record\("([a-z_]+)"', (ROOT / "src/magent/tools/memory.py").read_text()))
    assert len(emitted) > 25
    assert emitted - set(published.EVENT_TYPES) == set(), "add them to models/published.py's EVENT_TYPES"
    schema = json.loads((SCHEMAS / "event.schema.json").read_text())
    assert [t["const"] for t in schema["properties"]["type"]["oneOf"]] == list(published.EVENT_TYPES)
