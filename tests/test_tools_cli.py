"""``magent mcp list``, ``magent tools list`` and ``magent tools call`` through the real CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest
import yaml

from servers.harness import refused_url, stdio_server, write_mcp_file
from support.cli import invoke

pytestmark = pytest.mark.slow


def _configure(home: Path, tb: dict) -> Iterator[Path]:
    """The home's servers: the toolbox as ``tb`` (``tb.slow`` times out after 1 s), one that
    cannot start and one that cannot be reached."""
    (home / "config").mkdir(parents=True)
    path = home / "config" / "mcp_servers.yaml"
    with refused_url() as away:
        path.write_text(yaml.safe_dump({"servers": [
            {**tb, "tools": {"slow": {"timeout_seconds": 1}}},
            {"name": "ghost", "transport": "stdio", "config": {"command": "no-such-server-xyz"}},
            {"name": "away", "transport": "streamable_http", "config": {"url": away}},
        ]}, sort_keys=False))
        yield path


@pytest.fixture
def configured(magent_home: Path, toolbox_url: str) -> Iterator[Path]:
    """``tb`` is the session's toolbox server over streamable HTTP (conftest): each command of these
    tests starts the servers it needs, and they need its tools, not a process of their own."""
    yield from _configure(magent_home, {"name": "tb", "transport": "streamable_http", "config": {"url": toolbox_url}})


@pytest.fixture
def configured_stdio(magent_home: Path) -> Iterator[Path]:
    """``tb`` over stdio, a process of its own, as a user's local server is."""
    yield from _configure(magent_home, stdio_server("tb"))


def test_mcp_list_with_nothing_configured() -> None:
    r = invoke("mcp", "list")
    assert r.code == 0 and r.out.startswith("no MCP servers configured")
    assert json.loads(invoke("mcp", "list", "--json").out) == []


def test_mcp_list_says_which_servers_answer(configured_stdio: Path) -> None:
    r = invoke("mcp", "list")
    assert r.code == 0
    lines = r.out.splitlines()
    assert lines[0].split() == ["NAME", "TRANSPORT", "TARGET", "STATUS", "LOGIN"]
    by_name = {line.split()[0]: line for line in lines[1:]}
    assert by_name["away"].endswith("not logged in") and by_name["tb"].endswith(" -")
    assert "ok: 18 tool(s)" in by_name["tb"]
    assert "not answering: MCP server 'ghost' (no-such-server-xyz) could not be started: " \
           "command 'no-such-server-xyz' not found on PATH" in by_name["ghost"]
    assert "could not be reached: cannot connect" in by_name["away"]
    data = {s["name"]: s for s in json.loads(invoke("mcp", "list", "--json").out)}
    assert data["tb"]["ok"] is True and data["tb"]["tools"] == 18 and data["tb"]["transport"] == "stdio"
    assert data["ghost"]["ok"] is False and "not found on PATH" in data["ghost"]["error"]
    assert data["away"]["source"] == str(configured_stdio)


def test_tools_list_shows_names_descriptions_and_arguments(configured: Path) -> None:
    r = invoke("tools", "list", "--server", "tb")
    assert r.code == 0 and r.err == ""
    rows = {line.split()[0]: line for line in r.out.splitlines()[1:]}
    assert rows["tb.add"].split("  ")[-1].strip() == "a: integer*, b: integer*"
    assert "Add two integers." in rows["tb.add"]
    assert rows["tb.pid"].rstrip().endswith("-")
    listed = json.loads(invoke("tools", "list", "--server", "tb", "--json").out)
    assert listed["failed"] == {}
    add = next(t for t in listed["tools"] if t["name"] == "tb.add")
    assert add["arguments"] == "a: integer*, b: integer*" and add["idempotent"] is True
    assert add["input_schema"]["required"] == ["a", "b"]
    everything = invoke("tools", "list")  # ghost and away do not start: exit 4
    assert everything.code == 4 and "kv.get" in everything.out and "tb.echo" in everything.out
    assert "magent: warning: MCP server 'ghost'" in everything.err


