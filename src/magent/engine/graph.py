"""Loading a workflow (or a single agent) into a checked, runnable graph.

Every problem is found here, before any model call: unknown node kinds, missing
agents, dangling edges, conditions that do not parse or name unknown fields,
unreachable nodes and cycles with no condition on them.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from magent import paths
from magent.config.defaults import default_model, pinned
from magent.config.files import ConfigKind, LoadedAgent, detect_kind, load_agent, validate_agent
from magent.config.prompts import resolve_ref
from magent.config.validate import validate
from magent.config.yamlfile import SourceFile, display_path, from_raw, load_file, resolved
from magent.engine import conditions, routing
from magent.engine.nodes import NODE_KINDS
from magent.engine.nodes.base import Node
from magent.engine.structured import OutputSchema, compile_schemas
from magent.engine.templating import Templates, check_graph
from magent.errors import ConfigError
from magent.guardrails.rails import GraphRails, compile_rails
from magent.models import Agent, EdgeDef, Workflow
from magent.models.workflow import NodeDef

if TYPE_CHECKING:
    from magent.engine.joins import Join

END = "END"
AGENT_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(eq=False)
class Graph:
    workflow: Workflow
    nodes: dict[str, Node]
    agents: dict[str, LoadedAgent]
    source: SourceFile | None
    kind: str = "workflow"
    """``workflow``, or ``agent`` for a single agent run as a one-node workflow."""
    mcp_files: list[Path] = field(default_factory=list)
    snapshot: dict[str, Any] = field(default_factory=dict)
    """The config as written (``${VAR}`` unresolved), stored in task.json for resume."""
    secrets: set[str] = field(default_factory=set)
    """Values taken from the environment, to be redacted from anything written."""
    rails: GraphRails = field(default_factory=GraphRails)
    """The workflow's and each agent's guardrails, checked and built."""
    joins: dict[int, Join] = field(default_factory=dict)
    """Fan-out edges (by index in ``workflow.edges``) and where their branches meet."""
    output_schemas: dict[str, OutputSchema] = field(default_factory=dict)
    """Agents' checked ``output_schema``s, by agent name."""
    templates: Templates = field(default_factory=Templates)
    """What the prompts' and tool arguments' templates need (``engine/templating.py``)."""

    def join_waits(self, node: str) -> list[Join]:
        """The fan-outs whose branches meet at ``node``."""
        return [j for j in self.joins.values() if j.node == node]

    @property
    def name(self) -> str:
        return self.workflow.name

    def edges_from(self, node: str) -> list[EdgeDef]:
        return [e for e in self.workflow.edges if e.from_ == node]

    def agent(self, name: str) -> Agent:
        return self.agents[name].agent


def load_target(target: str, *, root: Path | None = None) -> Graph:
    """A run target: a workflow or agent file, or the name of one installed in the home."""
    path = Path(target)
    if path.is_file():
        return load_path(path)
    if path.exists():
        raise ConfigError(f"{target}: not a file")
    candidates = []
    for folder in (paths.workflows_dir(root), paths.agents_dir(root)):
        for suffix in AGENT_SUFFIXES:
            candidates.append(folder / f"{target}{suffix}")
    for candidate in candidates:
        if candidate.is_file():
            return load_path(candidate)
    raise ConfigError(f"no file {target!r}, and no workflow or agent of that name installed in "
                      f"{paths.workflows_dir(root)} or {paths.agents_dir(root)}")


def load_path(path: Path) -> Graph:
    source = load_file(path)
    kind = detect_kind(source)
    if kind is ConfigKind.workflow:
        return load_workflow(path, source=source)
    if kind is ConfigKind.agent:
        return single_agent_graph(load_agent(path, source))
    raise ConfigError(f"is {_KIND_WORDS.get(kind, kind.value)}, not a workflow or agent", path=display_path(path))


_KIND_WORDS = {ConfigKind.mcp_servers: "an MCP servers file", ConfigKind.retention_policy: "a retention policy",
               ConfigKind.script: "a scripted model's script", ConfigKind.memory: "a memory settings file",
               ConfigKind.defaults: "a defaults file"}
"""What each kind of config file that cannot be run is, as an error names it."""


