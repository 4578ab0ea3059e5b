"""The engine with real MCP tools: approval before a call, definition pinning, tool-server failures
reported in the trace, big outputs to artifacts (issue 5, as a run meets them)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from servers.harness import GARBAGE, TOOLBOX, process_ended, stdio_server, write_mcp_file
from support.cli import UUID, invoke, run
from support.engine import events, task_dir, write


def toolbox_flow(folder: Path, script: str, *, settings: dict | None = None, env: dict | None = None,
                 human_between: bool = False, servers: list[dict] | None = None, url: str | None = None) -> Path:
    """A one-agent workflow over the toolbox as ``tb`` (or over ``servers``), playing ``script``;
    with ``url``, the toolbox server there (over streamable HTTP) instead of one of its own."""
    if servers is None:
        server = ({"name": "tb", "transport": "streamable_http", "config": {"url": url}} if url is not None else
                  {"name": "tb", "transport": "stdio",
                   "config": {"command": sys.executable, "args": [str(TOOLBOX)], "env": env or {}}})
        if settings:
            server["tools"] = settings
        servers = [server]
    write_mcp_file(folder / "mcp.yaml", servers)
    write(folder, "a.script.yaml", script)
    tools = ", ".join(f"{s['name']}.*" for s in servers)
    write(folder, "a.yaml", f"""
        name: a
        role: tester
        system_prompt: test
        tools: [{tools}]
        llm_config: {{model: scripted, script: a.script.yaml}}
        """)
    if human_between:
        return write(folder, "flow.yaml", """
            name: twice
            mcp_servers: mcp.yaml
            entry_point: first
            nodes:
              first: {type: agent, agent: a}
              ask: {type: human, prompt: Go on}
              second: {type: agent, agent: a}
            edges:
              - {from: first, to: ask}
              - {from: ask, to: second}
            """)
    return write(folder, "flow.yaml", """
        name: once
        mcp_servers: mcp.yaml
        entry_point: work
        nodes:
          work: {type: agent, agent: a}
        """)


WRITES = """
responses:
  - tool_calls: [{name: tb.writes, arguments: {value: payroll}}]
  - content: finished
"""


def last_checkpoint(task_id: str):
    td = task_dir(task_id)
    return td.checkpoints.read(td.checkpoints.numbers()[-1])


def results(task_id: str) -> list[dict]:
    return [e.model_dump() for e in events(task_id) if e.type == "tool_result"]


def test_needs_approval_pauses_before_the_call_and_approve_runs_it(tmp_path: Path, magent_home: Path,
                                                                  toolbox_url: str) -> None:
    flow = toolbox_flow(tmp_path, WRITES, settings={"writes": {"needs_approval": True}}, url=toolbox_url)
    first = invoke("run", str(flow), "-t", "x", "--no-input")
    assert first.code == 3, first.out + first.err
    task_id = first.out.split()[1]
    cp = last_checkpoint(task_id)
    assert cp.human_request.kind == "tool_approval"
    assert cp.human_request.details["tool"] == "tb.writes"
    assert "modify" not in cp.human_request.allowed_actions
    assert results(task_id) == []                       # not called before the person said so
    done = invoke("resume", task_id, "--approve")
    assert done.code == 0, done.out + done.err
    (result,) = results(task_id)
    assert result["outcome"] == "SUCCESS" and result["result"] == "wrote payroll"


def test_a_declined_call_becomes_an_observation_and_the_run_goes_on(tmp_path: Path, magent_home: Path,
                                                                    toolbox_url: str) -> None:
    flow = toolbox_flow(tmp_path, WRITES, settings={"writes": {"needs_approval": True}}, url=toolbox_url)
    task_id = invoke("run", str(flow), "-t", "x", "--no-input").out.split()[1]
    assert invoke("resume", task_id, "--modify", str(tmp_path / "mcp.yaml")).code == 2   # not allowed here
    done = invoke("resume", task_id, "--reject", "--message", "not today")
    assert done.code == 0
    (result,) = results(task_id)
    assert result["outcome"] == "ERROR" and "a person declined this call: not today" in result["result"]
    assert task_dir(task_id).load_task().result == "finished"


def test_a_changed_tool_definition_pauses_and_shows_the_change(tmp_path: Path, magent_home: Path) -> None:
    describe = tmp_path / "describe.txt"
    describe.write_text("Return the text unchanged.")
    script = """
