"""What ``magent batch`` prints while rows run: a rich progress bar in a terminal, a line per
finished row into a pipe or a file, or with ``--json`` one result line per row."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from magent.batch.executor import Job, Outcome
from magent.batch.runner import Driver


def row_json(job: Job, outcome: Outcome) -> dict[str, Any]:
    """The ``--json`` line of a row: its ``AgentResult`` with ``row`` (or why it could not run)."""
    if outcome.result is not None:
        return {**outcome.result, "row": job.row.number}
    kind = "interrupted" if outcome.lost else "error"
    return {"type": "result", "row": job.row.number, "task_id": outcome.task_id or job.task_id,
            "status": outcome.status,
            "success": False, "error": {"type": kind, "message": outcome.error or ""}}


ORDER = ("completed", "failed", "awaiting_human", "interrupted", "running", "cancelled", "not_started",
         "skipped", "removed")


def describe_counts(counts: dict[str, int]) -> str:
    """``3 completed, 1 paused`` (statuses in a fixed order)."""
    keys = [k for k in ORDER if counts.get(k)] + sorted(k for k in counts if k not in ORDER and counts[k])
    return ", ".join(f"{counts[k]} {k.replace('awaiting_human', 'paused').replace('_', ' ')}" for k in keys)


class View:
    def __init__(self, total: int, *, json_out: bool, batch_id: str):
        self.total = total
        self.json_out = json_out
        self.batch_id = batch_id
        self.began = time.monotonic()
        self.progress: Any = None
        self.bar: Any = None
        if not json_out and sys.stdout.isatty():
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeRemainingColumn)

            class TwoLines(Progress):
                """The bar, and under it the counts (one line each fits 80 columns)."""

                def get_renderables(self):  # type: ignore[no-untyped-def]
                    yield self.make_tasks_table(self.tasks)
                    for task in self.tasks:
                        yield "  " + task.fields.get("stats", "")

            self.progress = TwoLines(TextColumn("[bold]batch {task.fields[short]}"), BarColumn(bar_width=30),
                                     MofNCompleteColumn(), TextColumn("rows, ETA"), TimeRemainingColumn(),
                                     transient=False)
            self.bar = self.progress.add_task("rows", total=total, short=batch_id[:8], stats="")

    def __enter__(self) -> "View":
        if self.progress is not None:
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()

    def change(self, driver: Driver, job: Job, outcome: Outcome | None) -> None:
        if outcome is not None:
            if self.json_out:
                sys.stdout.write(json.dumps(row_json(job, outcome), ensure_ascii=False) + "\n")
                sys.stdout.flush()
            elif self.progress is None:
                print(self._line(job, outcome), flush=True)
        if self.progress is not None:
            self.progress.update(self.bar, completed=driver.done, stats=self.stats(driver))

    def stats(self, driver: Driver) -> str:
        c = driver.counts
        elapsed = max(time.monotonic() - self.began, 1e-6)
        parts = [f"done {c.get('completed', 0)}", f"failed {c.get('failed', 0)}",
                 f"paused {c.get('awaiting_human', 0)}", f"running {driver.running}"]
        if c.get("interrupted"):
            parts.append(f"interrupted {c['interrupted']}")
        parts += [f"{driver.tokens:,} tokens", f"${driver.cost:.4f}", f"{driver.done / elapsed:.1f} rows/s"]
        return " · ".join(parts)

    @staticmethod
    def _line(job: Job, outcome: Outcome) -> str:
        result = outcome.result or {}
        task = result.get("task_id") or outcome.task_id or job.task_id or ""
        words = [f"row {job.row.number}", outcome.status.replace("awaiting_human", "paused")]
        if task:
            words.append(f"task {task[:8]}")
        error = (result.get("error") or {}).get("message") if result else outcome.error
        if error and outcome.status != "completed":
            words.append(str(error).splitlines()[0][:160])
        return "  ".join(words)

    def summary(self, driver: Driver, already: dict[str, int] | None = None) -> None:
        """The closing lines (stderr with --json, so stdout stays one line per row)."""
        out = sys.stderr if self.json_out else sys.stdout
        elapsed = time.monotonic() - self.began
        counts = dict(already or {})
        for key, n in driver.counts.items():
            counts[key] = counts.get(key, 0) + n
        words = describe_counts(counts)
        print(f"batch {self.batch_id[:8]}: {words or 'nothing to run'} in {elapsed:.1f}s "
              f"({driver.tokens:,} tokens, ${driver.cost:.4f})", file=out)
        if driver.stopped_by:
            print(f"batch {self.batch_id[:8]}: {driver.stopped_by}; `magent batch resume {self.batch_id[:8]}` "
                  "starts the rest", file=out)
        paused = counts.get("awaiting_human", 0)
        if paused:
            print(f"{paused} row(s) wait for a person: `magent batch show {self.batch_id[:8]}` lists them; answer "
                  f"each with `magent resume TASK --approve`, or all with `magent batch resume "
                  f"{self.batch_id[:8]} --approve-all`", file=out)
        if counts.get("interrupted"):
            print(f"interrupted rows continue with `magent batch resume {self.batch_id[:8]}`", file=out)
