"""``magent batch``: one workflow over many inputs, and reading batches back."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from magent.cli.helpfmt import examples
from magent.cli.usage import CommandGroup
from magent.vocabulary import plural


class _BatchGroup(CommandGroup):
    """``magent batch TARGET ...`` is ``magent batch run TARGET ...``."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and not args[0].startswith("-") and args[0] not in self.commands:
            args = ["run", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(cls=_BatchGroup, no_args_is_help=True, help=(
    "Run a workflow over many inputs, several rows at once.\n\n"
    "Each row of a JSON Lines or CSV file is an ordinary task tagged batch:ID. "
    "Start one with: magent batch TARGET --inputs FILE"))

Concurrency = Annotated[int, typer.Option("--concurrency", "-c", metavar="N", help="Rows running at once.")]
MaxRpm = Annotated[Optional[int], typer.Option("--max-rpm", metavar="N", help="At most N model calls a minute, all rows together.")]
MaxTpm = Annotated[Optional[int], typer.Option("--max-tpm", metavar="N", help="At most N tokens a minute, all rows together.")]
MaxFailures = Annotated[Optional[int], typer.Option("--max-failures", metavar="N", help="Start no more rows once N have failed (running ones finish).")]
ExecutorOpt = Annotated[str, typer.Option("--executor", metavar="local|ray", help="Run rows in this process (local) or on Ray actors (pip install 'magent-runner[ray]').")]
RayAddress = Annotated[Optional[str], typer.Option("--ray-address", metavar="ADDR", help="Ray cluster to use (host:port); default: RAY_ADDRESS, else a local one.")]
CpusPerRow = Annotated[Optional[float], typer.Option("--cpus-per-row", metavar="CPUS", help="With --executor ray: the share of a CPU each row reserves (default 0.25, for rows that mostly wait on a model; 1 for CPU-bound rows).")]
Verbose = Annotated[bool, typer.Option("--verbose", help="Show the executor's own output (Ray's notices and its workers' logs) on stderr.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="One JSON line per row as it finishes: its AgentResult with \"row\".")]
BatchId = Annotated[str, typer.Argument(metavar="BATCH_ID", help="A batch id or unique prefix (magent batch list).")]


@app.command("run", epilog=examples(
    "magent batch triage --inputs examples/batches/tickets.jsonl",
    "magent batch triage -i tickets.csv -c 16 --max-rpm 500 --json",
    "magent batch triage -i big.jsonl --executor ray --ray-address 10.0.0.5:6379",
    "magent batch run list.yaml -i rows.csv   # a TARGET named like a command"))
def run(
    target: Annotated[str, typer.Argument(metavar="TARGET", help="Workflow or agent file, or an installed name.")],
    inputs: Annotated[Path, typer.Option("--inputs", "-i", metavar="FILE", help="JSON Lines ({\"task\": ..., \"set\": {...}}) or CSV (a task column, one column per value).")],
    concurrency: Concurrency = 8,
    max_rpm: MaxRpm = None,
    max_tpm: MaxTpm = None,
    max_failures: MaxFailures = None,
    skip_bad_rows: Annotated[bool, typer.Option("--skip-bad-rows", help="Run the good rows and record the bad ones as skipped (default: stop before starting anything).")] = False,
    set_: Annotated[Optional[list[str]], typer.Option("--set", metavar="KEY=VALUE", help="A State value for every row (a row's own value wins). Repeatable.")] = None,
    tag: Annotated[Optional[list[str]], typer.Option("--tag", metavar="TAG", help="Tag every row's task (retention's by_task keeps batches by tag). Repeatable.")] = None,
    model: Annotated[Optional[str], typer.Option("--model", metavar="MODEL", help="Use this model for every agent.")] = None,
    executor: ExecutorOpt = "local",
    ray_address: RayAddress = None,
    cpus_per_row: CpusPerRow = None,
    verbose: Verbose = False,
    json_out: JsonOpt = False,
) -> None:
    """Start a batch: TARGET on every row of FILE.

    A row is {"task": "...", "set": {"key": value}} (or "set.key"/"key" fields) in JSON
    Lines, or a CSV with a task column and one column per value. Exit 0 when every row
    completed (rows --skip-bad-rows left out aside), 1 when some failed or were cancelled
    (even if others wait), else 3 when some wait for a person; 2 on bad input (nothing
    started), 130 interrupted (magent batch resume BATCH_ID continues).
    """
    from magent.api.batching import abatch
    from magent.engine.inputs import parse_sets

    sets = parse_sets(set_ or [])

    def started(start: Any) -> None:
        if not json_out:
            print(f"batch {start.batch_id} ({plural(start.rows, 'row')}, {start.executor} executor, concurrency "
                  f"{start.concurrency}; its tasks are tagged batch:{start.batch_id})")
        for bad in start.skipped:
            print(f"skipped: {bad.error}", file=sys.stderr)
        _room(start, concurrency)

    raise typer.Exit(_drive(json_out, started, lambda view: abatch(
        target, inputs, concurrency=concurrency, max_rpm=max_rpm, max_tpm=max_tpm, max_failures=max_failures,
        skip_bad_rows=skip_bad_rows, set=sets, tags=tag or [], model=model, executor=executor,
        ray_address=ray_address, cpus_per_row=cpus_per_row, verbose=verbose, on_start=view.begin, on_progress=view.change)))


@app.command("resume", epilog=examples("magent batch resume 7c1e", "magent batch resume 7c1e --approve-all",
                                       "magent batch resume 7c1e --retry-failed --concurrency 4"))
def resume(
    batch_id: BatchId,
    approve_all: Annotated[bool, typer.Option("--approve-all", help="Approve every paused row and continue it.")] = False,
    retry_failed: Annotated[bool, typer.Option("--retry-failed", help="Continue failed rows from their last checkpoint too.")] = False,
    concurrency: Concurrency = 8,
    max_rpm: MaxRpm = None,
    max_tpm: MaxTpm = None,
    max_failures: MaxFailures = None,
    executor: ExecutorOpt = "local",
    ray_address: RayAddress = None,
    cpus_per_row: CpusPerRow = None,
    verbose: Verbose = False,
    json_out: JsonOpt = False,
) -> None:
    """Continue a batch after a crash, Ctrl-C or --max-failures.

    Finished rows are not run again, stopped rows continue from their checkpoints,
    rows never started start. Paused rows stay paused unless --approve-all (or answer
    them one by one with magent resume TASK). Exits as batch run does, counting every
    row of the batch, those it did not run again included.
    """
    from magent.api.batching import aresume_batch

    def started(start: Any) -> None:
        if not json_out:
            already = start.already
            print(f"batch {start.batch_id}: {plural(start.rows, 'row')} to run" + (
                f" ({', '.join(f'{n} {k}' for k, n in sorted(already.items()))} already)" if already else ""))
        _room(start, concurrency)

    raise typer.Exit(_drive(json_out, started, lambda view: aresume_batch(
        batch_id, approve_all=approve_all, retry_failed=retry_failed, concurrency=concurrency, max_rpm=max_rpm,
        max_tpm=max_tpm, max_failures=max_failures, executor=executor, ray_address=ray_address,
        cpus_per_row=cpus_per_row, verbose=verbose, on_start=view.begin, on_progress=view.change)))


def _room(start: Any, asked: int) -> None:
    if start.concurrency < asked:
        print(f"magent: {start.concurrency} rows at once, not {asked}: the Ray cluster's CPUs hold no more at "
              "--cpus-per-row (a smaller share runs more)", file=sys.stderr)


def _drive(json_out: bool, started: Any, call: Any) -> int:
    """Run the batch call with a view of its rows; the exit code says how the rows ended."""
    from magent.cli.batchview import View
    from magent.cli.runtime import Interrupted, run_async

    view = View(json_out=json_out, on_start=started)
    try:
        try:
            done = run_async(lambda: call(view))
        finally:
            view.close()
    except Interrupted:
        if view.batch_id is None:
            raise Interrupted("interrupted before the batch started; nothing was run") from None
        view.summary()
        raise Interrupted(f"interrupted: batch {view.batch_id[:8]} stopped; its running rows were checkpointed "
                          f"(continue with `magent batch resume {view.batch_id[:8]}`)") from None
    view.summary(done)
    return exit_code(done.counts, done.stopped_by)


_COUNT_AS_DONE = frozenset({"completed", "skipped", "removed"})
"""Rows that leave the exit code at 0: completed, left out by ``--skip-bad-rows``, or removed since."""


def exit_code(counts: dict[str, int], stopped_by: str | None = None) -> int:
    """The batch's exit code from its rows' statuses (all of them, a resume's included): 1 when a
    row failed, was cancelled or was lost (``interrupted``: ``batch resume`` continues it), or
    ``--max-failures`` stopped the batch; else 3 when rows wait for a person; else 0."""
    from magent.errors import EXIT_FAILED, EXIT_OK, EXIT_PAUSED

    if stopped_by or any(n and status not in _COUNT_AS_DONE and status != "awaiting_human"
                         for status, n in counts.items()):
        return EXIT_FAILED
    return EXIT_PAUSED if counts.get("awaiting_human") else EXIT_OK


@app.command("list", epilog=examples("magent batch list", "magent batch list --json"))
def list_(json_out: Annotated[bool, typer.Option("--json", help="One JSON object per batch.")] = False) -> None:
    """Batches, oldest first, with per-status counts of their rows."""
    from magent.api.batching import batches
    from magent.cli.output import print_json

    found = batches()
    if json_out:
        print_json([s.to_json() for s in found])
        return
    if not found:
        print("no batches (start one with `magent batch TARGET --inputs FILE`)")
        return
    for s in found:
        print(f"{s.id[:8]}  {s.created_at[:19].replace('T', ' ')}  {s.rows:>5} rows  {_counts(s.counts)}"
              f"{'  (running)' if s.running else ''}  {s.target}")


@app.command("show", epilog=examples("magent batch show 7c1e", "magent batch show 7c1e --json"))
def show(batch_id: BatchId, json_out: Annotated[bool, typer.Option("--json", help="As JSON.")] = False) -> None:
    """A batch's options, counts, and the rows that did not complete.

    Paused rows are listed with their task, to answer with magent resume TASK.
    """
    from magent.api.batching import batch_details
    from magent.cli.output import print_json
    from magent.money import cost_phrase

    details = batch_details(batch_id)
    s = details.summary
    if json_out:
        print_json(details.as_dict())
        return
    print(f"batch {s.id}{'  (running)' if s.running else ''}")
    print(f"  target   {s.target}")
    print(f"  inputs   {(s.doc.get('inputs') or {}).get('path')} ({s.rows} rows)")
    print(f"  created  {s.created_at[:19].replace('T', ' ')}")
    print(f"  rows     {_counts(s.counts)}")
    print(f"  usage    {s.tokens:,} tokens, {cost_phrase(s.cost, s.unpriced)}")
    for r in (row.as_dict() for row in details.not_completed):
        task = f"task {r['task_id'][:8]}" if r.get("task_id") else ""
        why = (r.get("pause") or {}).get("question") or (r.get("error") or {}).get("message") or ""
        print(f"  row {r['row']:<5} {str(r['status']).replace('awaiting_human', 'paused'):<12} {task:<14} "
              f"{str(why).splitlines()[0][:100] if why else ''}".rstrip())


@app.command("results", epilog=examples("magent batch results 7c1e --json > results.jsonl",
                                        "magent batch results 7c1e --csv > results.csv"))
def results_(
    batch_id: BatchId,
    json_out: Annotated[bool, typer.Option("--json", help="One AgentResult per line, with row and task (default).")] = False,
    csv_out: Annotated[bool, typer.Option("--csv", help="CSV: one row per input with the AgentResult's fields.")] = False,
) -> None:
    """One result per input row, in input order."""
    import csv
    import json

    from magent.api.batching import batch_results
    from magent.cli.batchview import CSV_COLUMNS, csv_row
    from magent.errors import UsageError

    if json_out and csv_out:
        raise UsageError("give only one of --json, --csv")
    items = [row.as_dict() for row in batch_results(batch_id)]
    if csv_out:
        writer = csv.DictWriter(sys.stdout, fieldnames=list(CSV_COLUMNS), lineterminator="\n")
        writer.writeheader()
        for item in items:
            writer.writerow(csv_row(item))
        return
    for item in items:
        sys.stdout.write(json.dumps(item, ensure_ascii=False) + "\n")


def _counts(counts: dict[str, int]) -> str:
    from magent.cli.batchview import describe_counts

    return describe_counts(counts) or "no rows"
