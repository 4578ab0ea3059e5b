"""A run's context: what it was given (``RunDeps``), what changes as it goes (``RunState``),
and the objects that own its model calls (``ModelCalls``) and its durable points
(``Checkpoints``). A node works through a ``NodeContext``: the run and the session it runs in.

Messages become entries as they complete (``add_message``); everything else durable goes through
``ctx.checkpoints``, whose named points are the only places a checkpoint is written.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from magent import failpoints
from magent.engine.budget import Meter
from magent.engine.checkpointing import Checkpoints
from magent.engine.control import Suspended
from magent.engine.events import EventBus
from magent.engine.modelcalls import ModelCalls
from magent.engine.sessions import Session, SessionBus, StopSignal
from magent.ids import new_id
from magent.models import Entry, HumanFeedback, Message, State, Task, Usage
from magent.models.progress import AgentProgress, CallsProgress, ProgressOfAKind
from magent.models.session import MAIN_SESSION
from magent.redact import Redactor
from magent.store.tasks import TaskDir
from magent.store.events import truncate

if TYPE_CHECKING:
    from magent.engine.graph import Graph
    from magent.engine.toolbox import RunNeeds
    from magent.llm.base import LLMClient
    from magent.store.toolstats import Outcomes
    from magent.tools.pinning import PinStore
    from magent.tools.registry import ToolRegistry


@dataclass
class Recovery:
    """What a resumed run learned from the events written after its checkpoint."""

    started_calls: set[str] = field(default_factory=set)
    """Tool call ids with an intent event but no result: they may or may not have run."""
    finished: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Tool call id → its tool_result event (for calls whose result is not an entry)."""


@dataclass
class RunOptions:
    model_override: str | None = None
    no_input: bool = True
    llm_factory: Callable[..., "LLMClient"] | None = None
    """Replaces ``magent.llm.factory.make_client`` (tests inject doubles here)."""
    extra_providers: list[Any] = field(default_factory=list)
    """In-process tool providers added to the run's registry (tests, benchmarks)."""
    on_token: Callable[[str], None] | None = None
    durability: str | None = None
    """``sync``, ``step`` or ``exit`` (``--durability``); None: the workflow's, else ``sync``."""
    report: Callable[[TaskDir], Any] | None = None
    """Reads the task once the run has ended and closed, while it still holds the task's lock
    (``wiring.reported``): what it returns is the outcome's ``report`` (the API's ``AgentResult``)."""


@dataclass(eq=False)
class RunDeps:
    """What a run was given: its graph and what it needs from it, the task and its directory,
    the event bus, the options, the redactor, the tool pins and (once started) the tools."""

    graph: "Graph"
    needs: "RunNeeds"
    """What the run needs from its graph, resolved once (models, tools, secrets)."""
    task: Task
    """The task as last saved (its status changes; nothing else of it does)."""
    task_dir: TaskDir
    bus: EventBus
    options: RunOptions
    redactor: Redactor
    pins: "PinStore"
    """Tool definitions this task has used, by hash (a changed one pauses the run)."""
    registry: "ToolRegistry | None" = None
    """None until a node that may call a tool is about to run (``wiring.need_tools``)."""
    telemetry: Any = None
    """The exporter process of this run (``trace.telemetry.LiveExport``), when export is configured."""
    outcomes: "Outcomes | None" = None
    """The run's tool results counted for the home's tool stats (saved as the run closes)."""

    def tools(self) -> "ToolRegistry":
        """The run's tool registry; the runner starts it before any node that may call a tool."""
        if self.registry is None:
            raise RuntimeError("the run's tool servers have not been started")
        return self.registry


@dataclass(eq=False)
class RunState:
    """What changes as a run goes: every checkpoint records it, a resume restores it."""

    main: Session
    """The task's own conversation."""
    sessions: dict[str, Session] = field(default_factory=dict)
    """Every session this run knows, by id (finished children stay, with their status)."""
    visits: dict[str, int] = field(default_factory=dict)
    turn_index: int = 0
    usage_by_model: dict[str, Usage] = field(default_factory=dict)
    total_usage: Usage = field(default_factory=Usage)
    last_checkpoint_id: str | None = None
    """The id of the checkpoint written (or resumed from) last: the next one's parent."""
    recoveries: dict[str, Recovery] = field(default_factory=dict)
    """What a resumed run learned about tool calls, per session."""
    feedback: HumanFeedback | None = None
    """The answer to the pause this run resumed from, until a node consumes it."""
    signals_applied: int = 0
    """The last control signal applied (``engine/steering.py``); kept in each checkpoint."""

    def __post_init__(self) -> None:
        self.sessions.setdefault(self.main.id, self.main)

    @property
    def metadata(self) -> dict[str, Any]:
        """The task's metadata: one dict, shared by every session."""
        return self.main.state.metadata

    def set_main_state(self, value: State) -> None:
        """Replace the main session's state; every session shares its metadata."""
        self.main.state = value
        for session in self.sessions.values():
            session.state.metadata = value.metadata

    def open_children(self) -> list[Session]:
        """Child sessions still running, in the order they were opened."""
        return [s for s in self.sessions.values() if not s.is_main and s.status == "running"]


