"""The Ray executor's workers: long-lived actors, each running many rows on its own event loop.

A batch asks for ``--concurrency`` rows at once, each reserving ``--cpus-per-row`` of a CPU
(default 0.25: a model-bound row mostly waits). ``layout`` turns that into a few actors, one
per whole CPU of the cluster at most (an actor is one process, so one core), each running
its share of the rows side by side as ``magent.arun`` calls (``max_concurrency``) and
reserving their CPUs together. Actors are placed with Ray's SPREAD strategy, so a batch uses
every node.

The actors outlive a batch: ``pool`` keeps them for the next batch of the same Python session
with the same layout (the imports, the model library, the event loop stay warm). An actor
that dies is restarted by Ray (``max_restarts``); the rows it was running are not retried
(``max_task_retries=0``): the driver reports them as a dead worker's rows (ray.py).
"""

from __future__ import annotations

import asyncio
import math
import os
from dataclasses import asdict, dataclass
from typing import Any

from magent.batching.executor import Job, Runs, Spec, run_row
from magent.batching.inputs import Row

@dataclass(frozen=True)
class Layout:
    rows: tuple[int, ...]
    """Rows each actor runs at once (one number per actor)."""
    cpus_per_row: float

    @property
    def concurrency(self) -> int:
        return sum(self.rows)


def layout(concurrency: int, cpus_per_row: float, node_cpus: list[float]) -> Layout:
    """The actors for ``concurrency`` rows of ``cpus_per_row`` on nodes with ``node_cpus``:
    no more rows than the nodes hold, no more actors than whole CPUs (at least one)."""
    fits = sum(math.floor(cpus / cpus_per_row + 1e-9) for cpus in node_cpus)
    slots = min(concurrency, fits)
    actors = max(1, min(slots, int(sum(math.floor(cpus) for cpus in node_cpus))))
    base, extra = divmod(slots, actors)
    return Layout(rows=tuple(base + (1 if i < extra else 0) for i in range(actors)), cpus_per_row=cpus_per_row)


def node_cpus(ray: Any) -> list[float]:
    """CPUs of each live node of the cluster."""
    return [float(n.get("Resources", {}).get("CPU", 0.0)) for n in ray.nodes() if n.get("Alive")]


class RowRunner:
    """The actor: rows of any batch, side by side on this process's event loop. A batch's rows
    share its MCP servers here (``tools.shared``), as they do under the local executor."""

    def __init__(self, runs: Runs):
        self.runs = runs
        self.pools: dict[str, Any] = {}

    def ready(self) -> int:
        """Answered once the actor runs (its pid: tests kill it)."""
        return os.getpid()

    async def run(self, spec_data: dict[str, Any], job_data: dict[str, Any], limiter: Any) -> dict[str, Any]:
        from pathlib import Path

        from magent.llm.limits import limited
        from magent.tools.shared import SharedServers, sharing

        spec = Spec(**{**spec_data, "home": Path(spec_data["home"])})
        job = Job(row=Row(**job_data["row"]), task_id=job_data["task_id"], approve=job_data["approve"])
        pool = self.pools.setdefault(spec.batch_id, SharedServers())
        with sharing(pool), limited(_RemoteLimits(limiter) if limiter is not None else None):
            return asdict(await run_row(spec, job, self.runs))

    async def close(self, batch_id: str) -> None:
        """The batch is over: stop the MCP servers its rows shared."""
        pool = self.pools.pop(batch_id, None)
        if pool is not None:
            await pool.close()


@dataclass
class Pool:
    key: tuple[Any, ...]
    actors: list[tuple[Any, int]]
    """Each actor's handle and the rows it runs at once."""


_pool: Pool | None = None


def pool(ray: Any, shape: Layout, runs: Runs) -> Pool:
    """This session's actors for ``shape``: the last batch's when it had the same shape and
    cluster, else new ones (the old ones are ended)."""
    global _pool
    context = ray.get_runtime_context()
    key = (context.get_session_name(), context.get_job_id(), shape, runs)
    if _pool is not None and _pool.key == key:
        return _pool
    if _pool is not None and _pool.key[:2] == key[:2]:  # (after a ray.shutdown they are gone already)
        for handle, _ in _pool.actors:
            ray.kill(handle)
    remote = ray.remote(RowRunner)
    actors = [(remote.options(num_cpus=rows * shape.cpus_per_row, max_concurrency=rows, max_restarts=-1,
                              max_task_retries=0, scheduling_strategy="SPREAD").remote(runs), rows)
              for rows in shape.rows]
    _pool = Pool(key=key, actors=actors)
    return _pool


class Limiter:
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
    """``ModelLimits`` as a row on an actor sees it: every question goes to the limiter."""

    rpm = tpm = 1  # (set: the wrapper applies)

    def __init__(self, actor: Any):
        self.actor = actor

    async def acquire(self) -> None:
        await asyncio.wrap_future(self.actor.acquire.remote().future())

    def used(self, tokens: int) -> None:
        self.actor.used.remote(tokens)

    def hold(self, seconds: float) -> None:
        self.actor.hold.remote(seconds)
