"""Drawing a workflow: ``mermaid(graph)`` for Markdown, ``text_lines(graph)`` for a terminal, each
node with its edges in the order they are tried (one without a condition is the "otherwise")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from magent.vocabulary import short

if TYPE_CHECKING:
    from magent.engine.graph import Graph

Line = list[tuple[str, "str | None"]]

# Mermaid shapes by node kind (open, close); unknown kinds are rounded boxes.
SHAPES = {"agent": ("[", "]"), "reflection": ("{{", "}}"), "tool": ("[[", "]]"),
          "condition": ("{", "}"), "human": ("[/", "/]"), "map": ("[/", "\\]"), "plan": ("[\\", "/]")}
KIND_STYLE = {"agent": "cyan", "reflection": "blue", "tool": "magenta", "condition": "white",
              "human": "yellow", "map": "green", "plan": "green"}


def detail_of(kind: str, agent: str, get: Any) -> str:
    """A few words saying what a node does; ``get(field)`` reads its config (None when unset)."""
    if kind == "reflection":
        rounds = get("max_rounds")
        return f"judged by {agent}" + (f", at most {rounds} rounds" if rounds is not None else "")
    if kind == "tool":
        return str(get("tool") or "")
    if kind == "human":
        return str(get("prompt") or "")
    if kind == "map":
        return (f"{agent} for each item of {get('over')}, {get('max_concurrency') or 4} at a time"
                + (", errors collected" if get("on_error") == "collect" else ""))
    if kind == "plan":
        return (f"planned by {agent}, done by {', '.join(get('workers') or [])}; levels in parallel "
                f"({get('max_concurrency') or 4} at a time), {_given(get('max_retries'), 1)} retry, "
                f"{_given(get('max_revisions'), 1)} revision, then a person")
    return agent


def _given(value: Any, default: Any) -> Any:
    return default if value is None else value


def node_detail(node: Any) -> str:
    """A few words saying what a node does, from its kind's config."""
    text = detail_of(node.kind, node.agent_name, lambda field: getattr(node.config, field, None))
    subs = node.graph.agent(node.agent_name).sub_agents if node.kind == "agent" and node.agent_name and node.graph else []
    return text + (f" (sub-agents: {', '.join(subs)})" if subs else "")


def describe(graph: "Graph") -> dict[str, Any]:
    """The graph as plain data (also ``magent graph --format json``)."""
    wf = graph.workflow
    return {
        "name": wf.name, "description": wf.description, "entry_point": wf.entry_point,
        "nodes": [{"name": name, "kind": node.kind, "detail": node_detail(node),
                   "agent": node.agent_name or None, "approval_gate": name in wf.checkpoints,
                   "joins": [{"branches": list(j.targets), "from": j.source, "on_error": j.on_error}
                             for j in graph.join_waits(name)] or None}
                  for name, node in graph.nodes.items()],
        "edges": [{"from": e.from_, "to": e.to, "condition": e.condition} for e in wf.edges],
        "max_iterations": wf.max_iterations,
    }


def describe_snapshot(snapshot: dict[str, Any]) -> dict[str, Any] | None:
    """``describe``'s form from a task's stored config snapshot as written: nothing is loaded,
    resolved or validated, so it works for any task."""
    if snapshot.get("kind") == "agent":
        names = list(snapshot.get("agents") or {})
        if len(names) != 1:
            return None
        return {"name": names[0], "description": "", "entry_point": names[0], "edges": [], "max_iterations": None,
                "nodes": [{"name": names[0], "kind": "agent", "detail": names[0], "agent": names[0],
                           "approval_gate": False}]}
    raw = (snapshot.get("workflow") or {}).get("raw")
    if not isinstance(raw, dict) or not isinstance(raw.get("nodes"), dict):
        return None
    gates = raw.get("checkpoints") or []
    nodes = []
    for name, node in raw["nodes"].items():
        node = node if isinstance(node, dict) else {}
        kind = str(node.get("type") or "")
        agent = str(node.get("agent") or node.get("critic") or "")
        nodes.append({"name": name, "kind": kind, "detail": detail_of(kind, agent, node.get), "agent": agent or None,
                      "approval_gate": name in gates})
    edges = [{"from": e.get("from"), "to": e.get("to"), "condition": e.get("condition")}
             for e in raw.get("edges") or [] if isinstance(e, dict)]
    return {"name": raw.get("name"), "description": raw.get("description") or "", "entry_point": raw.get("entry_point"),
            "nodes": nodes, "edges": edges, "max_iterations": raw.get("max_iterations")}


def _label(text: str) -> str:
    """Mermaid label text: quotes and angle brackets as entities (they would end or open markup)."""
    return (text.replace("&", "#amp;").replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")
            .replace("|", "#124;"))


