"""``AgentResult`` (seed 004): what a run returns, always built from the task's files, so a
task started from the CLI and one started from Python read the same."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from magent.api.resultparts import ActionResult, Diagnostics, MemoryChange, Metrics, ModelCall, RetryInfo
from magent.models import HumanRequest, Model, Task, TaskStatus, Usage
from magent.models.session import MAIN_SESSION

if TYPE_CHECKING:
    from magent.store.tasks import TaskDir


class ErrorInfo(Model):
    """Why a run did not complete."""

    type: str
    """What kind of failure: ``node_failed``, ``model_error``, ``guardrail``, ``max_iterations``,
    ``truncated`` (a reply cut at the output limit), ``refusal`` (the model refused, or a content
    filter stopped it), ``rejected`` (a person rejected and nothing routes the rejection), ``routing`` (no edge
    matched), ``cancelled``, ``interrupted``, or ``failed`` (a task from an older magent)."""
    message: str
    """The message ``magent run`` prints."""
    node: str | None = None
    """The workflow node it happened at, when there is one."""


class TokenUsage(Model):
    """Tokens of the whole task, and per model."""

    input: int = 0
    """Prompt tokens, all models together."""
    output: int = 0
    """Completion tokens, all models together."""
    total: int = 0
    """``input + output``."""
    cache_read: int = 0
    """Of ``input``, prompt tokens the providers read from their caches."""
    cache_write: int = 0
    """Of ``input``, prompt tokens the providers wrote to their caches."""
    reasoning: int = 0
    """Of ``output``, tokens the models spent reasoning."""
    estimated: int = 0
    """Of the model calls, those whose tokens magent estimated because the server sent no usage:
    when not 0, ``input``, ``output`` and ``total`` are partly (or wholly) estimates."""
    by_model: dict[str, Usage] = Field(default_factory=dict)
    """Per model (``provider/model`` keys): tokens, cost and number of calls."""


class Provenance(Model):
    """What produced the result: enough to tell two runs' setups apart."""

    workflow: str
    """Name of the workflow (or of the agent run alone)."""
    kind: Literal["workflow", "agent"] = "workflow"
    """A workflow, or a single agent run as a one-node workflow."""
    target: str | None = None
    """The path or installed name the run was started with."""
    agents: list[str] = Field(default_factory=list)
    """Every agent the workflow can run (sub-agents included)."""
    models: dict[str, str] = Field(default_factory=dict)
    """The model each agent ran on (after ``--model`` / ``model=``)."""
    config_hash: str
    """``sha256:`` of the workflow and agents as written (the same files give the same hash
    wherever they are; ``set=`` values and the model override are not part of it)."""
    magent_version: str
    """The magent that ran it."""
    forked_from: str | None = None
    """The task this one branched from (``resume --from-checkpoint``), if any."""


class AgentResult(Model):
    """The outcome of a run: from ``magent.run``/``resume``, the last line of ``magent run --json``."""

    type: Literal["result"] = "result"
    """Always ``result``: tells this line from the events in a ``--json`` stream."""
    task_id: str
    """The task's id (its directory under ``$MAGENT_HOME/tasks``)."""
    session_id: str = MAIN_SESSION
    """The session whose answer ``output`` is: ``main``, the task's own conversation (the child
    sessions of sub-agents, branches and map items are in ``magent trace``)."""
    status: TaskStatus
    """``completed``, ``failed``, ``awaiting_human`` (see ``pause``), ``cancelled``, ``running``
    or ``pending`` (a run that was stopped, e.g. by a signal: ``magent resume`` continues it)."""
    success: bool
    """``status == "completed"``."""
    output: Any = None
    """The final answer: its text, or the parsed JSON value when the agent that gave it declares
    an ``output_schema``; None when the run did not complete."""
    error: ErrorInfo | None = None
    """Set when the run failed, was cancelled or was interrupted."""
    started_at: datetime | None = None
    """When the run started (None if it never did)."""
    finished_at: datetime | None = None
    """When it completed or failed (None while paused or unfinished)."""
    token_usage: TokenUsage = Field(default_factory=TokenUsage)
    """Tokens in total and per model."""
    cost_estimate: float | None = None
    """USD as litellm's price map has it (0 for the scripted model); None when no call had a
    known price, and a lower bound when only some had (``token_usage.by_model``'s ``unpriced``
    counts the calls without one)."""
    model_calls: list[ModelCall] = Field(default_factory=list)
    """Every model call, in order, with its step in ``magent trace``, model, provider, tokens,
    cost and latency; a failed attempt is one too (with its ``error``). How many calls were
    answered: ``token_usage.by_model``'s ``calls``, or the entries without an ``error``."""
    steps: int = 0
    """Numbered lines of ``magent trace`` (node visits, model turns, pauses...)."""
    actions: list[ActionResult] = Field(default_factory=list)
    """Every tool call, in order: its step, tool, arguments, result (shortened), outcome and time."""
    memory_deltas: list[MemoryChange] = Field(default_factory=list)
    """What the run wrote to long-term memory, then to the task's key-value store."""
    diagnostics: Diagnostics = Field(default_factory=Diagnostics)
    """Warnings of the run, and the files that hold its full record."""
    retry_info: RetryInfo = Field(default_factory=RetryInfo)
    """Failed attempts of model and tool calls that were tried again, and the last error."""
    metrics: Metrics = Field(default_factory=Metrics)
    """The run's duration and, per tool, its calls' time and count."""
    seed: int | None = None
    """The sampling seed sent to the models: magent sends none, so always None."""
    deterministic: bool = False
    """Every model call was answered by the scripted model (or none was made): the run replays exactly."""
    pause: HumanRequest | None = None
    """What the run asks of a person when ``status`` is ``awaiting_human``."""
    provenance: Provenance
    """Workflow, agents, models, config hash and magent version."""

    @property
    def paused(self) -> bool:
        return self.status == TaskStatus.awaiting_human

    @property
    def answered_calls(self) -> int:
        """Model calls that were answered (failed attempts not counted)."""
        return sum(1 for call in self.model_calls if not call.error)

    def to_json(self) -> str:
        """One line of JSON (what ``magent run --json`` prints last)."""
        return json.dumps(self.model_dump(mode="json"), ensure_ascii=False)


