"""``magent batch``: one workflow over many inputs, and reading batches back."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from typer.core import TyperGroup

from magent.cli.helpfmt import examples


class _BatchGroup(TyperGroup):
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
ExecutorOpt = Annotated[str, typer.Option("--executor", metavar="local|ray", help="Run rows in this process (local) or as Ray tasks (pip install 'magent[ray]').")]
RayAddress = Annotated[Optional[str], typer.Option("--ray-address", metavar="ADDR", help="Ray cluster to use (host:port); default: RAY_ADDRESS, else a local one.")]
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
    json_out: JsonOpt = False,
) -> None:
    """Start a batch: TARGET on every row of FILE.

    A row is {"task": "...", "set": {"key": value}} (or "set.key"/"key" fields) in JSON
    Lines, or a CSV with a task column and one column per value. Exit 0 when every row
    completed, 1 when some failed, 3 when some wait for a person, 130 interrupted
    (magent batch resume BATCH_ID continues).
    """
    from magent.batch import runner
    from magent.batch.inputs import set_values
    from magent.engine.inputs import parse_sets

    options = runner.Options(concurrency=concurrency, max_rpm=max_rpm, max_tpm=max_tpm, max_failures=max_failures,
                             skip_bad_rows=skip_bad_rows, executor=executor, ray_address=ray_address,
                             set=set_values(parse_sets(set_ or [])), tags=list(tag or []), model=model)
    rows_in, rows, execu, spec = runner.prepare(target, inputs, options)
    batch = runner.record(rows_in, target, spec, options)
    lock = batch.lock().acquire()
    try:
        if not json_out:
            print(f"batch {batch.id} ({len(rows)} rows, {execu.name} executor, concurrency {concurrency}; "
                  f"its tasks are tagged batch:{batch.id})")
        for bad in rows_in.bad:
            print(f"skipped: {bad.error}", file=sys.stderr)
        from magent.batch.executor import Job

        code = _drive(batch.id, execu, [Job(row=r) for r in rows], options, json_out, {})
    finally:
        lock.release()
    raise typer.Exit(code)


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
    json_out: JsonOpt = False,
) -> None:
    """Continue a batch after a crash, Ctrl-C or --max-failures.

    Finished rows are not run again, stopped rows continue from their checkpoints,
    rows never started start. Paused rows stay paused unless --approve-all (or answer
    them one by one with magent resume TASK).
    """
    from magent.batch import runner

    batch, doc = runner.open_batch(batch_id)
    lock = batch.lock().acquire()
    try:
        options = runner.Options(concurrency=concurrency, max_rpm=max_rpm, max_tpm=max_tpm,
                                 max_failures=max_failures, executor=executor, ray_address=ray_address)
        jobs, execu, _, already = runner.plan_resume(batch, doc, options, approve_all=approve_all,
                                                     retry_failed=retry_failed)
        if not json_out:
            print(f"batch {batch.id}: {len(jobs)} rows to run" + (
                f" ({', '.join(f'{n} {k}' for k, n in sorted(already.items()))} already)" if already else ""))
        code = _drive(batch.id, execu, jobs, options, json_out, already)
    finally:
        lock.release()
    raise typer.Exit(code)


def _drive(batch_id: str, execu: Any, jobs: list[Any], options: Any, json_out: bool,
           already: dict[str, int]) -> int:
    from magent.batch.runner import Driver, drive
    from magent.cli.batchview import View
    from magent.cli.runtime import Interrupted, run_async
    from magent.errors import EXIT_FAILED, EXIT_OK, EXIT_PAUSED

    view = View(len(jobs), json_out=json_out, batch_id=batch_id)
    driver = Driver(total=len(jobs), max_failures=options.max_failures, on_change=view.change)
    try:
        with view:
            run_async(lambda: drive(execu, jobs, driver))
    except Interrupted:
        view.summary(driver, already)
        raise Interrupted(f"interrupted: batch {batch_id[:8]} stopped; its running rows were checkpointed "
                          f"(continue with `magent batch resume {batch_id[:8]}`)") from None
    view.summary(driver, already)
    counts = {**already}
    for key, n in driver.counts.items():
        counts[key] = counts.get(key, 0) + n
    if counts.get("failed") or counts.get("interrupted") or driver.stopped_by:
        return EXIT_FAILED
    return EXIT_PAUSED if counts.get("awaiting_human") else EXIT_OK


@app.command("list", epilog=examples("magent batch list", "magent batch list --json"))
def list_(json_out: Annotated[bool, typer.Option("--json", help="One JSON object per batch.")] = False) -> None:
    """Batches, oldest first, with per-status counts of their rows."""
    from magent.batch.reading import summaries
    from magent.cli.output import print_json

    found = summaries()
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
    from magent.batch.reading import results, summary
    from magent.cli.output import print_json
    from magent.store.batches import find

    batch = find(batch_id)
    s = summary(batch)
    rows = [r for r in results(batch) if r.get("status") != "completed"]
    if json_out:
        print_json({**s.to_json(), "rows_not_completed": [
            {k: r.get(k) for k in ("row", "task_id", "status", "error", "pause")} for r in rows]})
        return
    print(f"batch {s.id}{'  (running)' if s.running else ''}")
    print(f"  target   {s.target}")
    print(f"  inputs   {(s.doc.get('inputs') or {}).get('path')} ({s.rows} rows)")
    print(f"  created  {s.created_at[:19].replace('T', ' ')}")
    print(f"  rows     {_counts(s.counts)}")
    print(f"  usage    {s.tokens:,} tokens, ${s.cost:.4f}")
    for r in rows:
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

    from magent.batch.reading import CSV_COLUMNS, csv_row, results
    from magent.errors import UsageError
    from magent.store.batches import find

    if json_out and csv_out:
        raise UsageError("give only one of --json, --csv")
    items = results(find(batch_id))
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
