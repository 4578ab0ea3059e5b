"""Control-flow signals of a run: pausing for a person and failing a node."""

from __future__ import annotations

from magent.models import HumanRequest


class PauseRun(Exception):
    """Stops the run until a person answers ``request``: the runner writes a checkpoint with
    ``awaiting_human: true`` and the node's progress, so ``magent resume`` re-enters the node."""

    def __init__(self, request: HumanRequest):
        super().__init__(request.question)
        self.request = request


class NodeFailed(Exception):
    """The node cannot complete; the task fails with this message. ``kind`` is
    ``AgentResult.error.type``: ``node_failed``, ``guardrail``, ``max_iterations``, ``routing``..."""

    def __init__(self, message: str, *, kind: str = "node_failed"):
        super().__init__(message)
        self.kind = kind


class Suspended(Exception):
    """A child session stopped at a safe point because its group was asked to stop (another
    session paused for a person, or a sibling failed). Nothing is lost: its position is in the
    next checkpoint, and a resumed run continues it."""


class CancelRun(Exception):
    """An operator cancelled the running task (``magent tasks cancel``): the run stops at this
    safe point and ends as ``cancelled``."""
