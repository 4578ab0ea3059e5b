"""Batches from Python: ``magent.batch`` / ``abatch`` run a workflow over many inputs (each
row an ordinary task tagged ``batch:ID``), ``resume_batch`` / ``aresume_batch`` continue one,
and ``batches``, ``batch_details`` and ``batch_results`` read them back — what ``magent batch``,
``batch resume``, ``batch list``, ``batch show`` and ``batch results`` do.

Everything is checked before anything is written: the rows (a malformed one stops the batch
unless ``skip_bad_rows``), the values the workflow needs, the target, the executor. One process
drives a batch at a time (``TaskLockedError`` names the other); a cancelled ``abatch`` leaves
its running rows checkpointed, and ``resume_batch`` runs what is left.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Union

from magent import paths
from magent.api.definition import Definition, PathLike
from magent.batching.reading import Summary
from magent.errors import UsageError

if TYPE_CHECKING:
    from magent.api.result import AgentResult
    from magent.batching.executor import Executor, Job, Outcome, Runs
    from magent.batching.runner import Options

BatchSummary = Summary
"""One batch as ``batches`` lists it: ``id``, ``created_at``, ``target``, ``rows``, ``counts`` (rows by
status), ``tokens``, ``cost``, ``running`` and ``to_json()`` (an item of ``batch list --json``)."""
Inputs = Union[PathLike, Iterable[Mapping[str, Any]]]
"""A JSON Lines or CSV file, or the rows themselves: ``[{"task": "...", "set": {...}}, ...]``."""


@dataclass(frozen=True)
class SkippedRow:
    """An input row that could not run (``skip_bad_rows``)."""

    row: int
    """Its number (1 is the first row)."""
    line: int
    """Its line in the inputs file."""
    error: str
    """What is wrong with it, naming the file and line."""


@dataclass(frozen=True)
class BatchStart:
    """What ``on_start`` is told once the batch is recorded and locked, before any row runs."""

    batch_id: str
    rows: int
    """Rows this call runs."""
    executor: str
    """``local`` or ``ray``."""
    concurrency: int
    """Rows run at once: ``concurrency``, or fewer when the Ray cluster holds fewer
    (its CPUs over ``cpus_per_row``)."""
    skipped: list[SkippedRow] = field(default_factory=list)
    """Bad rows left out (a new batch with ``skip_bad_rows``)."""
    already: dict[str, int] = field(default_factory=dict)
    """Rows a resume does not run, by status (finished, or paused without ``approve_all``)."""


@dataclass(frozen=True)
class BatchRow:
    """One input row: its task's ``AgentResult``, or why it has none."""

    row: int
    """Its number in the inputs (1 is the first row)."""
    status: str
    """Its task's status (``completed``, ``failed``, ``awaiting_human``, ``interrupted``...), or
    ``not_started``, ``skipped`` (a bad row), ``removed`` (its task was swept away)."""
    task_id: str | None
    result: "AgentResult | None"
    """Its task's result; None when the row has no task, or its run was lost (a worker that died)."""
    error: str | None = None
    """Why it did not complete, when it did not."""
    task: str | None = None
    """The input's task text (``batch_results``; None when the inputs file changed or moved)."""
    doc: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def as_dict(self) -> dict[str, Any]:
        """The row's JSON line: its ``AgentResult`` with ``row`` (``magent batch --json`` and
        ``batch results``)."""
        return dict(self.doc)


@dataclass(frozen=True)
class BatchProgress:
    """What ``on_progress`` is told as a row's task starts (``finished`` None) and as it stops."""

    row: int
    finished: BatchRow | None
    done: int
    """Rows stopped so far in this call."""
    running: int
    counts: dict[str, int]
    """Rows stopped so far in this call, by status."""
    tokens: int
    cost: float
    stopped_by: str | None = None
    """Why no more rows will be started (``max_failures``), once that happened."""
    unpriced: int = 0
    """Model calls without a known price so far: ``cost`` is a lower bound (or unknown)."""


