"""Sessions: the conversation threads of one run.

A ``Session`` is one thread's own state — history, agent, status, leaf entry,
in-loop progress, scripted-model cursors and, for the main session and parallel
branches, a position in the workflow graph. Everything durable still goes through
the run (``engine/context.py``); a node works through a ``NodeContext`` bound to one session.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from magent.models import Message, State
from magent.models.progress import P as ProgressKind
from magent.models.progress import Progress, ProgressOfAKind, as_kind, blank
from magent.models.session import MAIN_SESSION, SessionPosition

if TYPE_CHECKING:
    from collections.abc import Callable

    from magent.engine.events import EventBus
    from magent.models import Checkpoint, Entry


K = TypeVar("K", bound=Progress)


class StopSignal:
    """Asks the sessions of a group to stop at their next safe point: set on the run's root when a
    session pauses for a person, or on a group (fan-out, map, plan level) when a session fails
    and its policy is to fail. Setting a group's also sets those of the groups inside it."""

    def __init__(self, parent: "StopSignal | None" = None):
        self.parent = parent
        self.reason: str | None = None

    def set(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason

    @property
    def is_set(self) -> bool:
        return self.reason is not None or (self.parent is not None and self.parent.is_set)

    def child(self) -> "StopSignal":
        return StopSignal(self)


@dataclass(eq=False)
class Session:
    """One conversation thread of a task (the main session or a child)."""

    id: str
    kind: str
    """``main``, ``agent`` (sub-agent call), ``branch`` (fan-out), ``map`` (item) or ``subtask``."""
    state: State
    """``messages`` is this session's history; ``metadata`` is the task's, shared by all sessions."""
    agent: str = ""
    parent: str | None = None
    key: str = ""
    node: str = ""
    depth: int = 0
    status: str = "running"
    leaf: str | None = None
    entry_count: int = 0
    progress: ProgressOfAKind = field(default_factory=blank)
    """How far it has got at its node, or in its agent loop (``models/progress.py``)."""
    cursors: dict[str, int] = field(default_factory=dict)
    position: str | None = None
    node_done: bool = False
    stop_at: str | None = None
    output: str | None = None
    stop: StopSignal = field(default_factory=StopSignal)
    """Runtime only: the signal this session checks at its safe points."""

    @property
    def is_main(self) -> bool:
        return self.id == MAIN_SESSION

    @property
    def here(self) -> str:
        """Its position in the graph (only the main session and branches walk the graph)."""
        if self.position is None:
            raise RuntimeError(f"session {self.id} has no position in the graph")
        return self.position

    @property
    def messages(self) -> list[Message]:
        return self.state.messages

    @property
    def tag(self) -> str | None:
        """The ``session`` field of its entries and events (None for the main session)."""
        return None if self.is_main else self.id

    def progress_as(self, cls: type[ProgressKind]) -> ProgressKind:
        """Its progress as a ``cls`` (made one when it is not yet: a node just entered)."""
        progress = self.progress = as_kind(self.progress, cls)
        return progress

    def progress_of(self, cls: type[K]) -> K:
        """Its progress, which its node (or agent loop) made a ``cls`` (a ``TypeError`` when it is
        not: the caller runs where that kind is kept)."""
        progress = self.progress
        if not isinstance(progress, cls):
            raise TypeError(f"session {self.id} keeps {progress.kind} progress, not {cls.__name__}")
        return progress

    def to_position(self) -> SessionPosition:
        return SessionPosition(
            session_id=self.id, kind=self.kind, parent=self.parent or MAIN_SESSION, key=self.key,
            node=self.node, agent=self.agent, depth=self.depth, leaf_entry_id=self.leaf,
            entry_count=self.entry_count, progress=self.progress, cursors=self.cursors,
            position=self.position, node_done=self.node_done, stop_at=self.stop_at,
            routing_key=self.state.routing_key, output=self.output)

    @classmethod
    def from_position(cls, pos: SessionPosition, metadata: dict[str, Any],
                      messages: list[Message]) -> "Session":
        """A fresh session from a stored position (the stored one is never mutated)."""
        pos = pos.model_copy(deep=True)
        state = State.model_construct(messages=list(messages), metadata=metadata, next_action=None,
                                      current_agent=pos.agent, routing_key=pos.routing_key)
        return cls(id=pos.session_id, kind=pos.kind, state=state, agent=pos.agent, parent=pos.parent,
                   key=pos.key, node=pos.node, depth=pos.depth, leaf=pos.leaf_entry_id,
                   entry_count=pos.entry_count, progress=pos.progress, cursors=pos.cursors,
                   position=pos.position, node_done=pos.node_done, stop_at=pos.stop_at,
                   output=pos.output)


class SessionBus:
    """The run's event bus, stamping each event with the session it comes from."""

    def __init__(self, bus: "EventBus", session: Session):
        self._bus = bus
        self._session = session

    def emit(self, type: str, node: str | None = None, **fields: Any) -> Any:
        if not self._session.is_main:
            fields.setdefault("session", self._session.id)
        return self._bus.emit(type, node, **fields)


def entries_in_use(cp: "Checkpoint", entries: dict[str, "Entry"],
                   path_to: "Callable[[str, dict[str, Entry]], list[Entry]]") -> list["Entry"]:
    """The entries a run continuing from ``cp`` reads, in file order: the main session's
    history, each open child's, and the finished children's answers its progress refers to.
    What a fork copies into its new task."""
    wanted: set[str] = set()
    leaves = [cp.leaf_entry_id, *(s.leaf_entry_id for s in cp.sessions)]
    refs = cp.node_progress.entry_refs().union(*(s.progress.entry_refs() for s in cp.sessions))
    for leaf in [*leaves, *refs]:
        if leaf is not None and leaf in entries:
            wanted.update(e.id for e in path_to(leaf, entries))
    return [e for e in entries.values() if e.id in wanted]