def test_tools_list_exits_4_when_a_server_fails_and_still_lists_the_others(tmp_path: Path,
                                                                          magent_home: Path) -> None:
    servers = write_mcp_file(tmp_path / "mcp.yaml", [
        stdio_server("tb"), stdio_server("quits", env={"TOOLBOX_EXIT": "3", "TOOLBOX_STDERR": "no licence"})])
    listed = invoke("tools", "list", "--mcp", str(servers))
    assert listed.code == 4
    assert "tb.echo" in listed.out and "kv.get" in listed.out and "quits." not in listed.out
    assert "magent: warning: MCP server 'quits'" in listed.err and "exited with code 3" in listed.err
    as_json = invoke("tools", "list", "--mcp", str(servers), "--json")
    assert as_json.code == 4
    data = json.loads(as_json.out)
    assert list(data["failed"]) == ["quits"]
    assert "exited with code 3" in data["failed"]["quits"] and "no licence" in data["failed"]["quits"]
    assert "tb.echo" in {t["name"] for t in data["tools"]}
    alone = invoke("tools", "list", "--mcp", str(servers), "--server", "tb", "--json")
    assert alone.code == 0 and json.loads(alone.out)["failed"] == {}  # only tb was listed


def test_tools_list_of_an_unknown_server_is_a_usage_error(configured: Path) -> None:
    r = invoke("tools", "list", "--server", "nosuch")
    assert r.code == 2 and r.err == "magent: error: no server named 'nosuch' (servers: away, ghost, kv, memory, tb)\n"


def test_tools_call_prints_the_result_and_exits_by_outcome(configured: Path) -> None:
    ok = invoke("tools", "call", "tb.add", "--args", '{"a": 20, "b": 22}')
    assert (ok.code, ok.out) == (0, "42\n")
    failed = invoke("tools", "call", "tb.fail", "--args", '{"reason": "no disk"}')
    assert failed.code == 1 and failed.err.startswith("magent: FAILURE: ") and "no disk" in failed.err
    slow = invoke("tools", "call", "tb.slow", "--args", '{"seconds": 600}')  # only the timeout ends it
    assert slow.code == 1 and "magent: TIMEOUT: timed out after 1s" in slow.err
    as_json = json.loads(invoke("tools", "call", "tb.echo", "--args", '{"text": "hi"}', "--json").out)
    assert as_json["outcome"] == "SUCCESS" and as_json["content"] == "hi" and as_json["tool"] == "tb.echo"
    down = invoke("tools", "call", "ghost.anything")
    assert down.code == 1 and "not found on PATH" in down.err


@pytest.mark.parametrize("args,expected", [
    (["tb.add", "--args", '{"a": 1,'], "magent: error: --args is not valid JSON: "),
    (["tb.add", "--args", "[1, 2]"], "magent: error: --args must be a JSON object"),
    (["tb.add", "--args", '{"a": 1}'], "magent: error: --args do not fit tb.add's input schema: 'b' is required"),
    (["tb.nope"], "magent: error: server 'tb' has no tool 'nope' (its tools: "),
    (["nosuch.tool"], "magent: error: no server named 'nosuch'"),
    (["notdotted"], "magent: error: tool name 'notdotted' must be server.tool"),
])
def test_tools_call_bad_input_is_exit_2_with_one_line(configured: Path, args, expected) -> None:
    r = invoke("tools", "call", *args)
    assert r.code == 2 and r.err.startswith(expected) and r.err.count("\n") == 1 and r.out == ""


def test_an_mcp_file_with_an_unknown_transport_is_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("servers:\n  - name: x\n    transport: carrier_pigeon\n    config: {}\n")
    for args in (["mcp", "list", "--mcp", str(bad)], ["tools", "list", "--mcp", str(bad)]):
        r = invoke(*args)
        assert r.code == 2 and r.err.count("\n") == 1 and "unknown transport 'carrier_pigeon'" in r.err


def test_the_reference_time_server_through_the_cli_in_a_subprocess(tmp_path: Path) -> None:
    own = tmp_path / "time.yaml"
    own.write_text("servers:\n  - name: time\n    transport: stdio\n    config: {command: mcp-server-time}\n")
    r = invoke("tools", "call", "time.get_current_time", "--args", '{"timezone": "Europe/Paris"}', "--mcp", str(own))
    assert r.code == 0, r.err
    assert json.loads(r.out)["timezone"] == "Europe/Paris"


def test_the_cli_does_not_import_mcp_until_a_tool_command_runs() -> None:
    code = "import sys, magent.cli.app; print(sorted(m for m in ('mcp', 'litellm', 'rich') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