@dataclass(frozen=True)
class BatchRun:
    """How a batch call ended (``magent.batch`` / ``resume_batch``)."""

    batch_id: str
    rows: list[BatchRow]
    """The rows this call ran, in input order (each with its ``AgentResult``)."""
    counts: dict[str, int]
    """Every row of the batch by status: those run now and those a resume left (``already``)."""
    already: dict[str, int]
    stopped_by: str | None
    """Why no more rows were started (``max_failures``), or None."""
    tokens: int
    cost: float
    skipped: list[SkippedRow] = field(default_factory=list)
    unpriced: int = 0
    """Model calls without a known price: ``cost`` is a lower bound (or unknown)."""

    @property
    def results(self) -> list["AgentResult"]:
        """The ``AgentResult`` of every row run that has one, in input order."""
        return [r.result for r in self.rows if r.result is not None]


StartHandler = Callable[[BatchStart], None]
ProgressHandler = Callable[[BatchProgress], None]


def batch(target: Union[PathLike, Definition], inputs: Inputs, *, concurrency: int = 8,
          executor: str = "local", ray_address: str | None = None, cpus_per_row: float | None = None,
          verbose: bool = False, max_rpm: int | None = None,
          max_tpm: int | None = None, max_failures: int | None = None, skip_bad_rows: bool = False,
          set: Mapping[str, Any] | None = None, tags: Iterable[str] | None = None,
          model: str | None = None, home: PathLike | None = None,
          on_start: StartHandler | None = None, on_progress: ProgressHandler | None = None) -> BatchRun:
    """Run ``target`` on every row of ``inputs``, ``concurrency`` rows at once, and wait::

        done = magent.batch("examples/workflows/triage.yaml", "examples/batches/tickets.jsonl")
        for row in done.rows:
            print(row.row, row.status, row.result.output if row.result else row.error)

    ``inputs`` is a JSON Lines or CSV file, or the rows (``{"task": ..., "set": {...}}``; a
    given list is kept in the batch's folder so it can be resumed). ``set`` applies to every
    row (a row's own value wins), ``tags`` and ``model`` as for ``magent.run``; ``max_rpm``
    / ``max_tpm`` limit model calls and tokens a minute over all rows; ``max_failures`` stops
    starting rows after that many failed; ``executor="ray"`` runs rows on a Ray cluster, each
    reserving ``cpus_per_row`` of a CPU (default 0.25), on actors the next batch of this session
    reuses; ``verbose`` shows Ray's own output (on stderr). While Ray's rows run, ``sys.stdout``
    is where Ray prints its notices (stderr with ``verbose``, else nowhere): an ``on_progress``
    that prints should write to a stream it took before the call.

    Bad input (a malformed row without ``skip_bad_rows``, a bad option, a target that does not
    load, a Ray address that does not answer) raises a ``MagentError`` before anything is
    written.
    """
    from magent.api.runs import run_sync

    return run_sync(abatch(target, inputs, concurrency=concurrency, executor=executor, ray_address=ray_address,
                           cpus_per_row=cpus_per_row, verbose=verbose, max_rpm=max_rpm, max_tpm=max_tpm, max_failures=max_failures,
                           skip_bad_rows=skip_bad_rows, set=set, tags=tags, model=model, home=home,
                           on_start=on_start, on_progress=on_progress), "batch")


