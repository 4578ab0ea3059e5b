"""What ``magent batch`` prints while rows run, and the CSV of ``batch results --csv``."""

from __future__ import annotations

import json
import sys
import time
from typing import TYPE_CHECKING, Any, Callable

from magent.cli.collector import running as collect_as_usual
from magent.money import cost_phrase

if TYPE_CHECKING:
    from magent.api.batching import BatchProgress, BatchRow, BatchRun, BatchStart

ORDER = ("completed", "failed", "awaiting_human", "interrupted", "running", "cancelled", "not_started",
         "skipped", "removed")
CSV_COLUMNS = ("row", "task", "task_id", "status", "success", "output", "error_type", "error_message",
               "tokens_input", "tokens_output", "tokens_total", "cost_estimate", "model_calls", "steps",
               "started_at", "finished_at")


def describe_counts(counts: dict[str, int]) -> str:
    """``3 completed, 1 paused`` (statuses in a fixed order)."""
    keys = [k for k in ORDER if counts.get(k)] + sorted(k for k in counts if k not in ORDER and counts[k])
    return ", ".join(f"{counts[k]} {k.replace('awaiting_human', 'paused').replace('_', ' ')}" for k in keys)


def csv_row(item: dict[str, Any]) -> dict[str, Any]:
    """A ``batch results --csv`` row from a row's JSON line."""
    usage = item.get("token_usage") or {}
    error = item.get("error") or {}
    output = item.get("output")
    return {"row": item["row"], "task": item.get("task") or "", "task_id": item.get("task_id") or "",
            "status": item.get("status"), "success": item.get("success"),
            "output": output if isinstance(output, str) or output is None else repr(output),
            "error_type": error.get("type") or "", "error_message": error.get("message") or "",
            "tokens_input": usage.get("input", ""), "tokens_output": usage.get("output", ""),
            "tokens_total": usage.get("total", ""), "cost_estimate": item.get("cost_estimate"),
            "model_calls": _answered(item.get("model_calls")), "steps": item.get("steps", ""),
            "started_at": item.get("started_at") or "", "finished_at": item.get("finished_at") or ""}


def _answered(calls: Any) -> Any:
    """The count of answered model calls, from a result's list of them."""
    if isinstance(calls, list):
        return sum(1 for call in calls if isinstance(call, dict) and not call.get("error"))
    return "" if calls is None else calls


class View:
    """Follows a batch call through its ``on_start`` and ``on_progress``.

    It writes to the stdout it finds when made: while Ray's rows run, ``sys.stdout`` is where
    Ray's own notices go (stderr or nowhere), and none of them may join ``--json``'s lines."""

    def __init__(self, *, json_out: bool, on_start: "Callable[[BatchStart], None] | None" = None):
        self.json_out = json_out
        self.out = sys.stdout
        self.on_start = on_start
        self.began = time.monotonic()
        self.batch_id: str | None = None
        self.already: dict[str, int] = {}
        self.last: BatchProgress | None = None
        self.progress: Any = None
        self.bar: Any = None

    def begin(self, start: "BatchStart") -> None:
        self.batch_id, self.already = start.batch_id, dict(start.already)
        if self.on_start is not None:
            self.on_start(start)
        if self.json_out or not self.out.isatty():
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        class TwoLines(Progress):
            """The bar, and under it the counts (one line each fits 80 columns)."""

            def get_renderables(self):  # type: ignore[no-untyped-def]
                yield self.make_tasks_table(self.tasks)
                for task in self.tasks:
                    yield "  " + task.fields.get("stats", "")

        self.progress = TwoLines(TextColumn("[bold]batch {task.fields[short]}"), BarColumn(bar_width=30),
                                 MofNCompleteColumn(), TextColumn("rows, ETA"), TimeRemainingColumn(),
                                 transient=False, console=Console(file=self.out))
        self.bar = self.progress.add_task("rows", total=start.rows, short=start.batch_id[:8], stats="")
        self.progress.start()

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None

    def change(self, progress: "BatchProgress") -> None:
        collect_as_usual()  # a row has started: collect as Python does, or the rows' garbage piles up
        self.last = progress
        row = progress.finished
        if row is not None:
            if self.json_out:
                self.out.write(json.dumps(row.as_dict(), ensure_ascii=False) + "\n")
                self.out.flush()
            elif self.progress is None:
                print(self._line(row), file=self.out, flush=True)
        if self.progress is not None:
            self.progress.update(self.bar, completed=progress.done, stats=self.stats(progress))

    def stats(self, p: "BatchProgress") -> str:
        c = p.counts
        elapsed = max(time.monotonic() - self.began, 1e-6)
        parts = [f"done {c.get('completed', 0)}", f"failed {c.get('failed', 0)}",
                 f"paused {c.get('awaiting_human', 0)}", f"running {p.running}"]
        if c.get("interrupted"):
            parts.append(f"interrupted {c['interrupted']}")
        parts += [f"{p.tokens:,} tokens", cost_phrase(p.cost, p.unpriced), f"{p.done / elapsed:.1f} rows/s"]
        return " · ".join(parts)

    @staticmethod
    def _line(row: "BatchRow") -> str:
        line = row.as_dict()
        words = [f"row {row.row}", row.status.replace("awaiting_human", "paused")]
        if row.task_id:
            words.append(f"task {row.task_id[:8]}")
        error = (line.get("error") or {}).get("message")
        if error and row.status != "completed":
            words.append(str(error).splitlines()[0][:160])
        return "  ".join(words)

    def summary(self, done: "BatchRun | None" = None) -> None:
        """The closing lines (stderr with --json, so stdout stays one line per row); without a
        finished call (an interrupted batch), the figures of the last row that stopped."""
        out = sys.stderr if self.json_out else self.out
        batch = (self.batch_id or "")[:8]
        elapsed = time.monotonic() - self.began
        if done is not None:
            counts, tokens, cost, stopped_by = done.counts, done.tokens, done.cost, done.stopped_by
            unpriced = done.unpriced
        else:
            counts = dict(self.already)
            for key, n in (self.last.counts if self.last else {}).items():
                counts[key] = counts.get(key, 0) + n
            tokens, cost, stopped_by = ((self.last.tokens, self.last.cost, self.last.stopped_by) if self.last
                                        else (0, 0.0, None))
            unpriced = self.last.unpriced if self.last else 0
        words = describe_counts(counts)
        spent = f"{tokens:,} tokens, {cost_phrase(cost, unpriced)}" + (" in this run" if self.already else "")
        print(f"batch {batch}: {words or 'nothing to run'} in {elapsed:.1f}s ({spent})", file=out)
        if stopped_by:
            print(f"batch {batch}: {stopped_by}; `magent batch resume {batch}` starts the rest", file=out)
        paused = counts.get("awaiting_human", 0)
        if paused:
            print(f"{paused} row(s) wait for a person: `magent batch show {batch}` lists them; answer "
                  f"each with `magent resume TASK --approve`, or all with `magent batch resume "
                  f"{batch} --approve-all`", file=out)
        left = [words for status, words in (("interrupted", "interrupted rows continue"),
                                            ("not_started", "rows not started start")) if counts.get(status)]
        if left:
            print(f"{', and '.join(left)} with `magent batch resume {batch}`", file=out)
