"""A run's MCP servers start when a node that may call a tool is about to run, not before:
a run or a resume that stops at a person's step starts none (real servers, real processes)."""

from __future__ import annotations

from pathlib import Path

from servers.harness import stdio_server, write_mcp_file
from support.cli import UUID, run
from support.engine import write

from magent.store.tasks import Store

ASKS = """
name: asks
mcp_servers: mcp.yaml
entry_point: first
nodes:
  first: {type: human, prompt: "Go on?"}
  second: {type: human, prompt: "Sure?"}
  call: {type: tool, tool: tb.echo, arguments: {text: called}}
edges:
  - {from: first, to: second}
  - {from: second, to: call}
  - {from: call, to: END}
"""


def test_servers_start_only_for_the_node_that_calls_a_tool(tmp_path: Path, magent_home: Path) -> None:
    started = tmp_path / "tb.pid"  # the server writes its pid here as it starts
    write_mcp_file(tmp_path / "mcp.yaml", [stdio_server("tb", env={"TOOLBOX_PIDFILE": str(started)})])
    workflow = write(tmp_path, "asks.yaml", ASKS)

    first = run("run", str(workflow), "-t", "ask twice, then call", "--no-input")
    assert first.code == 3, first.err  # paused at the first human node
    task_id = UUID.search(first.out + first.err).group(0)
    assert not started.exists()

    second = run("resume", task_id, "--approve", "--no-input")
    assert second.code == 3, second.err  # approved, and paused again at the second one
    td = Store().task(task_id)
    assert td.checkpoints.latest(repair=False)[0].human_request.node == "second"
    assert not started.exists()

    last = run("resume", task_id, "--approve", "--no-input", "--json")
    assert last.code == 0, last.err
    assert started.exists()  # the tool node's server did start
    results = [e.model_dump() for e in td.read_events() if e.type == "tool_result"]
    assert [(r["outcome"], r["result"]) for r in results] == [("SUCCESS", "called")]
