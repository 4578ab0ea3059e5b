"""The Ray executor: each row a Ray task (``pip install 'magent-runner[ray]'``).

A row runs in a Ray worker process exactly as the local executor runs it (``run_row``):
the worker writes the row's task, checkpoints and row → task line straight into
``MAGENT_HOME``, which every node must mount at the same path (a shared POSIX
filesystem: see docs/guides/batches.md). Ray does not retry a row (``max_retries=0``): a row whose
worker died is reported ``interrupted`` and ``magent batch resume`` continues its task from
its last checkpoint, so a row is never run twice as two tasks.

The driver connects to ``--ray-address`` (else ``RAY_ADDRESS``, else a local cluster it
starts) and first checks, within a few seconds, that the address answers at all: Ray's own
connection attempts would retry for a minute. Rate limits (``--max-rpm``/``--max-tpm``) are
kept by one small Ray actor that every row asks before each model call. Each row starts
its own MCP server processes (rows share them only under the local executor).
"""

from __future__ import annotations

import asyncio
import os
import socket
from dataclasses import asdict
from typing import Any

from magent.batching.executor import Executor, Job, Outcome, Report, Runs, Spec, run_row
from magent.batching.inputs import Row
from magent.errors import RayUnavailableError, UsageError

CONNECT_SECONDS = 3.0


def _ray() -> Any:
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # nothing is sent anywhere
    try:
        import ray
    except ImportError:
        raise RayUnavailableError("--executor ray needs Ray: pip install 'magent-runner[ray]'") from None
    return ray


class RayExecutor(Executor):
    name = "ray"

    def check(self) -> None:
        ray = _ray()
        address = self.spec.ray_address or os.environ.get("RAY_ADDRESS") or None
        if address and address != "auto":
            _reachable(address)
        _notices_to_stderr(ray)
        if not ray.is_initialized():
            try:
                ray.init(address=address, logging_level="ERROR", log_to_driver=False,
                         **({} if address else {"include_dashboard": False}))
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise RayUnavailableError(f"--ray-address {address}: cannot connect to Ray: "
                                          f"{str(exc).splitlines()[0]} (nothing was started)") from None

    async def run(self, jobs: list[Job], report: Report) -> None:
        ray = _ray()
        spec = self.spec
        limiter = None
        if spec.max_rpm or spec.max_tpm:
            limiter = ray.remote(_Limiter).options(num_cpus=0).remote(spec.max_rpm, spec.max_tpm)
        remote = ray.remote(_row_in_worker).options(max_retries=0, num_cpus=1)
        data = {k: (str(v) if k == "home" else v) for k, v in asdict(spec).items()}
        slots = asyncio.Semaphore(max(1, spec.concurrency))
        inflight: list[Any] = []

        async def one(job: Job) -> None:
            async with slots:
                if report.stopping:
                    return
                ref = remote.remote(data, _job_data(job), limiter, self.runs)
                inflight.append(ref)
                report.started(job, job.task_id or "")
                try:
                    result = await asyncio.wrap_future(ref.future())
                    outcome = Outcome(**result)
                except ray.exceptions.RayError as exc:
                    outcome = Outcome(row=job.row.number, lost=True, task_id=job.task_id or _task_of(spec, job),
                                      error=f"the Ray worker running row {job.row.number} died "
                                            f"({type(exc).__name__}); `magent batch resume` continues it")
                finally:
                    inflight.remove(ref)
                report.finished(job, outcome)

        try:
            await asyncio.gather(*(one(job) for job in jobs))
        finally:
            for ref in list(inflight):  # stopped (Ctrl-C): the rows stop at their checkpoints
                ray.cancel(ref)


def _notices_to_stderr(ray: Any) -> None:
    """Ray's driver prints what its cluster reports (a worker that died...) on stdout, where
    ``--json`` keeps one result line per row: send those notices to stderr instead. (A private
    function of Ray's, looked up by name at each call; without it nothing changes.)"""
    module = getattr(getattr(ray, "_private", None), "worker", None)
    original = getattr(module, "print_to_stdstream", None)
    if original is None or getattr(original, "magent", False):
        return

    def to_stderr(data: dict[str, Any], ignore_prefix: bool) -> None:
        original({**data, "is_err": True}, ignore_prefix)

    to_stderr.magent = True  # type: ignore[attr-defined]
    module.print_to_stdstream = to_stderr


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
    """The task a lost row's worker had started, from the batch's row → task map."""
    from magent.paths import using_home
    from magent.store.batches import BatchDir, batches_dir

    with using_home(spec.home):
        return BatchDir(batches_dir() / spec.batch_id).row_tasks().get(job.row.number)


def _job_data(job: Job) -> dict[str, Any]:
    return {"row": asdict(job.row), "task_id": job.task_id, "approve": job.approve}


def _row_in_worker(spec_data: dict[str, Any], job_data: dict[str, Any], limiter: Any, runs: Runs) -> dict[str, Any]:
    """What a Ray worker runs: one row, in an event loop of its own."""
    from pathlib import Path

    from magent.llm.limits import limited

    spec = Spec(**{**spec_data, "home": Path(spec_data["home"])})
    job = Job(row=Row(**job_data["row"]), task_id=job_data["task_id"], approve=job_data["approve"])
    shared = _RemoteLimits(limiter) if limiter is not None else None

    async def go() -> Outcome:
        with limited(shared):
            return await run_row(spec, job, runs)

    return asdict(asyncio.run(go()))


class _Limiter:
    """The batch's rate limits, in one Ray actor every row asks."""

    def __init__(self, rpm: int | None, tpm: int | None):
        from magent.llm.limits import ModelLimits

        self.limits = ModelLimits(rpm=rpm, tpm=tpm)

    async def acquire(self) -> None:
        await self.limits.acquire()

    def used(self, tokens: int) -> None:
        self.limits.used(tokens)

    def hold(self, seconds: float) -> None:
        self.limits.hold(seconds)


class _RemoteLimits:
    """``ModelLimits`` as a row on a worker sees it: every question goes to the actor."""

    rpm = tpm = 1  # (set: the wrapper applies)

    def __init__(self, actor: Any):
        self.actor = actor

    async def acquire(self) -> None:
        await asyncio.wrap_future(self.actor.acquire.remote().future())

    def used(self, tokens: int) -> None:
        self.actor.used.remote(tokens)

    def hold(self, seconds: float) -> None:
        self.actor.hold.remote(seconds)
