"""``magent validate`` knows the tools: unknown names, missing scripts, every error of a file."""

from __future__ import annotations

import json

from servers.harness import stdio_server, write_mcp_file
from support.cli import invoke

AGENT = """\
name: a
role: r
system_prompt: s
tools: {tools}
mcp_servers: mcp.yaml
llm_config:
  model: scripted
  script: script.yaml
"""


def _agent(tmp_path, tools, monkeypatch, servers=None):
    write_mcp_file(tmp_path / "mcp.yaml", servers or [stdio_server("tb")])
    (tmp_path / "script.yaml").write_text("responses:\n  - content: done\n")
    (tmp_path / "agent.yaml").write_text(AGENT.format(tools=tools))
    monkeypatch.chdir(tmp_path)


def test_a_misspelt_builtin_tool_exits_2_naming_the_real_one(tmp_path, monkeypatch):
    _agent(tmp_path, "[kv.sett]", monkeypatch)
    r = invoke("validate", "agent.yaml")
    assert r.code == 2 and r.out == ""
    assert r.err == ("magent: error: invalid agent: agent.yaml:4:9: tools[0]: "
                     "unknown tool 'kv.sett' (did you mean 'kv.set'?)\n")


def test_known_tools_and_any_tool_of_a_declared_server_pass(tmp_path, monkeypatch):
    _agent(tmp_path, "[kv.set, kv.*, memory.remember, tb.anything]", monkeypatch)
    r = invoke("validate", "agent.yaml")
    assert r.code == 0, r.err
    assert r.out.startswith("ok  agent")


def test_every_error_of_a_file_is_shown_at_its_line(tmp_path, monkeypatch):
    _agent(tmp_path, "[kv.sett, memroy.search, http.fetch, kv.get]", monkeypatch)
    (tmp_path / "script.yaml").unlink()
    r = invoke("validate", "agent.yaml")
    assert r.code == 2
    assert r.err.splitlines() == [
        "magent: error: invalid agent: agent.yaml:4:9: tools[0]: unknown tool 'kv.sett' (did you mean 'kv.set'?)",
        "magent: error: invalid agent: agent.yaml:4:18: tools[1]: unknown server 'memroy' in tool "
        "'memroy.search' (did you mean 'memory'?)",
        "magent: error: invalid agent: agent.yaml:4:33: tools[2]: tool 'http.fetch': the built-in http "
        "connector is off (turn it on under builtins.http in config/mcp_servers.yaml or the agent's "
        "mcp_servers file)",
        "magent: error: invalid agent: agent.yaml:8:3: llm_config.script: script file 'script.yaml' not "
        "found (looked for script.yaml)",
    ]
    r = invoke("validate", "--json", "agent.yaml")
    [result] = json.loads(r.out)
    assert len(result["errors"]) == 4 and result["error"] == result["errors"][0]


def test_every_field_error_is_shown_not_the_first_plus_a_count(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agent.yaml").write_text("name: a\nrole: r\nsystem_prompt: s\nmax_iterations: lots\n"
                                         "temperature: hot\nllm_config:\n  modle: gpt\n")
    r = invoke("validate", "agent.yaml")
    assert r.code == 2
    # the model missing because of the misspelling is not a separate error
    assert r.err.splitlines() == [
        "magent: error: invalid agent: agent.yaml:4:1: max_iterations: expected a whole number, "
        "got 'lots'",
        "magent: error: invalid agent: agent.yaml:5:1: temperature: expected a number, got 'hot'",
        "magent: error: invalid agent: agent.yaml:7:3: llm_config.modle: unknown field 'modle' "
        "(did you mean 'model'?)",
    ]


def test_a_tool_node_and_an_inline_agent_of_a_workflow_are_checked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "script.yaml").write_text("responses:\n  - content: done\n")
    (tmp_path / "wf.yaml").write_text("""\
name: wf
entry_point: ask
agents:
  helper:
    name: helper
    role: r
    system_prompt: s
    tools: [kv.lst]
    llm_config: {model: scripted, script: script.yaml}
nodes:
  ask: {type: agent, agent: helper}
  save: {type: tool, tool: kv.sett, arguments: {key: k, value: v}}
edges:
  - {from: ask, to: save}
  - {from: save, to: END}
""")
    r = invoke("validate", "wf.yaml")
    assert r.code == 2
    errors = r.err.splitlines()
    assert len(errors) == 2, r.err
    assert "wf.yaml:8:13: agents.helper.tools[0]: unknown tool 'kv.lst' (did you mean 'kv.list'?)" in errors[0]
    assert "wf.yaml:12:" in errors[1] and "nodes.save.tool: unknown tool 'kv.sett' (did you mean 'kv.set'?)" \
        in errors[1]


def test_with_servers_names_are_checked_against_the_live_tool_list(tmp_path, monkeypatch):
    _agent(tmp_path, "[tb.echo, tb.ecko]", monkeypatch)
    assert invoke("validate", "agent.yaml").code == 0  # without --servers any tb.* name is accepted
    r = invoke("validate", "--servers", "agent.yaml")
    assert r.code == 2
    assert r.err == ("magent: error: invalid agent: agent.yaml:4:18: tools[1]: "
                     "unknown tool 'tb.ecko' (did you mean 'tb.echo'?)\n")


def test_with_servers_a_server_that_does_not_start_is_an_error(tmp_path, monkeypatch):
    _agent(tmp_path, "[tb.echo]", monkeypatch,
           servers=[stdio_server("tb", env={"TOOLBOX_EXIT": "5"}, connect_timeout_seconds=5)])
    r = invoke("validate", "--servers", "agent.yaml")
    assert r.code == 2
    assert r.err.startswith("magent: error: invalid agent: agent.yaml:4:9: tools[0]: tool 'tb.echo': "
                            "server 'tb' did not start: ")
