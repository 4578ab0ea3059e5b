"""Load-time checks of workflows: every problem is found before any model call, with file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from magent.engine.graph import load_target
from magent.errors import ConfigError
from support.cli import invoke
from support.engine import agent_yaml, write

GOOD_NODES = """
nodes:
  a: {type: agent, agent: worker}
  b: {type: agent, agent: worker}
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    write(tmp_path, "worker.yaml", agent_yaml("worker"))
    write(tmp_path, "worker.script.yaml", "responses:\n  - content: hi\n")
    return tmp_path


def flow(folder: Path, body: str) -> Path:
    return write(folder, "flow.yaml", "name: flow\nentry_point: a\n" + body)


@pytest.mark.parametrize("body, expected", [
    (GOOD_NODES + "edges:\n  - {from: a, to: c}\n", "flow.yaml:8:15: edges[0].to: edge a → c: no node 'c'"),
    (GOOD_NODES + "edges:\n  - {from: z, to: b}\n", "edges[0].from: edge from unknown node 'z'"),
    ("nodes:\n  a: {type: agent, agent: ghost}\n", "nodes.a.agent: no agent 'ghost'"),
    ("nodes:\n  a: {type: agnet, agent: worker}\n", "unknown node type 'agnet' (did you mean 'agent'?)"),
    ("nodes:\n  a: {type: agent, agent: worker, promt: x}\n", "nodes.a.promt: unknown field 'promt' (did you mean 'prompt'?)"),
    (GOOD_NODES + "edges:\n  - {from: a, to: b, condition: \"routing_key ==\"}\n", "edges[0].condition: condition does not parse"),
    (GOOD_NODES + "edges:\n  - {from: a, to: b, condition: \"scroe > 1\"}\n", "condition names unknown field 'scroe'"),
    (GOOD_NODES + "edges:\n  - {from: a, to: b, condition: \"__import__('os')\"}\n", "may only call"),
    (GOOD_NODES, "nodes.b: node 'b' is unreachable from entry point 'a'"),
    (GOOD_NODES + "edges:\n  - {from: a, to: b}\n  - {from: b, to: a}\n", "nodes a → b → a form a cycle with no condition"),
    (GOOD_NODES + "edges:\n  - {from: a, to: b}\ncheckpoints: [c]\n", "checkpoints[0]: 'c' is not a node"),
    ("nodes:\n  x: {type: condition}\n", "entry_point: entry_point 'a' is not a node"),
])
def test_bad_workflows_fail_at_load_naming_the_problem(folder: Path, body: str, expected: str) -> None:
    path = flow(folder, body)
    with pytest.raises(ConfigError) as err:
        load_target(str(path))
    assert expected in str(err.value)
    assert "flow.yaml:" in str(err.value)


def test_cli_run_of_a_bad_workflow_exits_2_and_creates_no_task(folder: Path, magent_home: Path) -> None:
    path = flow(folder, GOOD_NODES + "edges:\n  - {from: a, to: nowhere}\n")
    result = invoke("run", str(path), "-t", "x")
    assert result.code == 2
    assert result.err.count("\n") == 1 and result.err.startswith("magent: error: ")
    assert "no node 'nowhere'" in result.err
    assert not (magent_home / "tasks").exists() or not any((magent_home / "tasks").iterdir())


def test_conditional_loop_is_allowed_and_agents_resolve_from_sibling_folder(tmp_path: Path) -> None:
    write(tmp_path, "agents/worker.yaml", agent_yaml("worker"))
    write(tmp_path, "agents/worker.script.yaml", "responses:\n  - content: hi\n")
    path = write(tmp_path, "workflows/loop.yaml", """
        name: loop
        entry_point: a
        nodes:
          a: {type: agent, agent: worker}
          b: {type: condition}
        edges:
          - {from: a, to: b}
          - {from: b, to: a, condition: "iteration < 3"}
          - {from: b, to: END}
        """)
    graph = load_target(str(path))
    assert set(graph.nodes) == {"a", "b"}
    assert graph.agents["worker"].source.path == (tmp_path / "agents/worker.yaml")


def test_a_single_agent_file_is_a_one_node_workflow(folder: Path) -> None:
    graph = load_target(str(folder / "worker.yaml"))
    assert graph.kind == "agent" and list(graph.nodes) == ["worker"]


def test_a_single_agent_workflow_is_what_validating_it_makes(folder: Path) -> None:
    # It is made without pydantic's validation (a start-up cost): the same model as validated.
    from magent.models import Workflow

    graph = load_target(str(folder / "worker.yaml"))
    made = graph.workflow
    config, validated = graph.nodes["worker"].config, type(graph.nodes["worker"].config).model_validate(
        {"type": "agent", "agent": "worker"})
    assert config == validated and config.model_fields_set == validated.model_fields_set
    assert config.model_dump_json() == validated.model_dump_json()
    checked = Workflow(name="worker", nodes={"worker": {"type": "agent", "agent": "worker"}}, edges=[],
                       entry_point="worker")
    assert made == checked and repr(made) == repr(checked)
    assert made.model_dump_json() == checked.model_dump_json()
    assert made.model_fields_set == checked.model_fields_set
    assert made.nodes["worker"].model_fields_set == checked.nodes["worker"].model_fields_set


def test_unknown_target_name_is_a_clear_error() -> None:
    with pytest.raises(ConfigError) as err:
        load_target("no_such_workflow")
    assert "no workflow or agent of that name" in str(err.value)
