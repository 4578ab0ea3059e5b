"""Workflow, NodeDef and EdgeDef (seed 002 entity 8).

``NodeDef`` holds only what every node has; each node kind in ``engine/nodes``
declares its own config model (a subclass of ``NodeDef``) and the graph loader
validates nodes with it, so adding a kind never edits this file.
"""

from typing import Any, Literal

from pydantic import ConfigDict, Field, PositiveInt, field_validator

from magent.models.base import Model, shaped
from magent.models.budget import Budget
from magent.models.guardrails import Guardrails


class NodeDef(Model):
    """A named node of a workflow graph. Kind-specific fields are checked by the node kind."""

    model_config = ConfigDict(extra="allow")

    type: str
    """Node kind: ``agent``, ``reflection``, ``tool``, ``condition``, ``human``."""
    description: str | None = None


class EdgeDef(Model):
    """A connection between nodes, taken when its condition holds (or always, without one)."""

    from_: str = Field(alias="from")
    """Source node."""
    to: str | list[str]
    """Destination node, or ``END``; a list of nodes is a fan-out: they run as parallel branches
    that meet at the first node all of them reach (the join)."""
    condition: str | None = None
    """Expression over State, e.g. ``routing_key == 'pass'`` or ``metadata.score >= 0.8``."""
    on_error: Literal["fail", "collect"] = "fail"
    """For a fan-out: a failed branch fails the run and stops the others (``fail``), or its
    error goes to the join in place of its output (``collect``)."""

    @field_validator("to")
    @classmethod
    def _targets(cls, value: str | list[str]) -> str | list[str]:
        if isinstance(value, str):
            return value
        if not value:
            raise ValueError("a fan-out needs at least one node")
        if "END" in value:
            raise ValueError("END cannot be a branch of a fan-out")
        dupes = sorted({t for t in value if value.count(t) > 1})
        if dupes:
            raise ValueError(f"a fan-out names each branch once; repeated: {', '.join(dupes)}")
        return value[0] if len(value) == 1 else value

    @property
    def targets(self) -> list[str]:
        """The destination nodes: one, or the branches of a fan-out."""
        return [self.to] if isinstance(self.to, str) else list(self.to)

    @property
    def fans_out(self) -> bool:
        return not isinstance(self.to, str)


class Workflow(Model):
    """A composed execution pattern: a graph of nodes."""

    name: str = Field(pattern=shaped(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", "a name of letters, digits, '_', '.' "
                                                                        "and '-' that starts with a letter or digit"))
    description: str | None = None
    patterns: list[str] = Field(default_factory=list)
    """Pattern sequence, informational (e.g. ``[react, reflection]``)."""
    nodes: dict[str, NodeDef]
    """Named workflow nodes."""
    edges: list[EdgeDef] = Field(default_factory=list)
    entry_point: str
    """Starting node."""
    checkpoints: list[str] = Field(default_factory=list)
    """Nodes after which a person must approve before the run goes on."""
    result: str | list[str] | None = None
    """The node (or nodes) whose output is the task's result: the output as it stood when the
    last of them to run finished. Unset: the output of the last node that ran."""

    budget: Budget | None = None
    """Limits on the whole task's usage (every agent and session together)."""
    on_message: str | None = None
    """The agent node that answers a follow-up (``magent chat ID "..."``). Unset: the last
    agent node that answered in the task's main conversation."""

    @property
    def result_nodes(self) -> list[str]:
        return [self.result] if isinstance(self.result, str) else list(self.result or [])
    max_iterations: PositiveInt = 50
    """Global bound on node visits (runs of a node), which bounds loops."""
    durability: Literal["sync", "step", "exit"] | None = None
    """When what a run writes must be on disk (``magent run --durability`` wins): ``sync`` (the
    default) before every tool and model call, ``step`` once per step, ``exit`` when the run stops."""
    max_delegation_depth: PositiveInt = 3
    """How deep sub-agents may nest (an agent's sub-agent's sub-agent is depth 3)."""
    mcp_servers: str | None = None
    """An MCP servers file of this workflow's own, relative to the workflow file."""
    agents: dict[str, Any] = Field(default_factory=dict)
    """Agents defined inline, by name (otherwise resolved from files)."""
    guardrails: Guardrails | None = None
    """Rails for every agent of the workflow (each agent's own run after these)."""
