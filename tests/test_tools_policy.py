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
