"""Starting, resuming and reading batches (what ``magent batch`` calls).

``start`` checks everything before anything is written — the inputs (a malformed row
stops the batch unless ``skip_bad_rows``), the values the workflow's tools need, the
target, the executor (a Ray address that does not answer) — then records the batch and
runs its rows. ``resume`` runs what is left: rows whose task finished are not run again,
rows whose task was stopped continue from their checkpoints, rows never started start;
paused rows stay paused unless ``approve_all``.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from magent import paths
from magent.batching.executor import DEFAULT_CPUS_PER_ROW, Executor, Job, Outcome, Report, Runs, Spec
from magent.batching.inputs import BadRow, Inputs, Row, missing_values, read_inputs, required_keys
from magent.errors import TaskNotFoundError, UsageError
from magent.ids import new_id, now
from magent.store import batches
from magent.store.batches import BatchDir

EXECUTORS = ("local", "ray")
FINISHED = ("completed", "failed", "cancelled")
DEFAULT_CONCURRENCY = 8


@dataclass
class Options:
    concurrency: int = DEFAULT_CONCURRENCY
    max_rpm: int | None = None
    max_tpm: int | None = None
    max_failures: int | None = None
    skip_bad_rows: bool = False
    executor: str = "local"
    ray_address: str | None = None
    cpus_per_row: float | None = None
    """Ray only; None: ``DEFAULT_CPUS_PER_ROW``."""
    verbose: bool = False
    set: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    model: str | None = None

    def check(self) -> None:
        for name, value, least in (("--concurrency", self.concurrency, 1), ("--max-rpm", self.max_rpm, 1),
                                   ("--max-tpm", self.max_tpm, 1), ("--max-failures", self.max_failures, 1)):
            if value is not None and value < least:
                raise UsageError(f"{name} must be {least} or more, not {value}")
        from magent.engine.inputs import check_model_override

        check_model_override(self.model)
        for tag in self.tags:
            if not tag:
                raise UsageError("--tag must not be empty: every row's task would fail to start")
        if self.ray_address is not None and self.executor != "ray":
            raise UsageError("--ray-address is for --executor ray (a local batch runs in this process)")
        if self.cpus_per_row is not None:
            if self.executor != "ray":
                raise UsageError("--cpus-per-row is for --executor ray (a local batch's rows share this process)")
            if not math.isfinite(self.cpus_per_row) or self.cpus_per_row <= 0:
                raise UsageError(f"--cpus-per-row must be a number of CPUs above 0 (such as 0.25 or 1), "
                                 f"not {self.cpus_per_row:g}")

    def spec(self, batch_id: str, target: str, **recorded: Any) -> Spec:
        """What every row of the batch shares: these options, and what the batch recorded."""
        return Spec(batch_id=batch_id, target=target, home=paths.home(), concurrency=self.concurrency,
                    max_rpm=self.max_rpm, max_tpm=self.max_tpm, ray_address=self.ray_address,
                    cpus_per_row=self.cpus_per_row or DEFAULT_CPUS_PER_ROW, verbose=self.verbose, **recorded)


@dataclass
class Driver(Report):
    """Counts rows as they go and passes each event on to the view."""

    total: int
    max_failures: int | None = None
    counts: dict[str, int] = field(default_factory=dict)
    running: int = 0
    tokens: int = 0
    cost: float = 0.0
    unpriced: int = 0
    """Model calls no price map could price: the cost is a lower bound, or unknown."""
    on_change: Callable[["Driver", Job, Outcome | None], None] = lambda d, j, o: None
    stopped_by: str | None = None
    failures: int = 0

    def started(self, job: Job, task_id: str) -> None:
        self.running += 1
        self.on_change(self, job, None)

    def finished(self, job: Job, outcome: Outcome) -> None:
        self.running = max(0, self.running - 1)
        status = outcome.status
        self.counts[status] = self.counts.get(status, 0) + 1
        result = outcome.result or {}
        self.tokens += int((result.get("token_usage") or {}).get("total") or 0)
        self.cost += float(result.get("cost_estimate") or 0.0)
        by_model = (result.get("token_usage") or {}).get("by_model") or {}
        self.unpriced += sum(int((u or {}).get("unpriced") or 0) for u in by_model.values())
        if status in ("failed",):
            self.failures += 1
            if self.max_failures is not None and self.failures >= self.max_failures and not self.stopping:
                self.stopping = True
                self.stopped_by = (f"stopped starting rows after {self.failures} failed "
                                   f"(--max-failures {self.max_failures})")
        self.on_change(self, job, outcome)

    @property
    def done(self) -> int:
        return sum(self.counts.values())


def prepare(target: str, inputs_path: Path, options: Options, runs: Runs) -> tuple[Inputs, list[Row], Executor, Spec]:
    """Everything checked, nothing written: the rows to run and the executor to run them."""
    options.check()
    inputs = read_inputs(inputs_path)
    if inputs.bad and not options.skip_bad_rows:
        first = inputs.bad[0]
        more = f" (and {len(inputs.bad) - 1} more bad rows)" if len(inputs.bad) > 1 else ""
        raise UsageError(f"--inputs {first.error}{more}; nothing was started "
                         "(fix the file, or --skip-bad-rows to run the good rows)")
    definition = runs.load(target)
    required = required_keys(definition.graph)
    rows = []
    for row in inputs.rows:
        problem = missing_values(row, required, options.set)
        if problem is None:
            rows.append(row)
        elif options.skip_bad_rows:
            inputs.bad.append(BadRow(row.number, row.line, f"{inputs.path.name}:{row.line}: {problem}"))
        else:
            raise UsageError(f"--inputs {inputs.path.name}:{row.line}: {problem}; nothing was started")
    if not rows:
        raise UsageError(f"--inputs {inputs.path}: no row can run (all {len(inputs.bad)} are bad)")
    spec = options.spec(new_id(), _target_of(target, definition), set=dict(options.set), tags=list(options.tags),
                        model=options.model)
    executor = executor_for(options.executor, spec, runs)
    executor.check()
    inputs.rows = rows
    return inputs, rows, executor, spec


def _target_of(target: str, definition: Any) -> str:
    """What a resume loads again: the file's absolute path, or the installed name."""
    path = Path(os.path.expanduser(str(target)))
    return str(path.resolve()) if path.exists() else str(definition.target or target)