def single_agent_graph(loaded: LoadedAgent, agent_sources: dict[str, SourceFile] | None = None) -> Graph:
    agent = loaded.agent
    # What Workflow(...) and the node's AgentConfig would make of these values, without building
    # their validators (and those of the nodes, edges, budget and guardrails in them), which a single
    # agent's run uses for nothing else: the agent's name, already checked, is a valid workflow name,
    # and the one node is what validation makes.
    node_def = NodeDef.model_construct({"type", "agent"}, type="agent", agent=agent.name)
    workflow = Workflow.model_construct(name=agent.name, nodes={agent.name: node_def}, edges=[],
                                        entry_point=agent.name)
    cls = NODE_KINDS["agent"]
    node = cls(agent.name, cls.Config.model_construct({"type", "agent"}, type="agent", agent=agent.name), None)  # type: ignore[arg-type, call-arg]
    assert loaded.source is not None
    agents = {agent.name: loaded}
    _resolve_sub_agents(agents, workflow, loaded.source.path, agent_sources)
    routing.check_agents(agents)
    mcp_files: list[Path] = []
    for each in agents.values():
        for f in _agent_mcp_files(each):
            if f not in mcp_files:
                mcp_files.append(f)
    graph = Graph(workflow=workflow, nodes={agent.name: node}, agents=agents,
                  source=loaded.source, kind="agent", mcp_files=mcp_files,
                  snapshot={"kind": "agent", "agent": agent.name,
                            "agents": {n: _snap(a.source) for n, a in agents.items() if a.source is not None},
                            **_defaults(agents)},
                  secrets=set().union(*(a.source.secrets for a in agents.values() if a.source is not None)),
                  rails=_rails(agents), output_schemas=compile_schemas(agents),
                  templates=check_graph(agents, {agent.name: node}))
    node.graph = graph
    return graph