def mermaid(graph: "Graph") -> str:
    spec = describe(graph)
    ids = {n["name"]: f"n{i}" for i, n in enumerate(spec["nodes"])}
    out = ["flowchart TD", '    start(("start"))']
    gates: list[str] = []
    for node in spec["nodes"]:
        opening, closing = SHAPES.get(node["kind"], ("(", ")"))
        label = f"<b>{_label(node['name'])}</b><br/>{node['kind']}"
        if node["detail"]:
            label += f": {_label(short(node['detail'], 60))}"
        if node["approval_gate"]:
            label += "<br/>⏸ approval gate"
            gates.append(ids[node["name"]])
        for join in node.get("joins") or []:
            label += f"<br/>⋈ joins {_label(', '.join(join['branches']))}"
        out.append(f'    {ids[node["name"]]}{opening}"{label}"{closing}')
    uses_end = any(e["to"] == "END" for e in spec["edges"]) or any(
        not [e for e in spec["edges"] if e["from"] == n["name"]] for n in spec["nodes"])
    if uses_end:
        out.append('    finish(("END"))')
    out.append(f"    start --> {ids[spec['entry_point']]}")
    for node in spec["nodes"]:
        edges = [e for e in spec["edges"] if e["from"] == node["name"]]
        if not edges:  # a node with no edges ends the run
            out.append(f"    {ids[node['name']]} --> finish")
        conditional = any(e["condition"] for e in edges)
        for edge in edges:
            if isinstance(edge["to"], list):  # a fan-out: a thick arrow to each branch
                label = edge["condition"] or ("otherwise" if conditional else "")
                text = _label(f"{label} · parallel" if label else "parallel")
                for branch in edge["to"]:
                    out.append(f'    {ids[node["name"]]} ==>|"{text}"| {ids[branch]}')
                continue
            target = "finish" if edge["to"] == "END" else ids[edge["to"]]
            if edge["condition"]:
                out.append(f'    {ids[node["name"]]} -->|"{_label(edge["condition"])}"| {target}')
            elif conditional:
                out.append(f'    {ids[node["name"]]} -->|"otherwise"| {target}')
            else:
                out.append(f"    {ids[node['name']]} --> {target}")
    if gates:
        out.append("    classDef gate stroke:#d97706,stroke-width:3px,stroke-dasharray:5 3")
        out.append(f"    class {','.join(gates)} gate")
    return "\n".join(out) + "\n"


def text_lines(graph: "Graph") -> list[Line]:
    spec = describe(graph)
    lines: list[Line] = [[(f"{spec['name']}", "bold")]
                         + ([(f" — {spec['description']}", "dim")] if spec["description"] else [])]
    lines.append([(f"starts at {spec['entry_point']} · at most {spec['max_iterations']} node visits", "dim")])
    lines.append([])
    width = max(len(n["name"]) for n in spec["nodes"])
    for node in spec["nodes"]:
        entry = node["name"] == spec["entry_point"]
        line: Line = [("▶ " if entry else "  ", "bold"), (f"{node['name']:<{width}}", "bold"),
                      (f"  [{node['kind']}]", KIND_STYLE.get(node["kind"], None))]
        if node["detail"]:
            line.append((f" {short(node['detail'], 70)}", None))
        if node["approval_gate"]:
            line.append(("  ⏸ approval gate: a person approves its output", "bold yellow"))
        lines.append(line)
        for join in node.get("joins") or []:
            lines.append([("      ⋈ ", "bold green"), (f"waits for the branches {', '.join(join['branches'])}", "green")])
        edges = [e for e in spec["edges"] if e["from"] == node["name"]]
        if not edges:
            lines.append([("      → END", "dim")])
        conditional = any(e["condition"] for e in edges)
        for edge in edges:
            target = edge["to"]
            if isinstance(target, list):
                at, join = next(((n["name"], j) for n in spec["nodes"] for j in n.get("joins") or []
                                 if j["branches"] == target and j["from"] == node["name"]), ("?", {}))
                line = [("      ⇉ ", "bold green"), (", ".join(target), "bold"),
                        (f"  in parallel, joining at {at}", "green")]
                if join.get("on_error") == "collect":
                    line.append((" (a failed branch is reported, not fatal)", "dim"))
            else:
                line = [("      → ", None), (target, "bold" if target != "END" else "dim")]
            if edge["condition"]:
                line.append((f"  if {edge['condition']}", "yellow"))
            elif conditional:
                line.append(("  otherwise", "dim"))
            lines.append(line)
        if edges and all(e["condition"] for e in edges):
            lines.append([("      (no condition holds: the run fails here)", "dim")])
    return lines
