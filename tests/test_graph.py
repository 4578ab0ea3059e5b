"""``magent graph TARGET --format text|mermaid|json``: a workflow drawn without running it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from support.cli import invoke
from support.engine import agent_yaml, write

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
WORKFLOWS = sorted((EXAMPLES / "workflows").glob("*.yaml"))


def mermaid_nodes(out: str) -> dict[str, str]:
    """Node id → its whole declaration line."""
    return {m.group(1): m.group(0) for m in re.finditer(r"^    (n\d+)\S*\".*$", out, re.M)}


def mermaid_edges(out: str) -> list[tuple[str, str | None, str]]:
    edges = []
    for m in re.finditer(r"^    (\w+) (?:-->|==>)(?:\|\"(.*)\"\|)? (\w+)$", out, re.M):  # ==> a fan-out
        edges.append((m.group(1), m.group(2), m.group(3)))
    return edges


def test_text_shows_nodes_by_kind_edges_with_conditions_and_gates() -> None:
    result = invoke("graph", str(EXAMPLES / "workflows/triage.yaml"))
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].startswith("triage — Store a ticket")
    assert "▶ store     [tool] kv.set" in result.out
    assert "  route     [condition]" in result.out
    assert "  escalate  [agent] escalator  ⏸ approval gate" in result.out
    route = lines.index(next(line for line in lines if line.startswith("  route")))
    assert lines[route + 1].strip() == "→ escalate  if metadata.priority == 'high'"
    assert lines[route + 2].strip() == "→ answer  otherwise"
    assert lines[-1].strip() == "→ END"


def test_text_of_a_loop_with_a_human_step() -> None:
    out = invoke("graph", str(EXAMPLES / "workflows/publish.yaml")).out
    assert "  approve  [human] Publish this announcement?" in out
    assert "→ revise  if human.action == 'reject' and visits.approve < 2" in out
    assert "(no condition holds: the run fails here)" in out
    review = invoke("graph", str(EXAMPLES / "workflows/write_review.yaml")).out
    assert "  review  [reflection] judged by critic, at most 3 rounds" in review


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=[w.stem for w in WORKFLOWS])
def test_mermaid_has_every_node_and_edge_of_each_example(workflow: Path) -> None:
    import yaml

    doc = yaml.safe_load(workflow.read_text())
    result = invoke("graph", str(workflow), "--format", "mermaid")
    assert result.code == 0, result.err
    out = result.out
    assert out.startswith("flowchart TD\n")
    nodes = mermaid_nodes(out)
    ids = {}
    for node_id, line in nodes.items():
        name = re.search(r"<b>(.*?)</b>", line).group(1)
        ids[name] = node_id
    assert set(ids) == set(doc["nodes"])
    edges = mermaid_edges(out)
    assert ("start", None, ids[doc["entry_point"]]) in edges
    for edge in doc.get("edges", []):
        if isinstance(edge["to"], list):  # a fan-out: a thick arrow to each branch
            for branch in edge["to"]:
                assert (ids[edge["from"]], "parallel", ids[branch]) in edges, (edge, edges)
            continue
        target = "finish" if edge["to"] == "END" else ids[edge["to"]]
        found = [e for e in edges if e[0] == ids[edge["from"]] and e[2] == target]
        assert found, (edge, edges)
        if edge.get("condition"):
            label = found[0][1].replace("#lt;", "<").replace("#gt;", ">").replace("#quot;", '"')
            assert label == edge["condition"]
    # no unescaped quote or bracket that would end a label early
    for line in out.splitlines()[1:]:
        if '"' in line:
            assert line.count('"') == 2, line


def test_mermaid_shapes_by_kind_and_the_gate_is_marked() -> None:
    out = invoke("graph", str(EXAMPLES / "workflows/triage.yaml"), "--format", "mermaid").out
    nodes = {re.search(r"<b>(.*?)</b>", line).group(1): line for line in mermaid_nodes(out).values()}
    assert re.match(r'^    n\d+\[\[".*"\]\]$', nodes["store"])        # tool: subroutine
    assert re.match(r'^    n\d+\{".*"\}$', nodes["route"])            # condition: rhombus
    assert re.match(r'^    n\d+\[".*"\]$', nodes["escalate"])         # agent: box
    assert "⏸ approval gate" in nodes["escalate"] and "approval gate" not in nodes["answer"]
    gate_id = re.match(r"^    (n\d+)", nodes["escalate"]).group(1)
    assert f"    class {gate_id} gate" in out
    human = invoke("graph", str(EXAMPLES / "workflows/publish.yaml"), "--format", "mermaid").out
    assert re.search(r'^    n\d+\[/"<b>approve</b><br/>human: Publish this announcement\?"/\]$', human, re.M)
    review = invoke("graph", str(EXAMPLES / "workflows/write_review.yaml"), "--format", "mermaid").out
    assert re.search(r'^    n\d+\{\{"<b>review</b><br/>reflection: judged by critic', review, re.M)
    assert re.search(r'-->\|"otherwise"\| finish$', review, re.M)


def test_labels_with_quotes_and_brackets_are_escaped(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", agent_yaml("a"))
    workflow = write(tmp_path, "wf.yaml", """
        name: odd
        entry_point: first
        nodes:
          first: {type: agent, agent: a}
          second: {type: human, prompt: 'Say "yes" | <no>'}
        edges:
          - {from: first, to: second, condition: "metadata.note == \\"a|b\\" or iteration < 2"}
          - {from: first, to: END}
          - {from: second, to: END}
    """)
    out = invoke("graph", str(workflow), "--format", "mermaid").out
    assert 'human: Say #quot;yes#quot; #124; #lt;no#gt;' in out
    assert '-->|"metadata.note == #quot;a#124;b#quot; or iteration #lt; 2"|' in out


def test_a_single_agent_and_an_installed_name(magent_home: Path, tmp_path: Path) -> None:
    out = invoke("graph", str(EXAMPLES / "agents/note_taker.yaml")).out
    assert "▶ note_taker  [agent] note_taker" in out and "→ END" in out
    installed = magent_home / "workflows"
    installed.mkdir(parents=True)
    for name in ("writer", "critic"):
        (magent_home / "agents").mkdir(exist_ok=True)
        (magent_home / "agents" / f"{name}.yaml").write_text(
            (EXAMPLES / "agents" / f"{name}.yaml").read_text().replace("scripts/", str(EXAMPLES / "agents/scripts") + "/"))
    (installed / "write_review.yaml").write_text((EXAMPLES / "workflows/write_review.yaml").read_text())
    by_name = invoke("graph", "write_review", "--format", "json")
    assert by_name.code == 0, by_name.err
    spec = json.loads(by_name.out)
    assert [n["name"] for n in spec["nodes"]] == ["write", "review"]
    assert spec["edges"][1] == {"from": "review", "to": "write", "condition": "routing_key == 'revise'"}


@pytest.mark.parametrize("args, message", [
    (["nope.yaml"], "no file 'nope.yaml'"),
    (["WF", "--format", "png"], "--format 'png' is not a format (one of: text, mermaid, json)"),
])
def test_bad_input_exit_2(args: list[str], message: str) -> None:
    args = [str(EXAMPLES / "workflows/triage.yaml") if a == "WF" else a for a in args]
    result = invoke("graph", *args)
    assert result.code == 2 and message in result.err and result.out == ""


def test_a_broken_workflow_is_reported_with_file_and_line(tmp_path: Path) -> None:
    workflow = write(tmp_path, "bad.yaml", """
        name: bad
        entry_point: a
        nodes:
          a: {type: condition}
        edges:
          - {from: a, to: nowhere}
    """)
    result = invoke("graph", str(workflow))
    assert result.code == 2
    assert "bad.yaml:6" in result.err and "no node 'nowhere'" in result.err
