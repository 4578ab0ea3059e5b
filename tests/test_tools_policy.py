"""Per-agent tool rails: allow and deny patterns, calls per turn, approval, idempotence."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from magent.models import Agent
from magent.tools.function import FunctionProvider
from magent.tools.policy import ToolPolicy
from magent.tools.registry import ToolRegistry
from magent.tools.setup import build_registry


def files_provider() -> FunctionProvider:
    p = FunctionProvider("fs")
    p.add("read", lambda path: f"contents of {path}", "Read a file.",
          {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
    p.add("write", lambda path, text: "written", "Write a file.",
          {"type": "object", "properties": {"path": {"type": "string"}, "text": {"type": "string"}},
           "required": ["path", "text"]})
    p.add("delete", lambda path: "deleted", "Delete a file.",
          {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}, idempotent=True)
    return p


def agent(**fields) -> Agent:
    return Agent.model_validate({"name": "worker", "role": "works", "system_prompt": "Work.",
                                 "llm_config": {"model": "scripted", "script": "x.yaml"}, **fields})


def started(registry: ToolRegistry) -> ToolRegistry:
    asyncio.run(registry.start())
    return registry


def test_patterns_allow_and_deny_tools() -> None:
    reg = started(ToolRegistry([files_provider()]))
    policy = ToolPolicy.for_agent(agent(tools=["fs.*", "kv.get"], deny_tools=["fs.delete"]), reg)
    assert policy.names == {"fs.read", "fs.write"}
    assert [s.name for s in policy.specs] == ["fs.read", "fs.write"]
    assert policy.specs[0].description == "Read a file." and policy.specs[0].parameters["required"] == ["path"]
    assert not policy.allowed("fs.delete") and policy.allowed("fs.read")


def test_a_tool_the_model_names_that_is_not_allowed_is_refused_with_the_allowed_list() -> None:
    reg = started(ToolRegistry([files_provider()]))
    policy = ToolPolicy.for_agent(agent(tools=["fs.read"]), reg)
    denied = asyncio.run(reg.call("fs.delete", {"path": "/etc"}, allowed=policy.names))
    assert denied.outcome == "ERROR"
    assert denied.content == "tool 'fs.delete' is not allowed for this agent; allowed tools: fs.read"
    made_up = asyncio.run(reg.call("fs.format_disk", {}, allowed=policy.names))
    assert made_up.content == "tool 'fs.format_disk' does not exist; allowed tools: fs.read"


def test_calls_beyond_max_calls_per_turn_are_refused_in_order() -> None:
    reg = started(ToolRegistry([files_provider()]))
    policy = ToolPolicy.for_agent(agent(tools=["fs.*"], max_calls_per_turn=2), reg)
    run, refused = policy.split(["c1", "c2", "c3", "c4"])
    assert run == ["c1", "c2"]
    assert [c for c, _ in refused] == ["c3", "c4"]
    reason = refused[0][1]
    assert reason == "refused: agent 'worker' may make at most 2 tool call(s) per turn; this response asked for 4"
    obs = ToolPolicy.refusal("fs.read", reason)
    assert obs.outcome == "ERROR" and obs.content == reason
    unlimited = ToolPolicy.for_agent(agent(tools=["fs.*"]), reg)
    assert unlimited.split(["a", "b", "c"]) == (["a", "b", "c"], [])


def test_approval_and_idempotence_come_from_the_config_then_the_tool() -> None:
    reg = ToolRegistry([files_provider()], settings={
        "fs.write": {"needs_approval": True, "idempotent": True},
        "fs.delete": {"idempotent": False}})
    started(reg)
    policy = ToolPolicy.for_agent(agent(tools=["fs.*"]), reg)
    assert policy.needs_approval("fs.write") and not policy.needs_approval("fs.read")
    assert policy.is_idempotent("fs.write")       # config says so
    assert not policy.is_idempotent("fs.delete")  # config overrides the tool's own True
    assert not policy.is_idempotent("fs.read")    # nobody said: not idempotent
    assert policy.describe()["needs_approval"] == ["fs.write"]


def test_mcp_file_tool_settings_reach_the_registry(tmp_path: Path) -> None:
    path = tmp_path / "mcp.yaml"
    path.write_text("""
servers:
  - name: fs
    transport: stdio
    config: {command: unused}
    tools:
      write: {needs_approval: true, fallback_tools: [fs.read]}
      read: {timeout_seconds: 5}
""")
    reg = build_registry(mcp_files=[path], home_config=False, extra_providers=[files_provider()])
    started(reg)
    write, read = reg.get("fs.write"), reg.get("fs.read")
    assert write.needs_approval and write.fallback_tools == ["fs.read"] and write.timeout_seconds == 300
    assert read.timeout_seconds == 5 and not read.needs_approval and read.idempotent is None


@pytest.mark.parametrize("patterns,expected", [
    (["*"], {"fs", "kv"}), (["fs.read"], {"fs"}), (["kv.*", "fs.*"], {"fs", "kv"}), ([], set())])
def test_servers_for_patterns(patterns, expected) -> None:
    from magent.tools.kv import kv_provider

    reg = ToolRegistry([files_provider(), kv_provider()])
    assert reg.servers_for(patterns) == expected


def test_the_quick_argument_check_never_passes_what_the_validator_refuses() -> None:
    """The registry checks arguments against a tool's schema with jsonschema only when a quick
    check of the usual shape cannot vouch for them: it must never pass arguments jsonschema finds
    a problem in, nor stand in for a schema of another shape."""
    import itertools

    from magent.config.schemas import first_problem
    from magent.tools.validation import make_validator, quick_check

    schemas = [
        {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        {"type": "object", "properties": {"x": {"type": "number", "description": "x"}, "s": {"type": "string"},
                                          "b": {"type": "boolean"}, "o": {"type": "object"}, "a": {"type": "array"},
                                          "z": {"type": "null"}, "any": {}},
         "required": ["x"], "additionalProperties": False},
        {"type": "object", "properties": {}, "title": "none"},
    ]
    values = [0, 1, -5, 2**70, 1.0, 1.5, float("nan"), True, False, "", "s", None, {}, {"k": 1}, [], [1]]
    checked = passed = 0
    for schema in schemas:
        quick, validator = quick_check(schema), make_validator(schema)
        assert quick is not None
        names = [*schema["properties"], "other"]
        for name, value in itertools.product(names, values):
            for args in ({name: value}, {name: value, "n": 1, "x": 2}, {}):
                checked += 1
                if quick(args):
                    passed += 1
                    assert first_problem(validator, args) is None, (schema, args)
    assert checked > 500 and passed > 50
    for other in ({"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}},
                  {"type": "object", "properties": {"n": {"type": ["integer", "null"]}}},
                  {"type": "object", "$schema": "http://json-schema.org/draft-03/schema#"},
                  {"type": "object", "patternProperties": {"^x": {"type": "string"}}},
                  {"type": "array"}, {"anyOf": [{"type": "object"}]}):
        assert quick_check(other) is None