class RunContext:
    """One run: its ``deps``, its ``state``, the owners of its model calls and checkpoints,
    and the verbs that change its conversations (each message an entry as it completes)."""

    def __init__(self, deps: RunDeps):
        self.deps = deps
        self.state = RunState(main=Session(id=MAIN_SESSION, kind="main", state=State(),
                                           position=deps.graph.workflow.entry_point))
        self.meter = Meter(self)
        """What budgets count (usage per task and per agent), from the run's own events."""
        deps.bus.subscribe(self.meter.observe, live=False, raw=True)  # it counts calls, not attempts or checkpoints
        self.checkpoints = Checkpoints(deps, self.state, self.meter)
        self.models = ModelCalls(deps, self.state, self.checkpoints)
        self.tools_starting: asyncio.Future[None] | None = None
        """The start of the tool servers, once asked for (``wiring.need_tools``)."""
        self._texts: dict[str, str] = {}
        """Finished children's answers by entry id (the rest are read from entries.jsonl)."""

    def node(self, session: Session | None = None) -> "NodeContext":
        """What a node running in ``session`` (default: the main session) works through."""
        return NodeContext(self, session or self.state.main)

    # child sessions
    def child(self, parent: Session, key: str) -> Session | None:
        """The running child ``parent`` opened at ``key`` (after a resume: the same one)."""
        for session in self.state.sessions.values():
            if session.parent == parent.id and session.key == key and session.status == "running":
                return session
        return None

    def open_session(self, parent: Session, *, kind: str, key: str, node: str, agent: str = "",
                     task: str | None = None, fork: bool = False, stop: StopSignal | None = None,
                     position: str | None = None, stop_at: str | None = None,
                     speaker: str | None = None) -> Session:
        """Start a child session of ``parent``, or return the one already open at ``key``. Its history
        starts with ``task`` as a user message (isolated), or with ``fork`` continues ``parent``'s
        from its current leaf (a branch sees the conversation so far, not its siblings'). The
        caller checkpoints when the session must be durable before it acts."""
        existing = self.child(parent, key)
        if existing is not None:
            return existing
        messages = list(parent.messages) if fork else []
        state = State.model_construct(messages=messages, metadata=self.state.metadata, next_action=None,
                                      current_agent=agent, routing_key=None)
        session = Session(id=new_id(), kind=kind, state=state, agent=agent, parent=parent.id, key=key,
                          node=node, depth=parent.depth + 1, leaf=parent.leaf if fork else None,
                          entry_count=parent.entry_count if fork else 0, position=position,
                          stop_at=stop_at, stop=stop or parent.stop,
                          output=(self.node(parent).last_output or None) if fork else None)
        self.state.sessions[session.id] = session
        self.deps.bus.emit("session_started", node, session=session.id, parent_session=parent.tag, kind=kind,
                           agent=agent or None, key=key, depth=session.depth,
                           task=truncate(self.deps.redactor.text(task or ""), 1000) or None)
        if task is not None:
            self.add_message(Message(role="user", content=task, name=speaker), node=node, session=session)
        return session

    def close_session(self, session: Session, status: str, *, output: str | None = None,
                      error: str | None = None) -> None:
        """Mark a child session finished (it leaves the checkpoints' open list)."""
        session.status = status
        if output is not None and session.leaf is not None:
            self._texts[session.leaf] = output
        redactor = self.deps.redactor
        self.deps.bus.emit("session_finished", session.node, session=session.id, status=status,
                           agent=session.agent or None, message_count=len(session.messages),
                           output=truncate(redactor.text(output or ""), 1000) or None,
                           error=redactor.text(error) if error else None)

    def entry_text(self, entry_id: str) -> str:
        """The text of entry ``entry_id``: a finished child's answer, which a node's progress
        refers to by id (after a resume, read back from entries.jsonl)."""
        if entry_id not in self._texts:
            for entry in self.deps.task_dir.entries.load().values():
                self._texts.setdefault(entry.id, entry.content)
        return self._texts.get(entry_id, "")

    # conversation
    def add_message(self, message: Message, *, node: str | None, turn_id: str | None = None,
                    entry_id: str | None = None, session: Session | None = None,
                    signal: int | None = None) -> str:
        """Append ``message`` to ``session``'s conversation (default: the main one): written as
        an entry now, in memory for the model. Returns the entry's id. With ``signal``, it is
        an operator's ``injection`` (control signal number ``signal``)."""
        session = session or self.state.main
        entry_id = entry_id or new_id()
        redactor = self.deps.redactor
        content = redactor.text(message.content)
        calls = message.tool_calls
        if calls and redactor.secrets:
            calls = [c.model_copy(update={"arguments": redactor.data(c.arguments)}) for c in calls]
        self.deps.task_dir.entries.append(Entry(
            id=entry_id, parent_id=session.leaf, role=message.role, content=content,
            tool_calls=calls, tool_call_id=message.tool_call_id,
            name=message.name, turn_id=turn_id, node=node, session=session.tag,
            created_at=message.timestamp, compaction=message.compaction,
            entry_type="compaction" if message.compaction is not None else "injection" if signal else "message",
            signal=signal))
        message._entry = entry_id
        session.leaf = entry_id
        session.entry_count += 1
        session.state.messages.append(message)
        if message.role == "assistant":
            failpoints.hit("after_assistant_entry")
        elif message.role == "tool":
            failpoints.hit("after_tool_entry")
        return entry_id

    def adopt(self, entries: list[Entry], session: Session) -> None:
        """Take entries written after the last checkpoint (by a run that died) as our own."""
        from magent.store.entries import to_message

        for entry in entries:
            session.state.messages.append(to_message(entry))
            session.leaf = entry.id
            session.entry_count += 1


