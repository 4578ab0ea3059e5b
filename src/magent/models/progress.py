"""Node progress: how far a node (or a child session's agent loop) has got, kept in every
checkpoint so that a resumed run goes on from there.

One model per kind of progress, named by ``kind`` so that a checkpoint reads on its own:
``agent`` (a ReAct loop: an agent node, a sub-agent, a map item, a plan subtask or planner),
``tool`` (a tool node), ``map``, ``plan``, ``fan_out`` (a session waiting at a fan-out edge for
its branches) and ``node`` (a human, condition or reflection node, which keep nothing but
``entered``; also a position not entered yet).
"""

from typing import Annotated, Any, Literal, TypeVar, Union, get_args

from pydantic import Field

from magent.models.base import Model

HumanAction = Literal["approve", "reject", "modify"]
"""What a person may answer to a pause."""


class CallDecision(Model):
    """A person's decision on one tool call the run paused for."""

    action: Literal["run", "reject"]
    message: str | None = None
    """What the person added (it goes into the call's observation)."""


class ArgumentVerdict(Model):
    """What an input rail decided on one call's arguments (``engine/argrails.py``)."""

    outcome: Literal["block", "pause"]
    rail: str
    """The rail, as the trace names it."""
    key: str
    reason: str
    argument: str
    """The argument's path in the call (``query``, ``items[0].name``)."""
    refusal: str
    """What the model is told instead of a result, for a block."""


class RailDecision(Model):
    """A person's answer at a guardrail's pause."""

    action: HumanAction
    message: str | None = None


class HeldResult(Model):
    """A tool result an input rail held for a person: the call ran, its result waits here."""

    tool: str
    outcome: Literal["SUCCESS", "FAILURE", "ERROR", "TIMEOUT"]
    """How the call ended (``tools.base.Outcome``)."""
    text: str
    """The result as the rails left it (masked)."""
    rail: str
    key: str
    reason: str
    duration_ms: int | None = None
    artifact: str | None = None
    decision: RailDecision | None = None
    """The person's answer, once given."""


class HeldAnswer(Model):
    """A final answer an output rail held for a person (its entry is written when decided)."""

    entry_id: str
    iteration: int
    rail: str
    key: str
    text: str | None = None
    """The answer the person saw, once they decided."""
    decision: RailDecision | None = None


class Progress(Model):
    """What every kind of progress holds."""

    kind: str
    entered: bool = False
    """This visit of the node is counted in ``visits``: a resumed run does not count it again."""
    task_refused: str | None = None
    """Why a person rejected the task text (or a follow-up) at an input rail's pause."""

    def entry_refs(self) -> set[str]:
        """Entries of finished children's answers this progress refers to (a fork copies them)."""
        return set()


class CallsProgress(Progress):
    """What a session that calls tools keeps about its calls."""

    decisions: dict[str, CallDecision] = Field(default_factory=dict)
    """A person's decisions, by call id."""
    arg_rails: dict[str, ArgumentVerdict] = Field(default_factory=dict)
    """Input rails' blocks and pauses on calls' arguments, by call id, until the call has its result."""
    running: list[str] = Field(default_factory=list)
    """Calls running as the checkpoint was written (another session wrote it): they may have run."""
    unsure: list[str] = Field(default_factory=list)
    """Calls a crash left without a result: they may have run (not repeated without a person)."""


class NodeProgress(Progress):
    """A human, condition or reflection node's progress, or a position not entered yet."""

    kind: Literal["node"]


class ToolProgress(CallsProgress):
    """A tool node's progress."""

    kind: Literal["tool"]


