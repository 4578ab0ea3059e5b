"""The Ray executor: rows on warm Ray actors (``pip install 'magent-runner[ray]'``).

A row runs on an actor (rayactors.py) exactly as the local executor runs it (``run_row``):
the actor writes the row's task, checkpoints and row → task line straight into
``MAGENT_HOME``, which every node must mount at the same path (a shared POSIX filesystem: see
docs/guides/batches.md). The driver keeps the queue of rows and hands the next one to an
actor as soon as one of its places is free. Ray does not retry a row: a row whose actor died
(a killed process, a lost node) is reported ``interrupted`` when its task exists, else
``not_started`` — as ``batch show`` reads it afterwards — and ``magent batch resume``
continues or starts it, so a row is never run twice as two tasks. The dead actor is
restarted by Ray and takes rows again; the other actors go on meanwhile.

The driver connects to ``--ray-address`` (else ``RAY_ADDRESS``, else a local cluster it
starts) and first checks, within a few seconds, that the address answers at all: Ray's own
connection attempts would retry for a minute. Ray's own output (its notices about dead
workers, the workers' logs) is shown only with ``--verbose``, on stderr, and without colour
unless stderr is a terminal. Rate limits (``--max-rpm``/``--max-tpm``) are kept by one small
Ray actor that every row asks before each model call.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
from collections import deque
from dataclasses import asdict
from typing import Any, Iterator

from magent.batching import rayactors
from magent.batching.executor import Executor, Job, Outcome, Report, Spec
from magent.errors import RayUnavailableError, UsageError

CONNECT_SECONDS = 3.0
RESTART_SECONDS = 120.0
"""How long a place on a dead actor waits for Ray to restart it before it takes no more rows."""


def _ray() -> Any:
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # nothing is sent anywhere
    if not sys.stderr.isatty():
        os.environ.setdefault("RAY_COLOR_PREFIX", "0")  # Ray's switch: its lines without colour codes
    try:
        import ray
    except ImportError:
        raise RayUnavailableError("--executor ray needs Ray: pip install 'magent-runner[ray]'") from None
    return ray


class RayExecutor(Executor):
    name = "ray"
    shape: rayactors.Layout | None = None

    def check(self) -> None:
        spec = self.spec
        ray = _ray()
        address = spec.ray_address or os.environ.get("RAY_ADDRESS") or None
        if address and address != "auto":
            _reachable(address)
        if not ray.is_initialized():
            try:
                ray.init(address=address, logging_level="INFO" if spec.verbose else "ERROR",
                         log_to_driver=spec.verbose, **({} if address else {"include_dashboard": False}))
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise RayUnavailableError(f"--ray-address {address}: cannot connect to Ray: "
                                          f"{str(exc).splitlines()[0]} (nothing was started)") from None
        nodes = rayactors.node_cpus(ray)
        if not any(cpus >= spec.cpus_per_row for cpus in nodes):
            raise UsageError(f"--cpus-per-row {spec.cpus_per_row:g}: no node of the Ray cluster has that many CPUs "
                             f"(the largest has {max(nodes, default=0):g}); nothing was started")
        self.shape = rayactors.layout(spec.concurrency, spec.cpus_per_row, nodes)

    @property
    def concurrency(self) -> int:
        return self.shape.concurrency if self.shape else self.spec.concurrency

    async def run(self, jobs: list[Job], report: Report) -> None:
        with _notices(self.spec.verbose):
            await self._run(jobs, report)

    async def _run(self, jobs: list[Job], report: Report) -> None:
        ray = _ray()
        spec = self.spec
        assert self.shape is not None, "check() first"
        limiter = None
        if spec.max_rpm or spec.max_tpm:
            limiter = ray.remote(rayactors.Limiter).options(num_cpus=0).remote(spec.max_rpm, spec.max_tpm)
        actors = rayactors.pool(ray, self.shape, self.runs).actors
        data = {k: (str(v) if k == "home" else v) for k, v in asdict(spec).items()}
        queue = deque(jobs)
        inflight: dict[Any, Job] = {}
        settled = asyncio.Event()

        def over() -> bool:
            return (not queue or report.stopping) and not inflight

        async def place(actor: Any) -> None:
            """One of an actor's places: the next row as soon as it is free, while rows are left."""
            restarted = False
            while queue and not report.stopping:
                if not await _alive(actor, RESTART_SECONDS if restarted else None):
                    return
                if not queue or report.stopping:
                    return
                job = queue.popleft()
                ref = actor.run.remote(data, _job_data(job), limiter)
                inflight[ref] = job
                report.started(job, job.task_id or "")
                try:
                    outcome = Outcome(**await asyncio.wrap_future(ref.future()))
                except ray.exceptions.RayError as exc:
                    restarted = True
                    outcome = _lost(spec, job, exc)
                finally:
                    del inflight[ref]
                report.finished(job, outcome)
                if over():
                    settled.set()

        places = [asyncio.ensure_future(place(actor)) for actor, rows in actors for _ in range(rows)]
        ends: list[asyncio.Future[Any]] = []
        try:
            ends += [asyncio.ensure_future(asyncio.gather(*places)), asyncio.ensure_future(settled.wait())]
            await asyncio.wait(ends, return_when=asyncio.FIRST_COMPLETED)
            if not report.stopping:
                for job in list(queue):  # every actor gone for good: these rows never started
                    report.finished(job, Outcome(row=job.row.number, lost=True, error=(
                        f"no Ray worker was left to run row {job.row.number}; `magent batch resume` starts it")))
        finally:
            for ref in list(inflight):  # stopped (Ctrl-C): the rows stop at their checkpoints
                ray.cancel(ref)
            for p in [*places, *ends]:
                p.cancel()
            await asyncio.gather(*places, *ends, return_exceptions=True)
            await _close(actors, spec.batch_id)


