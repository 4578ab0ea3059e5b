"""The state of one run and the verbs that make it durable.

Everything a node does to the world goes through here: messages become entries
as they complete, model calls become ``llm_call`` events and usage, and
``checkpoint()`` writes the next immutable checkpoint once everything it points
at is on disk.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Callable

from magent import failpoints
from magent.engine import checkpointing, modelcalls
from magent.engine.events import EventBus
from magent.engine.sessions import Session, SessionContext, StopSignal
from magent.ids import new_id
from magent.models import (
    Checkpoint, Entry, HumanFeedback, HumanRequest, LLMConfig, Message, State, Task, Usage,
)
from magent.models.session import MAIN_SESSION
from magent.redact import Redactor
from magent.store import TaskDir
from magent.store.events import truncate
from magent.store.journal import Positions as JournalPositions

if TYPE_CHECKING:
    from magent.engine.graph import Graph
    from magent.engine.toolbox import RunNeeds
    from magent.llm.base import LLMClient
    from magent.models.progress import ProgressOfAKind
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


class RunContext:
    """The run's shared state and its durable verbs. Per-conversation state lives in
    ``Session`` objects (``self.main`` is the task's own conversation); the properties
    ``position``, ``progress``, ``state``... are the main session's."""

    def __init__(self, *, graph: "Graph", task: Task, td: TaskDir, bus: EventBus,
                 registry: "ToolRegistry", options: RunOptions, redactor: Redactor,
                 needs: "RunNeeds"):
        self.graph = graph
        self.needs = needs
        """What the run needs from its graph, resolved once (models, tools, secrets)."""
        self.task = task
        self.td = td
        self.bus = bus
        self.registry = registry
        self.options = options
        self.redactor = redactor
        self.stopping = StopSignal()
        """Set when a session pauses for a person: every other session stops at a safe point."""
        self.main = Session(id=MAIN_SESSION, kind="main", state=State(),
                            position=graph.workflow.entry_point, stop=self.stopping)
        self.sessions: dict[str, Session] = {MAIN_SESSION: self.main}
        """Every session this run knows, by id (finished children stay, with their status)."""
        self.visits: dict[str, int] = {}
        self.turn_index = 0
        self.usage_by_model: dict[str, Usage] = {}
        self.total_usage = Usage()
        self.last_checkpoint_id: str | None = None
        """The id of the checkpoint written (or resumed from) last: the next one's parent."""
        self.recoveries: dict[str, Recovery] = {}
        """What a resumed run learned about tool calls, per session."""
        from magent.tools.pinning import PINS_FILE, PinStore

        self.pins = PinStore(td.path / PINS_FILE)
        """Tool definitions this task has used, by hash (a changed one pauses the run)."""
        self.feedback: HumanFeedback | None = None
        """The answer to the pause this run resumed from, until a node consumes it."""
        from magent.engine.budget import Meter

        self.meter = Meter(self)
        """What budgets count (usage per task and per agent), from the run's own events."""
        bus.subscribe(self.meter.observe, live=False, raw=True)  # it counts calls, not attempts or checkpoints
        self.telemetry: Any = None
        """The exporter process of this run (``trace.telemetry.LiveExport``), when export is configured."""
        self._clients: dict[tuple[str, str], "LLMClient"] = {}
        self.journals = JournalPositions(td.path)
        """The lengths of the task's journals, as each checkpoint records them."""
        self._texts: dict[str, str] = {}
        """Finished children's answers by entry id (the rest are read from entries.jsonl)."""
        self._turn_commits: Any = None
        """The commits begun for the main session's last reply (``begin_commit("tool")``)."""
        self.signals_applied = 0
        """The last control signal applied (``engine/steering.py``); kept in each checkpoint."""

    # the main session (the task's own conversation)
    @property
    def position(self) -> str:
        return self.main.position or ""

    @position.setter
    def position(self, value: str) -> None:
        self.main.position = value

    @property
    def node_done(self) -> bool:
        return self.main.node_done

    @node_done.setter
    def node_done(self, value: bool) -> None:
        self.main.node_done = value

    @property
    def progress(self) -> ProgressOfAKind:
        return self.main.progress

    @progress.setter
    def progress(self, value: ProgressOfAKind) -> None:
        self.main.progress = value

    @property
    def state(self) -> State:
        return self.main.state

    @state.setter
    def state(self, value: State) -> None:
        self.main.state = value
        for session in self.sessions.values():  # metadata is one dict, shared by every session
            session.state.metadata = value.metadata

    @property
    def leaf(self) -> str | None:
        return self.main.leaf

    @property
    def entry_count(self) -> int:
        return self.main.entry_count

    @property
    def cursors(self) -> dict[str, int]:
        return self.main.cursors

    @property
    def recovery(self) -> Recovery:
        return self.recovery_of(self.main)

    def recovery_of(self, session: Session) -> Recovery:
        recovery = self.recoveries.get(session.id)
        if recovery is None:
            recovery = self.recoveries[session.id] = Recovery()
        return recovery

    def view(self, session: Session | None = None) -> SessionContext:
        """The run's verbs bound to ``session`` (default: the main session)."""
        return SessionContext(self, session or self.main)

    # child sessions
    def open_children(self) -> list[Session]:
        """Child sessions still running, in the order they were opened."""
        return [s for s in self.sessions.values() if not s.is_main and s.status == "running"]

    def child(self, parent: Session, key: str) -> Session | None:
        """The running child ``parent`` opened at ``key`` (after a resume: the same one)."""
        for session in self.sessions.values():
            if session.parent == parent.id and session.key == key and session.status == "running":
                return session
        return None

    def open_session(self, parent: Session, *, kind: str, key: str, node: str, agent: str = "",
                     task: str | None = None, fork: bool = False, stop: StopSignal | None = None,
                     position: str | None = None, stop_at: str | None = None,
                     speaker: str | None = None) -> Session:
        """Start a child session of ``parent``, or return the one already open at ``key``.

        Its history starts with ``task`` as a user message and no parent entry (isolated),
        or, with ``fork``, continues ``parent``'s history from its current leaf (a branch
        sees the conversation so far, not its siblings'). The caller checkpoints when the
        session must be durable before it acts.
        """
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
                          output=(self.view(parent).last_output or None) if fork else None)
        self.sessions[session.id] = session
        self.bus.emit("session_started", node, session=session.id, parent_session=parent.tag, kind=kind,
                      agent=agent or None, key=key, depth=session.depth,
                      task=truncate(self.redactor.text(task or ""), 1000) or None)
        if task is not None:
            self.add_message(Message(role="user", content=task, name=speaker), node=node, session=session)
        return session

    def close_session(self, session: Session, status: str, *, output: str | None = None,
                      error: str | None = None) -> None:
        """Mark a child session finished (it leaves the checkpoints' open list)."""
        session.status = status
        if output is not None and session.leaf is not None:
            self._texts[session.leaf] = output
        self.bus.emit("session_finished", session.node, session=session.id, status=status,
                      agent=session.agent or None, message_count=len(session.messages),
                      output=truncate(self.redactor.text(output or ""), 1000) or None,
                      error=self.redactor.text(error) if error else None)

    def entry_text(self, entry_id: str) -> str:
        """The text of entry ``entry_id``: a finished child's answer, which a node's progress
        refers to by id (after a resume, read back from entries.jsonl)."""
        if entry_id not in self._texts:
            for entry in self.td.entries.load().values():
                self._texts.setdefault(entry.id, entry.content)
        return self._texts.get(entry_id, "")

    # conversation
    def add_message(self, message: Message, *, node: str | None, turn_id: str | None = None,
                    entry_id: str | None = None, session: Session | None = None,
                    signal: int | None = None) -> str:
        """Append ``message`` to ``session``'s conversation (default: the main one): written as
        an entry now, in memory for the model. Returns the entry's id. With ``signal``, it is
        an operator's ``injection`` (control signal number ``signal``)."""
        session = session or self.main
        entry_id = entry_id or new_id()
        content = self.redactor.text(message.content)
        calls = message.tool_calls
        if calls and self.redactor.secrets:
            calls = [c.model_copy(update={"arguments": self.redactor.data(c.arguments)}) for c in calls]
        self.td.entries.append(Entry(
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

    def adopt(self, entries: list[Entry], session: Session | None = None) -> None:
        """Take entries written after the last checkpoint (by a run that died) as our own."""
        from magent.store import to_message

        session = session or self.main
        for entry in entries:
            session.state.messages.append(to_message(entry))
            session.leaf = entry.id
            session.entry_count += 1

    @property
    def last_output(self) -> str:
        return self.state.metadata.get("last_output") or ""

    def set_output(self, node: str, output: str | None, session: Session | None = None,
                   value: Any = None) -> None:
        """``node``'s output becomes the last one; ``metadata.outputs[node]`` is its text (cut at
        4,000 characters) or, for an agent with an ``output_schema``, the parsed ``value``."""
        if output is None:
            return
        session = session or self.main
        if session.is_main:
            self.state.metadata["last_output"] = output
            if value is None:
                self.state.metadata.pop("last_value", None)
            else:
                self.state.metadata["last_value"] = value
        else:
            session.output = output
        outputs = self.state.metadata.setdefault("outputs", {})
        outputs[node] = truncate(output, 4000) if value is None else value

    def take_feedback(self, node: str, session: Session | None = None) -> HumanFeedback | None:
        """The decision a person made at ``node`` (in ``session``), once (the node or gate consumes it)."""
        session = session or self.main
        human = self.state.metadata.get("human") or {}
        if (self.feedback is not None and human.get("node") == node
                and human.get("session") == session.tag):
            feedback, self.feedback = self.feedback, None
            return feedback
        return None

    # models (engine/modelcalls.py)
    def llm_config(self, agent_name: str) -> LLMConfig:
        return self.needs.models[agent_name]

    def client_for(self, agent_name: str, session: Session | None = None) -> "LLMClient":
        return self.model_client(agent_name, self.llm_config(agent_name), self.graph.agents[agent_name].base_dir,
                                 session)

    model_client = modelcalls.model_client
    call_model = modelcalls.call_model
    attempt_sink = modelcalls.attempt_sink
    record_llm_call = modelcalls.record_llm_call

    # durability
    async def durable(self, before: str, *, idempotent: bool = True) -> None:
        """Wait, if the run's durability mode says so, until what was written is on disk:
        ``before`` is what the run is about to do, ``"model"`` (a paid call) or ``"tool"``.

        ``sync``: before every model call and every tool call (a model's reply is on disk
        before its tools run). ``step``: before every model call (the last step's checkpoint),
        and before a tool that is not idempotent (its call's record). ``exit``: never; the
        run's end syncs everything. Concurrent sessions waiting here share one commit.
        """
        committer = self.td.committer
        if committer is None or committer.mode == "exit":
            return
        if before == "model" or committer.mode == "sync" or not idempotent:
            await committer.durable()

    def begin_commit(self, before: str) -> None:
        """Begin now, without waiting, the commit the next ``durable(before)`` will wait for,
        when nothing else could share it (no child session open): its fsyncs then run while
        the run gets on with what comes before that wait. For ``"tool"`` the commits begun are
        kept for ``turn_durable`` (until the next checkpoint)."""
        self._turn_commits = None
        committer = self.td.committer
        if committer is None or committer.mode == "exit" or (before == "tool" and committer.mode != "sync"):
            return
        if len(self.sessions) > 1 and self.open_children():
            return
        begun = committer.begin()
        if before == "tool":
            self._turn_commits = begun

    def turn_durable(self) -> Awaitable[None] | None:
        """In mode ``sync``, when the turn's reply went into a commit of its own
        (``begin_commit("tool")``): an awaitable done once that commit is, so an idempotent
        call can write its intent and get ready while the reply is synced, and wait only
        before it runs. None otherwise (then ``durable("tool")`` waits as usual)."""
        committer = self.td.committer
        if self._turn_commits is None or committer is None:
            return None
        return committer.through(self._turn_commits)

    # checkpoints (engine/checkpointing.py)
    def checkpoint(self, reason: str, *, request: HumanRequest | None = None,
                   feedback: HumanFeedback | None = None) -> None:
        """Write the next checkpoint, after the entries it points at (``checkpointing.write``)."""
        checkpointing.write(self, reason, request, feedback)

    def masked(self, request: HumanRequest) -> HumanRequest:
        """``request`` as it may be written or shown: secrets in its output and details masked."""
        return checkpointing.masked(self.redactor, request)

    def restore(self, cp: Checkpoint, messages: list[Message],
                history: Callable[[str | None], list[Message]] | None = None) -> None:
        """Continue from ``cp`` (``checkpointing.restore``)."""
        checkpointing.restore(self, cp, messages, history)
