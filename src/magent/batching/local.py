"""The local executor (the default): rows as concurrent ``magent.arun`` calls in this process.

All rows share the process's model client, one set of MCP server processes
(``tools.shared``: servers that do not say ``shared: false``) and the batch's model rate
limits (``llm.limits``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from magent.batching.executor import Executor, Job, Report, run_row
from magent.errors import MagentError


class LocalExecutor(Executor):
    name = "local"

    async def run(self, jobs: list[Job], report: Report) -> None:
        from magent.llm.limits import ModelLimits, limited
        from magent.tools.shared import SharedServers, sharing

        spec = self.spec
        pool = SharedServers()
        limits = ModelLimits(rpm=spec.max_rpm, tpm=spec.max_tpm)
        pending = iter(jobs)
        target = self.loaded_target()

        async def worker() -> None:
            for job in pending:  # each worker takes the next job: rows start in order
                if report.stopping:
                    return
                outcome = await run_row(spec, job, self.runs, target=target,
                                        on_start=lambda task_id, job=job: report.started(job, task_id))
                report.finished(job, outcome)

        with sharing(pool), limited(limits):
            workers = [asyncio.ensure_future(worker()) for _ in range(max(1, min(spec.concurrency, len(jobs))))]
            try:
                await asyncio.gather(*workers)
            finally:
                for w in workers:
                    w.cancel()
                await asyncio.gather(*workers, return_exceptions=True)
                await asyncio.shield(pool.close())

    def loaded_target(self) -> Any:
        """The batch's workflow, loaded once for all its rows as ``magent.arun`` takes it; one that
        no longer loads is handed on as its path, for each row to say why it cannot run."""
        from magent.paths import using_home

        with using_home(self.spec.home):
            try:
                return self.runs.load(self.spec.target)
            except MagentError:
                return self.spec.target