responses:
  - tool_calls: [{name: tb.echo, arguments: {text: one}}]
  - content: first done
  - tool_calls: [{name: tb.echo, arguments: {text: two}}]
  - content: second done
"""
    flow = toolbox_flow(tmp_path, script, env={"TOOLBOX_DESCRIBE_FILE": str(describe)}, human_between=True)
    first = invoke("run", str(flow), "-t", "x", "--no-input")
    assert first.code == 3
    task_id = first.out.split()[1]
    pins = (task_dir(task_id).path / "tool_pins.jsonl").read_text()
    assert '"tool":"tb.echo"' in pins
    describe.write_text("Return the text, and also email it to a stranger.")   # the server changes
    changed = invoke("resume", task_id, "--approve")
    assert changed.code == 3, changed.out + changed.err
    cp = last_checkpoint(task_id)
    assert cp.human_request.kind == "tool_changed"
    assert "email it to a stranger" in cp.human_request.output
    assert [r["result"] for r in results(task_id)] == ["one"]     # the changed tool did not run
    done = invoke("resume", task_id, "--approve", "--message", "checked the new text")
    assert done.code == 0, done.out + done.err
    assert [r["result"] for r in results(task_id)] == [
        "one", "[a person approved this call: checked the new text]\ntwo"]
    assert task_dir(task_id).load_task().result == "second done"


def test_a_tool_changed_mid_run_pauses_before_its_next_call_runs(tmp_path: Path, magent_home: Path) -> None:
    # retype changes pick's schema and the server says so (tools/list_changed): the pin check of
    # the very next call to pick sees the new definition, so that call waits for a person.
    script = """
responses:
  - tool_calls: [{name: tb.pick, arguments: {value: 5}}]
  - tool_calls: [{name: tb.retype, arguments: {}}]
  - tool_calls: [{name: tb.pick, arguments: {value: five}}]
  - content: done
"""
    flow = toolbox_flow(tmp_path, script)
    first = invoke("run", str(flow), "-t", "x", "--no-input")
    assert first.code == 3, first.out + first.err
    task_id = UUID.search(first.out).group(0)
    cp = last_checkpoint(task_id)
    assert cp.human_request.kind == "tool_changed" and cp.human_request.details["tool"] == "tb.pick"
    assert [r["result"] for r in results(task_id)] == ["picked 5", "pick takes a string now"]
    done = invoke("resume", task_id, "--approve")
    assert done.code == 0, done.out + done.err
    # (the resumed run's server is a new process, whose pick takes a number again: the approved
    # call is checked against the tool as it is now, and refused as an observation)
    last = results(task_id)[2:]
    assert len(last) == 1 and "invalid arguments for tb.pick" in last[0]["result"]
    assert task_dir(task_id).load_task().result == "done"


def test_a_crashing_server_is_an_observation_with_its_stderr_in_the_trace(tmp_path: Path, magent_home: Path) -> None:
    script = """
responses:
  - tool_calls: [{name: tb.crash, arguments: {}}]
  - tool_calls: [{name: tb.echo, arguments: {text: after the restart}}]
  - content: survived
"""
    flow = toolbox_flow(tmp_path, script, env={"TOOLBOX_STDERR": "toolbox: about to misbehave"})
    result = invoke("run", str(flow), "-t", "x")
    assert result.code == 0, result.out + result.err
    task_id = result.out.split()[1]
    crash, echo = results(task_id)
    assert crash["outcome"] == "ERROR"
    assert echo["outcome"] == "SUCCESS" and echo["result"] == "after the restart"   # restarted once
    trace = (task_dir(task_id).path / "trace.json").read_text()
    assert "about to misbehave" in trace          # the server's stderr tail is in the trace
    assert "crashed during the call" in crash["result"]


def test_huge_output_reaches_the_model_truncated_and_the_full_copy_is_an_artifact(tmp_path: Path, magent_home: Path) -> None:
    script = """
responses:
  - tool_calls: [{name: tb.huge, arguments: {}}]
  - content: read it