async def abatch(target: Union[PathLike, Definition], inputs: Inputs, *, concurrency: int = 8,
                 executor: str = "local", ray_address: str | None = None, cpus_per_row: float | None = None,
                 verbose: bool = False, max_rpm: int | None = None,
                 max_tpm: int | None = None, max_failures: int | None = None, skip_bad_rows: bool = False,
                 set: Mapping[str, Any] | None = None, tags: Iterable[str] | None = None,
                 model: str | None = None, home: PathLike | None = None,
                 on_start: StartHandler | None = None,
                 on_progress: ProgressHandler | None = None) -> BatchRun:
    """``batch`` for asyncio. Cancelling it stops the batch: running rows are checkpointed
    and ``resume_batch`` continues them."""
    from magent.batching import runner
    from magent.batching.executor import Job
    from magent.batching.inputs import set_values
    from magent.engine.inputs import updates_from

    given = target.target if isinstance(target, Definition) else os.fspath(target)
    with paths.using_home(home):
        options = runner.Options(
            concurrency=concurrency, max_rpm=max_rpm, max_tpm=max_tpm, max_failures=max_failures,
            skip_bad_rows=skip_bad_rows, executor=executor, ray_address=ray_address,
            cpus_per_row=cpus_per_row, verbose=verbose, set=set_values(updates_from(set)) if set is not None else {},
            tags=list(tags or []), model=model)
        with _rows_file(inputs) as (path, data):
            rows_in, rows, execu, spec = runner.prepare(given, path, options, _runs())
            batch_dir = runner.record(rows_in, given, spec, options, rows_given=data)
        skipped = [SkippedRow(b.number, b.line, b.error) for b in rows_in.bad]
        start = BatchStart(batch_id=batch_dir.id, rows=len(rows), executor=execu.name,
                           concurrency=execu.concurrency, skipped=skipped)
        return await _drive(batch_dir, execu, [Job(row=r) for r in rows], options, start, on_start,
                            on_progress)


def resume_batch(batch_id: str, *, approve_all: bool = False, retry_failed: bool = False,
                 concurrency: int = 8, executor: str = "local", ray_address: str | None = None,
                 cpus_per_row: float | None = None, verbose: bool = False, max_rpm: int | None = None,
                 max_tpm: int | None = None, max_failures: int | None = None,
                 home: PathLike | None = None, on_start: StartHandler | None = None,
                 on_progress: ProgressHandler | None = None) -> BatchRun:
    """Continue a batch after a crash, a cancel or ``max_failures`` (any id or unique prefix)::

        more = magent.resume_batch(done.batch_id, approve_all=True)

    Rows whose task finished are not run again, stopped rows continue from their checkpoints,
    rows never started start. Paused rows stay paused unless ``approve_all``; failed rows are
    continued only with ``retry_failed``. An unknown id is a ``BatchNotFoundError``; an inputs
    file changed since the batch started a ``UsageError``.
    """
    from magent.api.runs import run_sync

    return run_sync(aresume_batch(batch_id, approve_all=approve_all, retry_failed=retry_failed,
                                  concurrency=concurrency, executor=executor, ray_address=ray_address,
                                  cpus_per_row=cpus_per_row, verbose=verbose, max_rpm=max_rpm, max_tpm=max_tpm, max_failures=max_failures, home=home,
                                  on_start=on_start, on_progress=on_progress), "resume_batch")


async def aresume_batch(batch_id: str, *, approve_all: bool = False, retry_failed: bool = False,
                        concurrency: int = 8, executor: str = "local", ray_address: str | None = None,
                        cpus_per_row: float | None = None, verbose: bool = False, max_rpm: int | None = None, max_tpm: int | None = None,
                        max_failures: int | None = None, home: PathLike | None = None,
                        on_start: StartHandler | None = None,
                        on_progress: ProgressHandler | None = None) -> BatchRun:
    """``resume_batch`` for asyncio."""
    from magent.batching import runner

    with paths.using_home(home):
        batch_dir, doc = runner.open_batch(batch_id)
        options = runner.Options(concurrency=concurrency, max_rpm=max_rpm, max_tpm=max_tpm,
                                 max_failures=max_failures, executor=executor, ray_address=ray_address,
                                 cpus_per_row=cpus_per_row, verbose=verbose)
        lock = batch_dir.lock().acquire()
        try:
            jobs, execu, _, already = runner.plan_resume(batch_dir, doc, options, _runs(),
                                                         approve_all=approve_all, retry_failed=retry_failed)
        except BaseException:
            lock.release()
            raise
        start = BatchStart(batch_id=batch_dir.id, rows=len(jobs), executor=execu.name,
                           concurrency=execu.concurrency, already=already)
        return await _drive(batch_dir, execu, jobs, options, start, on_start, on_progress, lock=lock)