INPUTS_FILE = "inputs.jsonl"
"""Rows given as a list (``magent.batch(target, [{...}, ...])``) are kept in the batch's folder."""


def record(inputs: Inputs, target: str, spec: Spec, options: Options, *, rows_given: bytes | None = None) -> BatchDir:
    """Write the batch's record; ``rows_given`` (the rows as JSON Lines, when they came as a
    list rather than a file) goes beside it as ``inputs.jsonl``, which a resume then reads."""
    kept = batches.batches_dir() / spec.batch_id / INPUTS_FILE if rows_given is not None else inputs.path.resolve()
    doc = {
        "id": spec.batch_id, "created_at": now().isoformat(), "target": target, "target_path": spec.target,
        "inputs": {"path": str(kept), "sha256": inputs.sha256, "format": inputs.format,
                   "rows": len(inputs.rows) + len(inputs.bad)},
        "options": {"concurrency": options.concurrency, "max_rpm": options.max_rpm, "max_tpm": options.max_tpm,
                    "max_failures": options.max_failures, "skip_bad_rows": options.skip_bad_rows,
                    "executor": options.executor, "ray_address": options.ray_address,
                    "cpus_per_row": spec.cpus_per_row if options.executor == "ray" else None, "set": options.set,
                    "tags": options.tags, "model": options.model},
        "skipped": [{"row": b.number, "line": b.line, "error": b.error} for b in inputs.bad],
    }
    return batches.create(spec.batch_id, doc, {INPUTS_FILE: rows_given} if rows_given is not None else None)


async def drive(executor: Executor, jobs: list[Job], driver: Driver) -> Driver:
    await executor.run(jobs, driver)
    return driver


def open_batch(batch_id: str) -> tuple[BatchDir, dict[str, Any]]:
    batch = batches.find(batch_id)
    return batch, batch.read()


def plan_resume(batch: BatchDir, doc: dict[str, Any], options: Options, runs: Runs, *, approve_all: bool = False,
                retry_failed: bool = False) -> tuple[list[Job], Executor, Spec, dict[str, int]]:
    """The jobs left in a recorded batch, and the executor to run them (nothing started)."""
    from magent.store.tasks import Store

    options.check()
    inputs = read_inputs(Path(doc["inputs"]["path"]))
    if inputs.sha256 != doc["inputs"]["sha256"]:
        raise UsageError(f"--inputs {inputs.path} changed since batch {batch.id[:8]} started (its sha256 "
                         "differs); put the original back to resume, or start a new batch")
    skipped = {s["row"] for s in doc.get("skipped") or []}
    mapped = batch.row_tasks()
    store = Store()
    jobs: list[Job] = []
    already: Counter[str] = Counter()
    for row in inputs.rows:
        if row.number in skipped:
            continue
        task_id = mapped.get(row.number)
        status = _status(store, task_id) if task_id else None
        if status is None:
            jobs.append(Job(row=row))
        elif status == "failed" and retry_failed:
            jobs.append(Job(row=row, task_id=task_id))
        elif status in FINISHED or status == "removed" or (status == "awaiting_human" and not approve_all):
            already[status] += 1
        elif status == "awaiting_human":
            jobs.append(Job(row=row, task_id=task_id, approve=True))
        else:  # interrupted: continue it from its last checkpoint
            jobs.append(Job(row=row, task_id=task_id))
    spec = options.spec(batch.id, doc["target_path"], set=dict(doc["options"].get("set") or {}),
                        tags=list(doc["options"].get("tags") or []), model=doc["options"].get("model"))
    executor = executor_for(options.executor, spec, runs)
    executor.check()
    return jobs, executor, spec, dict(already)


def executor_for(name: str, spec: Spec, runs: Runs) -> Executor:
    if name == "local":
        from magent.batching.local import LocalExecutor

        return LocalExecutor(spec, runs)
    if name == "ray":
        from magent.batching.ray import RayExecutor

        return RayExecutor(spec, runs)
    raise UsageError(f"--executor {name!r}: choose one of {', '.join(EXECUTORS)}")


def row_task(store: Any, task_id: str) -> Any:
    """The row's task as commands show it (a dead run's is interrupted), None once swept away."""
    try:
        return store.task(task_id).shown_task()
    except TaskNotFoundError:
        return None


def _status(store: Any, task_id: str) -> str:
    task = row_task(store, task_id)
    return "removed" if task is None else task.status.value
