"""The state of one run and the verbs that make it durable.

Everything a node does to the world goes through here: messages become entries
as they complete, model calls become ``llm_call`` events and usage, and
``checkpoint()`` writes the next immutable checkpoint once everything it points
at is on disk.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from magent import failpoints
from magent.engine.events import EventBus, truncate
from magent.ids import new_id, now
from magent.models import (
    Checkpoint, Entry, HumanFeedback, HumanRequest, LLMConfig, Message, State, Task, Usage,
)
from magent.redact import Redactor
from magent.store import TaskDir

if TYPE_CHECKING:
    from magent.engine.graph import Graph
    from magent.llm.base import LLMClient, LLMResponse
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


class RunContext:
    def __init__(self, *, graph: "Graph", task: Task, td: TaskDir, bus: EventBus,
                 registry: "ToolRegistry", options: RunOptions, redactor: Redactor):
        self.graph = graph
        self.task = task
        self.td = td
        self.bus = bus
        self.registry = registry
        self.options = options
        self.redactor = redactor
        # position
        self.position: str = graph.workflow.entry_point
        self.node_done = False
        self.progress: dict[str, Any] = {}
        self.visits: dict[str, int] = {}
        self.turn_index = 0
        # state (messages in memory; on disk as entries)
        self.state = State()
        self.leaf: str | None = None
        self.entry_count = 0
        self.usage_by_model: dict[str, Usage] = {}
        self.total_usage = Usage()
        self.cursors: dict[str, int] = {}
        self.last_checkpoint: Checkpoint | None = None
        self.recovery = Recovery()
        from magent.tools.pinning import PINS_FILE, PinStore

        self.pins = PinStore(td.path / PINS_FILE)
        """Tool definitions this task has used, by hash (a changed one pauses the run)."""
        self.feedback: HumanFeedback | None = None
        """The answer to the pause this run resumed from, until a node consumes it."""
        self._clients: dict[str, "LLMClient"] = {}

    # conversation
    def add_message(self, message: Message, *, node: str | None, turn_id: str | None = None,
                    entry_id: str | None = None) -> Entry:
        """Append ``message`` to the conversation: written as an entry now, in memory for the model."""
        calls = message.tool_calls
        if calls and self.redactor.secrets:
            calls = [c.model_copy(update={"arguments": self.redactor.data(c.arguments)}) for c in calls]
        entry = Entry(id=entry_id or new_id(), parent_id=self.leaf, role=message.role,
                      content=self.redactor.text(message.content),
                      tool_calls=calls, tool_call_id=message.tool_call_id,
                      name=message.name, turn_id=turn_id, node=node, created_at=message.timestamp)
        self.td.entries.append(entry)
        self.leaf = entry.id
        self.entry_count += 1
        self.state.messages.append(message)
        if message.role == "assistant":
            failpoints.hit("after_assistant_entry")
        elif message.role == "tool":
            failpoints.hit("after_tool_entry")
        return entry

    def adopt(self, entries: list[Entry]) -> None:
        """Take entries written after the last checkpoint (by a run that died) as our own."""
        from magent.store import to_message

        for entry in entries:
            self.state.messages.append(to_message(entry))
            self.leaf = entry.id
            self.entry_count += 1

    @property
    def last_output(self) -> str:
        return self.state.metadata.get("last_output") or ""

    def set_output(self, node: str, output: str | None) -> None:
        if output is None:
            return
        self.state.metadata["last_output"] = output
        outputs = self.state.metadata.setdefault("outputs", {})
        outputs[node] = truncate(output, 4000)

    def take_feedback(self, node: str) -> HumanFeedback | None:
        """The decision a person made at ``node``, once (the node or gate consumes it)."""
        human = self.state.metadata.get("human") or {}
        if self.feedback is not None and human.get("node") == node:
            feedback, self.feedback = self.feedback, None
            return feedback
        return None

    # models
    def llm_config(self, agent_name: str) -> LLMConfig:
        config = self.graph.agent(agent_name).llm_config
        if self.options.model_override:
            config = config.model_copy(update={"model": self.options.model_override, "script": None})
        return config

    def client_for(self, agent_name: str) -> "LLMClient":
        client = self._clients.get(agent_name)
        if client is None:
            factory = self.options.llm_factory
            if factory is None:
                from magent.llm.factory import make_client as factory
            client = factory(self.llm_config(agent_name), agent=agent_name,
                             base_dir=self.graph.agents[agent_name].base_dir, cursors=self.cursors)
            self._clients[agent_name] = client
        return client

    def record_llm_call(self, response: "LLMResponse", *, node: str, agent: str, iteration: int,
                        entry_id: str | None = None) -> None:
        key = response.usage_key or response.model
        usage = Usage(input=response.tokens_in, output=response.tokens_out,
                      cost=response.cost, calls=1)
        self.usage_by_model[key] = self.usage_by_model.get(key, Usage()).add(usage)
        self.total_usage = self.total_usage.add(usage)
        self.turn_index += 1
        self.bus.emit(
            "llm_call", node, agent=agent, model=response.model, provider=response.provider,
            tokens_in=response.tokens_in, tokens_out=response.tokens_out, cost=response.cost,
            latency_ms=response.latency_ms, stop_reason=response.stop_reason, iteration=iteration,
            retries=response.retries or None, entry_id=entry_id, cursor=self.cursors.get(agent),
            response={"content": self.redactor.text(response.content),
                      "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments,
                                      "raw_arguments": c.raw_arguments if c.arguments is None else None}
                                     for c in response.tool_calls]})

    # checkpoints
    def checkpoint(self, reason: str, *, request: HumanRequest | None = None,
                   feedback: HumanFeedback | None = None) -> Checkpoint:
        """Write the next checkpoint. Entries are synced first, so a checkpoint never points at an
        entry that is not on disk. (Events are synced where they matter: before a tool that is
        not idempotent runs, and when the run stops.)"""
        self.td.entries.sync()
        failpoints.hit("before_checkpoint")
        seq = self.td.checkpoints.next_number()
        # A secret the model or a person repeated must not reach the file either.
        state = self.state.model_copy(update={"messages": [], "metadata": self.redactor.data(self.state.metadata)})
        if request is not None:
            request = request.model_copy(update={"output": self.redactor.text(request.output or "") or None,
                                                 "details": self.redactor.data(request.details)})
        if feedback is not None:
            feedback = feedback.model_copy(update={
                "message": self.redactor.text(feedback.message or "") or None,
                "state_updates": self.redactor.data(feedback.state_updates)})
        cp = Checkpoint(
            checkpoint_id=new_id(), task_id=self.task.id, sequence=seq,
            parent_id=self.last_checkpoint.checkpoint_id if self.last_checkpoint else None,
            position=self.position, created_at=now(), awaiting_human=request is not None,
            human_request=request, human_feedback=feedback, reason=reason, state=state,
            leaf_entry_id=self.leaf, entry_count=self.entry_count, node_done=self.node_done,
            node_progress=self.progress, visits=self.visits, turn_index=self.turn_index,
            usage_by_model=self.usage_by_model,
            cursors=self.cursors, events_seq=self.bus.seq)
        self.last_checkpoint = self.td.checkpoints.write(cp)
        self.bus.emit("checkpoint", self.position, sequence=seq, reason=reason)
        failpoints.hit("after_checkpoint")
        return self.last_checkpoint

    def restore(self, cp: Checkpoint, messages: list[Message]) -> None:
        """Continue from ``cp``: fresh copies of everything, so the stored checkpoint is never mutated."""
        cp = cp.model_copy(deep=True)
        self.position = cp.position
        self.node_done = cp.node_done
        self.progress = cp.node_progress
        self.visits = cp.visits
        self.turn_index = cp.turn_index
        self.state = cp.state.model_copy(update={"messages": list(messages)})
        self.leaf = cp.leaf_entry_id
        self.entry_count = cp.entry_count
        self.usage_by_model = cp.usage_by_model
        self.total_usage = cp.total_usage
        self.cursors.clear()
        self.cursors.update(cp.cursors)
        self.last_checkpoint = cp