class AgentProgress(CallsProgress):
    """A ReAct loop's progress (``engine/react.py``)."""

    kind: Literal["agent"]
    started: bool = False
    """The agent node added its prompt."""
    iteration: int = 0
    """Model turns taken in this loop."""
    turn_open: str | None = None
    """The entry of a reply whose tool calls are not all answered yet."""
    held: dict[str, HeldResult] = Field(default_factory=dict)
    """Tool results held for a person, by call id."""
    held_answer: HeldAnswer | None = None
    rail_blocks: list[str] = Field(default_factory=list)
    """Tool results an input rail blocked in the open turn (the node fails once it is done)."""
    revisions: dict[str, int] = Field(default_factory=dict)
    """Revisions output rails asked for, by rail."""
    parts: list[str] = Field(default_factory=list)
    """Replies cut at the output limit that the next reply continues."""
    output_retries: int = 0
    """Answers sent back for not fitting the agent's ``output_schema``."""
    invalid: int = 0
    """A planner's answers that were not a valid plan."""


class ItemResult(Model):
    """How one item of a map ended: the entry of its answer, or its error."""

    entry: str | None = None
    error: str | None = None


class MapRecord(Model):
    count: int
    """Items in the list."""
    done: dict[int, ItemResult] = Field(default_factory=dict)
    """Finished items, by index."""


class MapProgress(Progress):
    """A map node's progress."""

    kind: Literal["map"]
    map: MapRecord | None = None
    """Set when the items start."""

    def entry_refs(self) -> set[str]:
        return {r.entry for r in self.map.done.values() if r.entry} if self.map else set()


class SubtaskStatus(Model):
    status: Literal["pending", "running", "retrying", "completed", "failed"]
    agent: str
    attempts: int = 0
    """Failed runs so far."""
    runs: int = 0
    """Sessions opened for it so far, over every revision (each has a key of its own)."""
    key: str | None = None
    """The key of its latest session."""
    session: str | None = None
    entry: str | None = None
    """The entry of its answer, once completed."""
    error: str | None = None


class PlanRevision(Model):
    plan: dict[str, Any]
    """The plan given up."""
    reason: str


class PlanRecord(Model):
    revision: int = 0
    plan: dict[str, Any] | None = None
    """The current plan, as the planner wrote it (None while it is being made)."""
    status: dict[str, SubtaskStatus] = Field(default_factory=dict)
    """Each subtask of the current plan, by id."""
    revisions: list[PlanRevision] = Field(default_factory=list)
    guidance: str | None = None
    """A person's note to the subtasks tried again."""
    failure: str | None = None
    """What made the plan be revised."""


class PlanProgress(Progress):
    """A plan node's progress."""

    kind: Literal["plan"]
    plan: PlanRecord | None = None

    def entry_refs(self) -> set[str]:
        return {s.entry for s in self.plan.status.values() if s.entry} if self.plan else set()


class BranchResult(Model):
    """How one branch of a fan-out ended."""

    output: str | None = None
    error: str | None = None


class FanOut(Model):
    edge: int
    """The fan-out edge's index in the workflow's ``edges``."""
    join: str
    branches: dict[str, str] = Field(default_factory=dict)
    """The session of each branch, by target node."""
    done: dict[str, BranchResult] = Field(default_factory=dict)
    """Finished branches, by target node."""


class FanOutProgress(Progress):
    """A session waiting at a fan-out edge for its branches (its node is done)."""

    kind: Literal["fan_out"]
    fanout: FanOut


ProgressOfAKind = Union[NodeProgress, ToolProgress, AgentProgress, MapProgress, PlanProgress, FanOutProgress]
"""A session's progress, whichever its kind."""

AnyProgress = Annotated[ProgressOfAKind, Field(discriminator="kind")]
"""A session's progress as a checkpoint holds it: read as the model its ``kind`` names."""

P = TypeVar("P", bound=ProgressOfAKind)


def blank() -> NodeProgress:
    """The progress of a position not entered yet."""
    return NodeProgress(kind="node")


def as_kind(progress: Progress, cls: type[P]) -> P:
    """``progress`` as a ``cls``: itself when it is one, else a new one with the fields the two
    share (a position's blank progress as its node is entered, or an older checkpoint's whose
    kind its fields could not tell)."""
    if isinstance(progress, cls):
        return progress
    kind = get_args(cls.model_fields["kind"].annotation)[0]
    shared = {k: v for k, v in progress if k in cls.model_fields and k != "kind"}
    return cls(**shared, kind=kind)