@dataclass(eq=False)
class NodeContext:
    """What a node and the ReAct loop work through: the run, and the session they run in (the
    task's own conversation, a sub-agent's, a branch or a map item: the verbs are the same)."""

    run: RunContext
    session: Session

    def __post_init__(self) -> None:
        self.deps: RunDeps = self.run.deps
        self.models: ModelCalls = self.run.models
        self.checkpoints: Checkpoints = self.run.checkpoints
        self.bus = SessionBus(self.deps.bus, self.session)
        """The run's event bus, stamping each event with this session."""

    @property
    def state(self) -> State:
        """This session's state: its history; ``metadata`` is the task's, shared by all sessions."""
        return self.session.state

    @property
    def progress(self) -> ProgressOfAKind:
        """This session's progress through its current node (kept in every checkpoint)."""
        return self.session.progress

    @property
    def calls(self) -> CallsProgress:
        """This session's progress as a caller of tools (a tool node's, or an agent loop's)."""
        return self.session.progress_of(CallsProgress)

    @property
    def loop(self) -> AgentProgress:
        """This session's progress as an agent loop's (the ReAct loop and its rails)."""
        return self.session.progress_of(AgentProgress)

    @property
    def recovery(self) -> Recovery:
        return self.run.state.recoveries.setdefault(self.session.id, Recovery())

    @property
    def last_output(self) -> str:
        """The last node output in this session (the main session's is the task's)."""
        if self.session.is_main:
            return self.run.state.metadata.get("last_output") or ""
        return self.session.output or ""

    def add_message(self, message: Message, *, node: str | None, turn_id: str | None = None,
                    entry_id: str | None = None) -> str:
        return self.run.add_message(message, node=node, turn_id=turn_id, entry_id=entry_id,
                                    session=self.session)

    def set_output(self, node: str, output: str | None, value: Any = None) -> None:
        """``node``'s output becomes the last one; ``metadata.outputs[node]`` is its text (cut at
        4,000 characters) or, for an agent with an ``output_schema``, the parsed ``value``."""
        if output is None:
            return
        metadata = self.run.state.metadata
        if self.session.is_main:
            metadata["last_output"] = output
            if value is None:
                metadata.pop("last_value", None)
            else:
                metadata["last_value"] = value
        else:
            self.session.output = output
        outputs = metadata.setdefault("outputs", {})
        outputs[node] = truncate(output, 4000) if value is None else value

    def take_feedback(self, node: str) -> HumanFeedback | None:
        """The decision a person made at ``node`` in this session, once (the node or gate consumes it)."""
        state = self.run.state
        human = state.metadata.get("human") or {}
        feedback = state.feedback
        if feedback is not None and human.get("node") == node and human.get("session") == self.session.tag:
            state.feedback = None
            return feedback
        return None

    def check_stop(self) -> None:
        """A safe point: stop here (``Suspended``) if this session's group was asked to."""
        if not self.session.is_main and self.session.stop.is_set:
            raise Suspended(self.session.id)