def result_of(task_dir: "TaskDir", task: Task | None = None) -> AgentResult:
    """The ``AgentResult`` of the task in ``task_dir`` as its files have it now."""
    from magent.trace.load import load_view

    from magent.api import resultparts as parts

    task = task or task_dir.load_task()
    doc = load_view(task_dir).doc
    actions, calls = parts.calls_of(doc.get("steps") or [])
    events = task_dir.read_events()
    by_model = {key: Usage.model_validate(value) for key, value in (doc.get("usage_by_model") or {}).items()
                if isinstance(value, dict)}
    usage = task.usage
    error = _error(task, events) if task.error and task.status != TaskStatus.completed else None
    pause = _pause(task_dir) if task.status == TaskStatus.awaiting_human else None
    return AgentResult(
        task_id=task.id, status=task.status, success=task.status == TaskStatus.completed,
        output=_output(task), error=error,
        started_at=task.started_at, finished_at=task.completed_at,
        token_usage=TokenUsage(input=usage.input, output=usage.output, total=usage.input + usage.output,
                               cache_read=usage.cache_read, cache_write=usage.cache_write,
                               reasoning=usage.reasoning, estimated=usage.estimated, by_model=by_model),
        cost_estimate=None if usage.unpriced and usage.unpriced >= usage.calls else usage.cost,
        model_calls=calls, steps=len(doc.get("steps") or []), pause=pause, provenance=provenance(task),
        actions=actions, memory_deltas=parts.memory_deltas(events, task_dir), diagnostics=parts.diagnostics(events, task_dir),
        retry_info=parts.retry_info(events), metrics=parts.metrics(events, actions, task.started_at, task.completed_at),
        deterministic=parts.deterministic(calls))


def _output(task: Task) -> Any:
    if task.status != TaskStatus.completed:
        return None
    return task.result_value if task.result_value is not None else task.result


def provenance(task: Task) -> Provenance:
    from magent.version import __version__

    snapshot = task.config_snapshot or {}
    options = snapshot.get("options") or {}
    override = options.get("model_override")
    models: dict[str, str] = {}
    for name, source in (snapshot.get("agents") or {}).items():
        raw = source.get("raw") if isinstance(source, dict) else None
        config = raw.get("llm_config") if isinstance(raw, dict) else None
        model = config.get("model") if isinstance(config, dict) else None
        if override or model:
            models[name] = str(override or model)
    canonical = json.dumps(config_of(snapshot), sort_keys=True, ensure_ascii=False, default=str)
    return Provenance(
        workflow=task.workflow, kind="agent" if snapshot.get("kind") == "agent" else "workflow",
        target=task.target, agents=sorted(snapshot.get("agents") or {}), models=models,
        config_hash="sha256:" + hashlib.sha256(canonical.encode()).hexdigest(),
        magent_version=__version__, forked_from=task.parent_task_id)


def config_of(snapshot: dict[str, Any]) -> dict[str, Any]:
    """The part of a task's config snapshot that is configuration: file contents, not paths."""
    def raw(source: Any) -> Any:
        return source.get("raw") if isinstance(source, dict) else source

    return {"kind": snapshot.get("kind"), "workflow": raw(snapshot.get("workflow")),
            "agents": {name: raw(s) for name, s in (snapshot.get("agents") or {}).items()}}


def _error(task: Task, events: list[Any]) -> ErrorInfo:
    """The task's error with its kind and node, from the last ``error`` event of the run."""
    message = task.error or ""
    if task.status == TaskStatus.cancelled:
        return ErrorInfo(type="cancelled", message=message)
    if task.status != TaskStatus.failed:
        return ErrorInfo(type="interrupted", message=message)
    last: dict[str, Any] | None = None
    for event in events:
        if event.type == "error":
            last = {"node": event.node, "type": event.field("error_type")}
        elif event.type == "run_started":
            last = None  # an error before a resume is not this run's
    if last is None:
        return ErrorInfo(type="failed", message=message)
    return ErrorInfo(type=last["type"] or "failed", message=message, node=last["node"])


def _pause(task_dir: "TaskDir") -> HumanRequest | None:
    cp, _ = task_dir.checkpoints.latest(repair=False)
    return cp.human_request if cp is not None and cp.awaiting_human else None