def load_workflow(path: Path | str, *, source: SourceFile | None = None,
                  agent_sources: dict[str, SourceFile] | None = None) -> Graph:
    """Load and check a workflow file. ``agent_sources`` (from a snapshot) replaces file lookup."""
    path = Path(path)
    source = source or load_file(path)
    workflow = validate(source, Workflow)
    secrets = set(source.secrets)

    if workflow.entry_point not in workflow.nodes:
        raise source.error(f"entry_point {workflow.entry_point!r} is not a node "
                           f"(nodes: {', '.join(workflow.nodes)})", ("entry_point",))

    nodes: dict[str, Node] = {}
    agents: dict[str, LoadedAgent] = {}
    for name, nodedef in workflow.nodes.items():
        at = ("nodes", name)
        cls = NODE_KINDS.get(nodedef.type)
        if cls is None:
            close = difflib.get_close_matches(nodedef.type, NODE_KINDS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise source.error(f"unknown node type {nodedef.type!r}{hint}; kinds: "
                               f"{', '.join(NODE_KINDS)}", at + ("type",))
        nodedata = source.data["nodes"][name]
        if isinstance(nodedata, dict):  # prompt: {prompt: NAME, version: V} → the stored text
            nodedata = resolve_ref(source, nodedata, "prompt", at)
        config = validate(source, cls.Config, data=nodedata, prefix=at)
        for fieldname, agent_name in cls.agent_refs(config):
            if agent_name not in agents:
                agents[agent_name] = _resolve_agent(agent_name, workflow, source, path,
                                                    at + (fieldname,), agent_sources)
                agent_source = agents[agent_name].source
                if agent_source is not None:
                    secrets |= agent_source.secrets
        nodes[name] = cls(name, config, None)  # type: ignore[arg-type]
    _resolve_sub_agents(agents, workflow, path, agent_sources, source)
    routing.check_agents(agents, source)
    for loaded in agents.values():
        if loaded.source is not None:
            secrets |= loaded.source.secrets

    _check_edges(workflow, source)
    _check_reachable(workflow, source)
    _check_cycles(workflow, source)
    from magent.engine.joins import find_joins  # (a single agent has none: it never imports them)

    joins = find_joins(workflow, source.error)
    for i, gate in enumerate(workflow.checkpoints):
        if gate not in workflow.nodes:
            raise source.error(f"{gate!r} is not a node", ("checkpoints", i))
    if workflow.on_message is not None and (workflow.on_message not in nodes
                                            or nodes[workflow.on_message].kind != "agent"):
        agent_nodes = [n for n, node in nodes.items() if node.kind == "agent"]
        raise source.error(f"{workflow.on_message!r} is not an agent node (agent nodes: "
                           f"{', '.join(agent_nodes) or 'none'})", ("on_message",))
    for i, name in enumerate(workflow.result_nodes):
        if name not in workflow.nodes:
            where = ("result",) if isinstance(workflow.result, str) else ("result", i)
            raise source.error(f"{name!r} is not a node (nodes: {', '.join(workflow.nodes)})", where)

    mcp_files: list[Path] = []
    if workflow.mcp_servers:
        mcp_files.append(resolved(path.parent / workflow.mcp_servers))
    for loaded in agents.values():
        for f in _agent_mcp_files(loaded):
            if f not in mcp_files:
                mcp_files.append(f)

    snapshot = {"kind": "workflow", "workflow": _snap(source),
                "agents": {n: _snap(a.source) for n, a in agents.items() if a.source is not None
                           and a.source is not source},
                **_defaults(agents)}
    graph = Graph(workflow=workflow, nodes=nodes, agents=agents, source=source,
                  mcp_files=mcp_files, snapshot=snapshot, secrets=secrets,
                  rails=_rails(agents, workflow, source), joins=joins,
                  output_schemas=compile_schemas(agents, source), templates=check_graph(agents, nodes, source))
    for node in nodes.values():
        node.graph = graph
    return graph


def from_snapshot(snapshot: dict[str, Any]) -> Graph:
    """Rebuild the graph a task ran with from its stored snapshot (env values resolved anew;
    the default model is the one the task started with)."""
    with pinned(snapshot.get("defaults")):
        return _from_snapshot(snapshot)


def _defaults(agents: dict[str, LoadedAgent]) -> dict[str, Any]:
    """The default model for the snapshot, when an agent runs on it."""
    return {"defaults": default_model().as_dict()} if any(a.default_model for a in agents.values()) else {}


def _from_snapshot(snapshot: dict[str, Any]) -> Graph:
    agent_sources = {name: from_raw(s["raw"], Path(s["path"]))
                     for name, s in snapshot.get("agents", {}).items()}
    if snapshot.get("kind") == "agent":
        name = snapshot.get("agent") or next(iter(agent_sources))
        source = agent_sources[name]
        return single_agent_graph(load_agent(source.path, source), agent_sources)
    wf = snapshot["workflow"]
    source = from_raw(wf["raw"], Path(wf["path"]))
    return load_workflow(source.path, source=source, agent_sources=agent_sources)


def _rails(agents: dict[str, LoadedAgent], workflow: Workflow | None = None,
           source: SourceFile | None = None) -> GraphRails:
    """Check and build the guardrails of the workflow (``source``) and of each agent."""
    rails = GraphRails()
    if workflow is not None and source is not None:
        rails.workflow = compile_rails(source, "workflow", workflow.guardrails)
    for name, loaded in agents.items():
        assert loaded.source is not None
        inline = source is not None and loaded.source is source  # defined under the workflow's agents:
        rails.agents[name] = compile_rails(loaded.source, name, loaded.agent.guardrails,
                                           prefix=("agents", name) if inline else ())
    return rails


def _snap(source: SourceFile) -> dict[str, Any]:
    return {"path": str(source.path.resolve()), "raw": source.raw}


def _agent_mcp_files(loaded: LoadedAgent) -> list[Path]:
    if loaded.agent.mcp_servers:
        return [resolved(loaded.base_dir / loaded.agent.mcp_servers)]
    return []


def _resolve_sub_agents(agents: dict[str, LoadedAgent], workflow: Workflow, path: Path,
                        agent_sources: dict[str, SourceFile] | None,
                        workflow_source: SourceFile | None = None) -> None:
    """Load every agent named in a loaded agent's ``sub_agents``, transitively. An unknown
    one is an error at the field that names it (in the workflow or in the agent's file)."""
    todo = list(agents)
    while todo:
        loaded = agents[todo.pop(0)]
        for i, sub in enumerate(loaded.agent.sub_agents):
            if sub in agents:
                continue
            inline = loaded.source is None or loaded.source is workflow_source
            where = loaded.source if not inline else workflow_source
            at: tuple[Any, ...] = (("agents", loaded.agent.name) if inline else ()) + ("sub_agents", i)
            if where is None:
                raise ConfigError(f"agent {loaded.agent.name!r}: no sub-agent {sub!r}")
            if sub in workflow.agents and workflow_source is not None:
                where = workflow_source  # defined inline: read from the workflow's agents:
            extra = [] if inline or loaded.source is None else [loaded.source.path.parent]
            agents[sub] = _resolve_agent(sub, workflow, where, path, at, agent_sources, extra)
            todo.append(sub)


def _resolve_agent(name: str, workflow: Workflow, source: SourceFile, path: Path,
                   at: tuple[Any, ...], agent_sources: dict[str, SourceFile] | None,
                   extra_folders: list[Path] | None = None) -> LoadedAgent:
    if name in workflow.agents:
        fields = source.data["agents"][name]
        if fields is None:  # (validate_agent would read None as "the whole file")
            raise source.error("expected the inline agent's fields (role, system_prompt...), got nothing",
                               ("agents", name))
        agent, defaulted = validate_agent(source, data=fields, prefix=("agents", name))
        if agent.name != name:
            raise source.error(f"inline agent is named {agent.name!r} but listed as {name!r}",
                               ("agents", name, "name"))
        return LoadedAgent(agent=agent, source=source, default_model=defaulted)
    if agent_sources is not None and name in agent_sources:
        return load_agent(agent_sources[name].path, agent_sources[name])
    looked: list[Path] = []
    for folder in (*(extra_folders or []), path.parent, path.parent.parent / "agents", paths.agents_dir()):
        for suffix in AGENT_SUFFIXES:
            candidate = folder / f"{name}{suffix}"
            looked.append(candidate)
            if candidate.is_file():
                loaded = load_agent(candidate)
                if loaded.agent.name != name:
                    raise ConfigError(f"name is {loaded.agent.name!r} but the workflow refers to it "
                                      f"as {name!r}", path=display_path(candidate), field="name")
                return loaded
    folders = sorted({display_path(p.parent) for p in looked})
    raise source.error(f"no agent {name!r}: not defined under 'agents:' and no {name}.yaml in "
                       f"{', '.join(folders)}", at)


def _check_edges(workflow: Workflow, source: SourceFile) -> None:
    for i, edge in enumerate(workflow.edges):
        if edge.from_ not in workflow.nodes:
            raise source.error(f"edge from unknown node {edge.from_!r} "
                               f"(nodes: {', '.join(workflow.nodes)})", ("edges", i, "from"))
        for j, target in enumerate(edge.targets):
            if target != END and target not in workflow.nodes:
                at = ("edges", i, "to") + ((j,) if edge.fans_out else ())
                raise source.error(f"edge {edge.from_} → {target}: no node {target!r} "
                                   f"(nodes: {', '.join(workflow.nodes)}, or END)", at)
        if edge.condition is not None:
            try:
                conditions.check(edge.condition)
            except conditions.ConditionError as exc:
                raise source.error(str(exc), ("edges", i, "condition")) from None


def _check_reachable(workflow: Workflow, source: SourceFile) -> None:
    seen = {workflow.entry_point}
    todo = [workflow.entry_point]
    while todo:
        current = todo.pop()
        for edge in workflow.edges:
            if edge.from_ != current:
                continue
            for target in edge.targets:
                if target != END and target not in seen:
                    seen.add(target)
                    todo.append(target)
    for name in workflow.nodes:
        if name not in seen:
            raise source.error(f"node {name!r} is unreachable from entry point "
                               f"{workflow.entry_point!r}: no edge leads to it", ("nodes", name))


def _check_cycles(workflow: Workflow, source: SourceFile) -> None:
    """A cycle made only of unconditional edges would loop forever: refuse it."""
    plain: dict[str, list[str]] = {}
    for edge in workflow.edges:
        if edge.condition is None:
            plain.setdefault(edge.from_, []).extend(t for t in edge.targets if t != END)
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in plain.get(node, []):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt]
                raise source.error(f"nodes {' → '.join(cycle)} form a cycle with no condition on any "
                                   "edge; give one edge a condition (loops are bounded by "
                                   "max_iterations)", ("edges",))
            if state.get(nxt) is None:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for name in workflow.nodes:
        if state.get(name) is None:
            visit(name)
