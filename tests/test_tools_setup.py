"""Building a run's registry from the home's MCP file and a workflow's own."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from magent.errors import ConfigError
from magent.tools.setup import build_registry, load_tool_config
from servers.harness import stdio_server, write_mcp_file


def home_file(home: Path, text: str) -> Path:
    (home / "config").mkdir(parents=True, exist_ok=True)
    path = home / "config" / "mcp_servers.yaml"
    path.write_text(text)
    return path


def test_a_workflow_file_overrides_home_servers_of_the_same_name(magent_home: Path, tmp_path: Path) -> None:
    home_file(magent_home, """
servers:
  - name: search
    transport: streamable_http
    config: {url: "http://127.0.0.1:1/mcp"}
  - name: notes
    transport: stdio
    config: {command: notes-server}
builtins:
  http: {enabled: true, allow_hosts: [docs.example.com]}
limits: {max_output_chars: 5000}
""")
    own = tmp_path / "flows" / "mcp.yaml"
    own.parent.mkdir()
    own.write_text("""
servers:
  - name: search
    transport: stdio
    config: {command: local-search, cwd: data}
builtins:
  http: {timeout_seconds: 3}
  kv: {enabled: false}
""")
    config = load_tool_config([own])
    assert sorted(config.servers) == ["notes", "search"]
    assert config.servers["search"].transport == "stdio" and config.sources["search"] == own
    assert config.base_dirs["search"] == own.parent
    http = config.builtins.http
    assert (http.enabled, http.allow_hosts, http.timeout_seconds) == (True, ["docs.example.com"], 3)
    assert config.limits.max_output_chars == 5000
    reg = build_registry(mcp_files=[own])
    assert sorted(reg.providers) == ["http", "memory", "notes", "search"]  # kv turned off by the workflow's file


def test_a_relative_cwd_is_resolved_next_to_the_file_that_names_it(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    server = stdio_server("tb", cwd="work")
    path = write_mcp_file(tmp_path / "mcp.yaml", [server])
    reg = build_registry(mcp_files=[path], home_config=False)

    async def main():
        await reg.start()
        try:
            return reg.start_errors, await reg.call("tb.cwd", {})
        finally:
            await reg.close()

    errors, where = asyncio.run(main())
    assert errors == {} and where.content == str(tmp_path / "work")


def test_a_named_mcp_file_that_is_missing_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        build_registry(mcp_files=[tmp_path / "nope.yaml"], home_config=False)
    assert "nope.yaml" in str(info.value)


def test_a_missing_home_file_is_fine(magent_home: Path) -> None:
    reg = build_registry()
    assert sorted(reg.providers) == ["kv", "memory"]


def test_a_cwd_that_does_not_exist_is_a_clear_start_error(tmp_path: Path) -> None:
    path = write_mcp_file(tmp_path / "mcp.yaml", [stdio_server("tb", cwd="no/such/dir")])
    reg = build_registry(mcp_files=[path], home_config=False)
    asyncio.run(reg.start())
    assert reg.start_errors["tb"].endswith(f"could not be started: working directory "
                                           f"'{tmp_path / 'no/such/dir'}' does not exist")


def test_the_defaults_without_a_file_are_what_validation_makes() -> None:
    # Made without building a validator (a start-up cost): equal to the validated defaults,
    # with the same fields set, so a file's overlay reads them the same.
    from magent.models.tools import Builtins, ToolLimits

    config = load_tool_config(home_config=False)
    for made, checked in ((config.builtins, Builtins()), (config.limits, ToolLimits())):
        assert made == checked and repr(made) == repr(checked)
        assert made.model_dump_json() == checked.model_dump_json()
        assert made.model_fields_set == checked.model_fields_set == set()
    for name in ("kv", "memory", "http", "shell"):
        assert getattr(config.builtins, name).model_fields_set == set()