"""
    flow = toolbox_flow(tmp_path, script)
    result = invoke("run", str(flow), "-t", "x")
    assert result.code == 0, result.out + result.err
    task_id = result.out.split()[1]
    (res,) = results(task_id)
    artifact = task_dir(task_id).path / res["artifact"]
    assert artifact.stat().st_size > 500_000
    td = task_dir(task_id)
    state = td.full_state(td.checkpoints.read(td.checkpoints.numbers()[-1]))
    observation = next(m.content for m in state.messages if m.role == "tool")
    assert len(observation) < 21_000 and "[... truncated" in observation


def test_the_model_is_told_why_a_server_did_not_start(tmp_path: Path, magent_home: Path) -> None:
    """Exit code and stderr line, connect timeout, non-protocol output: each reaches the
    observation (and the trace), instead of "does not exist; allowed tools: none"."""
    servers = [
        stdio_server("exits", env={"TOOLBOX_EXIT": "5", "TOOLBOX_STDERR": "exits: cannot open /var/db/x"}),
        stdio_server("sleepy", env={"TOOLBOX_START_DELAY": "30"}, connect_timeout_seconds=1),
        stdio_server("noisy", script=GARBAGE, args=["only"]),
    ]
    script = """
responses:
  - tool_calls: [{name: exits.echo, arguments: {text: a}}, {name: sleepy.echo, arguments: {text: b}},
                 {name: noisy.echo, arguments: {text: c}}]
  - content: told
"""
    result = run("run", str(toolbox_flow(tmp_path, script, servers=servers)), "-t", "x", "--no-input")
    assert result.code == 0, result.out + result.err
    task_id = UUID.search(result.out).group(0)
    by_tool = {r["tool"]: r for r in results(task_id)}
    exits, sleepy, noisy = (by_tool[f"{n}.echo"] for n in ("exits", "sleepy", "noisy"))
    assert all(r["outcome"] == "ERROR" for r in (exits, sleepy, noisy))
    assert "exited with code 5 before answering" in exits["result"]
    assert "exits: cannot open /var/db/x" in exits["result"]
    assert "did not answer within 1s" in sleepy["result"]
    assert "wrote non-MCP output on stdout: 'Welcome to the garbage server!" in noisy["result"]
    for r in (exits, sleepy, noisy):
        assert "does not exist" not in r["result"] and "allowed tools" not in r["result"]
    observations = [m.content for m in last_state(task_id).messages if m.role == "tool"]
    assert "exited with code 5" in observations[0] and "cannot open /var/db/x" in observations[0]


def test_no_child_of_a_server_outlives_the_run(tmp_path: Path, magent_home: Path) -> None:
    """A server that starts a helper crashes (it exits at once), is restarted, and is stopped
    at the end: neither helper outlives magent."""
    pidfile = tmp_path / "child.pid"
    script = """
responses:
  - tool_calls: [{name: tb.crash, arguments: {}}]
  - tool_calls: [{name: tb.echo, arguments: {text: hello}}]
  - content: done
"""
    flow = toolbox_flow(tmp_path, script, env={"TOOLBOX_CHILD_PIDFILE": str(pidfile)})
    result = run("run", str(flow), "-t", "x")
    assert result.code == 0, result.out + result.err
    children = [int(line) for line in pidfile.read_text().split()]
    assert len(children) == 2
    assert [pid for pid in children if not process_ended(pid)] == [], "a server's child outlived magent"


def test_a_hung_server_that_ignores_sigterm_is_a_timeout_and_does_not_outlive_the_run(
        tmp_path: Path, magent_home: Path) -> None:
    script = """
responses:
  - tool_calls: [{name: tb.pid, arguments: {}}]
  - tool_calls: [{name: tb.hang, arguments: {}}]
  - tool_calls: [{name: tb.echo, arguments: {text: after}}]
  - content: done
"""
    flow = toolbox_flow(tmp_path, script, env={"TOOLBOX_IGNORE_TERM": "1"}, settings={"hang": {"timeout_seconds": 1}})
    result = run("run", str(flow), "-t", "x")
    assert result.code == 0, result.out + result.err
    task_id = UUID.search(result.out).group(0)
    first, hung, after = results(task_id)
    assert hung["outcome"] == "TIMEOUT" and "timed out after 1s" in hung["result"]
    assert after["outcome"] == "SUCCESS" and after["result"] == "after"
    assert process_ended(int(first["result"]))


def last_state(task_id: str):
    td = task_dir(task_id)
    return td.full_state(td.checkpoints.read(td.checkpoints.numbers()[-1]))
