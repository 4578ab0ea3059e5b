"""The executor interface: how a batch's rows get run, and the one function every executor
calls to run a row.

An executor is given the batch's ``Spec`` and its ``Job`` s and runs them, at most
``spec.concurrency`` at once, telling the driver through ``Report`` when each row's task
exists and when each row stops. Each row runs through ``run_row`` — an ordinary
``magent.arun`` (or ``aresume``), handed down by the API as ``Runs``, whose task is tagged
``batch:{id}`` and whose row → task line is appended to the batch's record as soon as the
task exists. So an executor owns only the *where* (this process: ``local``; a Ray cluster:
``ray``); durability and the row's outcome are the same whatever runs it. Adding an engine is a module with one class
that implements ``run`` and a line in ``runner.executor_for``.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, ClassVar

from magent.batching.inputs import Row
from magent.errors import MagentError

DEFAULT_CPUS_PER_ROW = 0.25
"""A model-bound row's share of a CPU on Ray: four such rows keep one core busy at most."""


@dataclass
class Spec:
    """What every row of the batch shares."""

    batch_id: str
    target: str
    """Absolute path of the workflow or agent file, or an installed name."""
    home: Path
    concurrency: int
    set: dict[str, Any] = field(default_factory=dict)
    """``--set`` values for every row (a row's own values win)."""
    tags: list[str] = field(default_factory=list)
    model: str | None = None
    max_rpm: int | None = None
    max_tpm: int | None = None
    ray_address: str | None = None
    cpus_per_row: float = DEFAULT_CPUS_PER_ROW
    """The share of a CPU a row reserves on a Ray cluster (``--cpus-per-row``)."""
    verbose: bool = False
    """Show the engine's own output (Ray's notices and its workers' logs)."""


@dataclass(frozen=True)
class Runs:
    """What the API hands a batch, so that batching (below it) imports none of it: how the
    target is loaded and a row's task started or continued (``magent.api``'s ``load``, ``arun``
    and ``aresume``). Its functions are module-level, so a Ray worker gets them by name."""

    load: Callable[[str], Any]
    start: Callable[..., Awaitable[Any]]
    resume: Callable[..., Awaitable[Any]]


@dataclass
class Job:
    row: Row
    task_id: str | None = None
    """The row's task when it has one (continue it), else None (start it)."""
    approve: bool = False
    """Answer the row's pause with approve (``batch resume --approve-all``)."""


@dataclass
class Outcome:
    """How a row stopped: its ``AgentResult`` as JSON, or the error that kept it from running."""

    row: int
    result: dict[str, Any] | None = None
    error: str | None = None
    lost: bool = False
    """The process running the row died (a killed worker): its task, if it has one, is left to
    resume; without one the row is ``not_started`` (a resume starts it)."""
    task_id: str | None = None
    """The row's task when there is one but no result (a lost row's, from the batch's record)."""

    @property
    def status(self) -> str:
        if self.result is not None:
            return str(self.result.get("status"))
        if self.lost:
            return "interrupted" if self.task_id else "not_started"
        return "failed"


class Report(abc.ABC):
    """The driver's side: told as rows start and stop; ``stopping`` ends the starting of rows."""

    stopping: bool = False

    @abc.abstractmethod
    def started(self, job: Job, task_id: str) -> None: ...

    @abc.abstractmethod
    def finished(self, job: Job, outcome: Outcome) -> None: ...


class Executor(abc.ABC):
    name: ClassVar[str]

    def __init__(self, spec: Spec, runs: Runs):
        self.spec = spec
        self.runs = runs

    @property
    def concurrency(self) -> int:
        """Rows run at once: ``spec.concurrency``, or fewer when this engine has less room."""
        return self.spec.concurrency

    def check(self) -> None:
        """Fail now (``MagentError``) if this executor cannot run here; nothing is started yet."""

    @abc.abstractmethod
    async def run(self, jobs: list[Job], report: Report) -> None:
        """Run ``jobs`` (in order, ``spec.concurrency`` at once) until done or ``report.stopping``."""


async def run_row(spec: Spec, job: Job, runs: Runs, on_start: Callable[[str], None] | None = None,
                  target: Any = None) -> Outcome:
    """Run one row to its end (completed, failed or paused) in this process; ``target``: the
    batch's workflow as ``runs.load`` made it (default: the row loads ``spec.target`` itself)."""
    from magent.paths import using_home
    from magent.store.batches import BatchDir, batches_dir, tag_of

    with using_home(spec.home):
        record = BatchDir(batches_dir() / spec.batch_id)

    def started(task: Any) -> None:
        if job.task_id is None:
            with using_home(spec.home):
                record.note_start(job.row.number, task.id)
        if on_start is not None:
            on_start(task.id)

    try:
        if job.task_id is None:
            values = {**spec.set, **job.row.set}
            result = await runs.start(target or spec.target, job.row.task, set=values, model=spec.model,
                                      tags=[tag_of(spec.batch_id), *spec.tags], home=spec.home,
                                      on_start=started)
        else:
            result = await runs.resume(job.task_id, approve=job.approve, model=spec.model, home=spec.home,
                                       on_start=started)
    except MagentError as exc:
        return Outcome(row=job.row.number, error=str(exc))
    return Outcome(row=job.row.number, result=result.model_dump(mode="json"))