async def _alive(actor: Any, within: float | None) -> bool:
    """Wait for the actor to run (a new one starting, a dead one restarting); False when it
    will not (gone for good, or not back ``within`` seconds)."""
    import ray

    loop = asyncio.get_running_loop()
    deadline = None if within is None else loop.time() + within
    while deadline is None or loop.time() < deadline:
        try:
            await asyncio.wrap_future(actor.ready.remote().future())
            return True
        except ray.exceptions.ActorUnavailableError:  # restarting: ask again
            await asyncio.sleep(1.0)
        except ray.exceptions.RayError:
            return False
    return False


async def _close(actors: list[tuple[Any, int]], batch_id: str) -> None:
    """Tell every actor the batch is over (its shared MCP servers stop); a dead one is skipped."""
    calls = [asyncio.wrap_future(actor.close.remote(batch_id).future()) for actor, _ in actors]
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(asyncio.gather(*calls, return_exceptions=True), 5)


def _lost(spec: Spec, job: Job, exc: Exception) -> Outcome:
    """A row whose actor died: ``interrupted`` once its task exists (resume continues it), else
    ``not_started`` (resume starts it) — what ``batch show`` reads from the row map."""
    task_id = job.task_id or _task_of(spec, job)
    what = "continues" if task_id else "starts"
    return Outcome(row=job.row.number, lost=True, task_id=task_id,
                   error=f"the Ray worker running row {job.row.number} died ({type(exc).__name__}); "
                         f"`magent batch resume` {what} it")


@contextlib.contextmanager
def _notices(verbose: bool) -> Iterator[None]:
    """Where what Ray's driver prints of its cluster (a worker that died...) goes while rows run:
    stderr with ``--verbose``, else nowhere — magent reports the rows itself. Ray has no option
    for these lines: a thread of its own writes them to whatever ``sys.stdout`` is at that
    moment, so stdout is pointed away until the rows are over. magent's own lines (``--json``'s
    one per row) go to the stdout its caller took before (the CLI's ``View``)."""
    with contextlib.ExitStack() as stack:
        sink = sys.stderr if verbose else stack.enter_context(open(os.devnull, "w"))
        stack.enter_context(contextlib.redirect_stdout(sink))
        yield


def _reachable(address: str) -> None:
    host, _, port = address.rpartition(":")
    host = host.removeprefix("ray://") or "127.0.0.1"
    if not port.isdigit():
        raise UsageError(f"--ray-address {address!r}: expected HOST:PORT (the head node's GCS address)")
    try:
        with socket.create_connection((host, int(port)), timeout=CONNECT_SECONDS):
            pass
    except OSError as exc:
        reason = "no answer" if isinstance(exc, socket.timeout) else (exc.strerror or str(exc))
        raise RayUnavailableError(f"--ray-address {address}: cannot reach a Ray cluster there ({reason} "
                                  f"within {CONNECT_SECONDS:g}s); nothing was started") from None


def _task_of(spec: Spec, job: Job) -> str | None:
    """The task a lost row's actor had started, from the batch's row → task map."""
    from magent.paths import using_home
    from magent.store.batches import BatchDir, batches_dir

    with using_home(spec.home):
        return BatchDir(batches_dir() / spec.batch_id).row_tasks().get(job.row.number)


def _job_data(job: Job) -> dict[str, Any]:
    return {"row": asdict(job.row), "task_id": job.task_id, "approve": job.approve}