def batches(*, home: PathLike | None = None) -> list[BatchSummary]:
    """Every batch, oldest first, with its rows counted by status (``magent batch list``)::

        for b in magent.batches():
            print(b.id[:8], b.rows, b.counts, b.running)

    Each has ``id``, ``created_at``, ``target``, ``rows``, ``counts``, ``tokens``, ``cost``,
    ``running`` (a process drives it now) and ``to_json()`` (the ``--json`` object).
    """
    from magent.batching.reading import summaries

    with paths.using_home(home):
        return summaries()


@dataclass(frozen=True)
class BatchDetails:
    """One batch as ``magent batch show`` shows it."""

    summary: BatchSummary
    """Its options, counts and usage (as ``batches`` gives them)."""
    not_completed: list[BatchRow]
    """Its rows that did not complete, in input order (paused ones with their ``pause``)."""

    def as_dict(self) -> dict[str, Any]:
        """What ``magent batch show ID --json`` prints."""
        return {**self.summary.to_json(), "rows_not_completed": [
            {k: r.doc.get(k) for k in ("row", "task_id", "status", "error", "pause")} for r in self.not_completed]}


def batch_details(batch_id: str, *, home: PathLike | None = None) -> BatchDetails:
    """A batch (any id or unique prefix) with the rows that did not complete::

        for row in magent.batch_details("7c1e").not_completed:
            print(row.row, row.status, row.task_id)

    An unknown id is a ``BatchNotFoundError``.
    """
    from magent.api.result import result_of
    from magent.batching.reading import results, summary
    from magent.store.batches import find

    with paths.using_home(home):
        found = find(batch_id)
        rows = [_row_of(r) for r in results(found, result_of)]
        return BatchDetails(summary=summary(found), not_completed=[r for r in rows if r.status != "completed"])


def batch_results(batch_id: str, *, home: PathLike | None = None) -> list[BatchRow]:
    """One ``BatchRow`` per input row, in input order, as its task stands now (``magent batch
    results``)::

        outputs = {r.row: r.result.output for r in magent.batch_results("7c1e") if r.result}

    ``as_dict()`` of each is the line ``batch results --json`` prints. An unknown id is a
    ``BatchNotFoundError``.
    """
    from magent.api.result import result_of
    from magent.batching.reading import results
    from magent.store.batches import find

    with paths.using_home(home):
        return [_row_of(r) for r in results(find(batch_id), result_of)]


def _runs() -> "Runs":
    """What a batch runs: this API's own ``load``, ``arun`` and ``aresume``."""
    from magent.api.definition import load
    from magent.api.runs import aresume, arun
    from magent.batching.executor import Runs

    return Runs(load=load, start=arun, resume=aresume)


# ------------------------------------------------------------------------------------------

async def _drive(batch_dir: Any, execu: "Executor", jobs: list["Job"], options: "Options", start: BatchStart,
                 on_start: StartHandler | None, on_progress: ProgressHandler | None, lock: Any = None) -> BatchRun:
    from magent.batching.runner import Driver, drive

    lock = lock or batch_dir.lock().acquire()
    try:
        if on_start is not None:
            on_start(start)
        finished: dict[int, BatchRow] = {}

        def change(driver: "Driver", job: "Job", outcome: "Outcome | None") -> None:
            row = None
            if outcome is not None:
                row = finished[job.row.number] = _outcome_row(job, outcome)
            if on_progress is not None:
                on_progress(BatchProgress(row=job.row.number, finished=row, done=driver.done,
                                          running=driver.running, counts=dict(driver.counts),
                                          tokens=driver.tokens, cost=driver.cost,
                                          stopped_by=driver.stopped_by, unpriced=driver.unpriced))

        driver = Driver(total=len(jobs), max_failures=options.max_failures, on_change=change)
        await drive(execu, jobs, driver)
    finally:
        lock.release()
    counts = dict(start.already)
    for key, n in driver.counts.items():
        counts[key] = counts.get(key, 0) + n
    return BatchRun(batch_id=batch_dir.id, rows=[finished[n] for n in sorted(finished)], counts=counts,
                    already=dict(start.already), stopped_by=driver.stopped_by, tokens=driver.tokens,
                    cost=driver.cost, skipped=list(start.skipped), unpriced=driver.unpriced)


def _outcome_row(job: "Job", outcome: "Outcome") -> BatchRow:
    """A row as it stopped: the ``--json`` line is its ``AgentResult`` with ``row`` (or why it
    could not run)."""
    if outcome.result is not None:
        return _row_of({**outcome.result, "row": job.row.number})
    kind = "interrupted" if outcome.lost else "error"
    return BatchRow(row=job.row.number, status=outcome.status, task_id=outcome.task_id or job.task_id, result=None,
                    error=outcome.error, doc={
                        "type": "result", "row": job.row.number, "task_id": outcome.task_id or job.task_id,
                        "status": outcome.status, "success": False,
                        "error": {"type": kind, "message": outcome.error or ""}})


def _row_of(doc: dict[str, Any]) -> BatchRow:
    """A row from its JSON: an ``AgentResult`` with ``row`` (and ``task``), or a row without one."""
    from magent.api.result import AgentResult

    result = None
    if "provenance" in doc:
        result = AgentResult.model_validate({k: v for k, v in doc.items() if k not in ("row", "task")})
    error = (doc.get("error") or {}).get("message") if isinstance(doc.get("error"), dict) else None
    return BatchRow(row=int(doc["row"]), status=str(doc.get("status")), task_id=doc.get("task_id"),
                    result=result, error=error, task=doc.get("task"), doc=doc)


class _rows_file:
    """The inputs as a file ``prepare`` reads: the path given, or the rows written as JSON Lines
    into a scratch folder (``record`` then keeps their bytes in the batch's folder, so a resume
    reads the same rows). Row N is line N, so a message naming ``inputs.jsonl:N`` names row N."""

    def __init__(self, inputs: Inputs):
        self.inputs = inputs
        self.scratch: tempfile.TemporaryDirectory[str] | None = None

    def __enter__(self) -> tuple[Path, bytes | None]:
        if isinstance(self.inputs, (str, os.PathLike)):
            return Path(os.fspath(self.inputs)), None
        if isinstance(self.inputs, Mapping) or not isinstance(self.inputs, Iterable):
            raise UsageError(f"inputs= takes a file or a list of rows, not {type(self.inputs).__name__}")
        lines = []
        for number, row in enumerate(self.inputs, 1):
            if not isinstance(row, Mapping):
                raise UsageError(f"inputs row {number}: a row is a mapping with a \"task\", "
                                 f"not {type(row).__name__}")
            try:
                lines.append(json.dumps(dict(row), ensure_ascii=False) + "\n")
            except (TypeError, ValueError) as exc:
                raise UsageError(f"inputs row {number}: cannot be written as JSON ({exc})") from None
        if not lines:
            raise UsageError("inputs= has no rows")
        data = "".join(lines).encode()
        self.scratch = tempfile.TemporaryDirectory(prefix="magent-rows-")
        path = Path(self.scratch.name) / "inputs.jsonl"
        path.write_bytes(data)
        return path, data

    def __exit__(self, *exc: object) -> None:
        if self.scratch is not None:
            self.scratch.cleanup()

