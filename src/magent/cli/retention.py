"""``magent retention``: sweep expired task directories, and show the policy. Plain text, no
prompts: by default the sweep prints one timestamped line, for a cron log."""

from __future__ import annotations

import sys
from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import typer

from magent.cli.helpfmt import examples
from magent.cli.usage import CommandGroup
from magent.vocabulary import plural

if TYPE_CHECKING:
    from magent.models import RetentionPolicy
    from magent.store.retention import SweepReport, Verdict

app = typer.Typer(cls=CommandGroup, help="Keep disk use bounded: sweep old tasks (safe from cron).",
                  no_args_is_help=True)


@app.command("sweep", epilog=examples(
    "magent retention sweep --dry-run     # what would go, and why",
    "magent retention sweep",
    "17 * * * *  $HOME/.local/bin/magent retention sweep >> $HOME/sweep.log 2>&1"))
def sweep(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List what would go and why; change nothing.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print a machine summary as JSON.")] = False,
) -> None:
    """Remove the task directories that are past their retention.

    Also trims old checkpoints if the policy caps them. Prints one summary line. If another sweep is running it says so and exits 0 at
    once. Exit 2 on a bad policy file (nothing deleted), 1 if a removal failed part-way.
    """
    from magent.api.retention import sweep as sweep_tasks
    from magent.cli.output import print_json, warn

    report = sweep_tasks(dry_run=dry_run)
    if json_out:
        print_json(report.as_dict())
    else:
        if dry_run:
            _print_plan(report)
        elif report.busy is None:
            for v in report.verdicts:
                if v.reason == "unreadable":
                    warn(v.detail)
        for problem in report.problems:
            warn(problem)
        print(summary_line(report), flush=True)
    if report.problems:
        raise typer.Exit(1)


@app.command("show", epilog=examples("magent retention show", "magent retention show --json"))
def show(
    json_out: Annotated[bool, typer.Option("--json", help="Print the policy and every task's eligibility as JSON.")] = False,
) -> None:
    """Show the retention policy and when each task may go.

    For each task: which rule applies and when it becomes eligible for a sweep.
    """
    from magent.api.retention import retention_plan
    from magent.cli.output import print_json

    plan = retention_plan()
    if json_out:
        print_json(plan.as_dict())
        return
    _print_policy(plan.policy, plan.policy_file)
    _print_tasks(plan.report.verdicts, plan.report.at)


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{n} B"


def _stamp(when: datetime) -> str:
    return when.astimezone().isoformat(timespec="seconds")


def summary_line(report: "SweepReport") -> str:
    """The one line a sweep logs, e.g. ``<time> retention sweep: scanned 120 tasks: removed 3 ...``."""
    head = f"{_stamp(report.at)} retention sweep" + (" (dry run)" if report.dry_run else "")
    if report.busy is not None:
        return f"{head}: another sweep is already running ({report.busy}); nothing done"
    verb = "would remove" if report.dry_run else "removed"
    removed = [v for v in report.verdicts if v.action == "remove"]
    text = (f"{head}: scanned {plural(len(report.verdicts), 'task')}: {verb} {len(removed)}"
            f" ({human_bytes(sum(v.bytes for v in removed))}), kept {report.count('keep')}")
    skipped = report.skipped()
    text += f", skipped {sum(skipped.values())}"
    if skipped:
        names = {"awaiting_human": "paused"}
        text += " (" + ", ".join(f"{n} {names.get(k, k)}" for k, n in sorted(skipped.items())) + ")"
    trimmed = [v for v in report.verdicts if v.trim]
    if trimmed:
        text += (f", {'would trim' if report.dry_run else 'trimmed'} "
                 f"{plural(sum(len(v.trim) for v in trimmed), 'checkpoint')} in {plural(len(trimmed), 'task')}"
                 f" ({human_bytes(sum(v.trim_bytes for v in trimmed))})")
    temps = [v for v in report.verdicts if v.temp]
    if temps:
        text += (f", {'would remove' if report.dry_run else 'removed'} "
                 f"{plural(sum(len(v.temp) for v in temps), 'temp file')} of killed writes"
                 f" ({human_bytes(sum(v.temp_bytes for v in temps))})")
    if report.leftovers:
        text += (f", {'would clear' if report.dry_run else 'cleared'} {len(report.leftovers)} "
                 f"left by an interrupted sweep or start ({human_bytes(report.leftover_bytes)})")
    if report.batches:
        text += f", removed the records of {plural(len(report.batches), 'batch', 'batches')} whose tasks are all gone"
    if report.memory is not None and not report.memory.problem:
        text += "; " + report.memory.summary()
    if report.problems:
        text += f", {plural(len(report.problems), 'error')} (see stderr)"
    return text


def _print_plan(report: "SweepReport") -> None:
    lines = []
    for v in report.verdicts:
        if v.action == "remove":
            lines.append(f"would remove  {v.task_id}  {v.status:<14} {human_bytes(v.bytes):>9}  "
                         f"{v.detail}")
        elif v.action == "skip" and v.reason in ("locked", "unreadable"):
            lines.append(f"would skip    {v.task_id}  {v.status or '?':<14} {v.reason:>9}  "
                         f"{v.detail}")
        if v.trim:
            lines.append(f"would trim    {v.task_id}  {v.status:<14} {human_bytes(v.trim_bytes):>9}"
                         f"  checkpoints {_ranges(v.trim)} (keep_checkpoints)")
        if v.temp:
            lines.append(f"would tidy    {v.task_id}  {v.status:<14} {human_bytes(v.temp_bytes):>9}"
                         f"  {plural(len(v.temp), 'temp file')} of killed writes ({', '.join(v.temp)})")
    lines += [f"would clear   tasks/{name}  (left by an interrupted {'start' if name.startswith('.new-') else 'sweep'})"
              for name in report.leftovers]
    if report.memory is not None:
        lines += [f"would remove  memory {d.id[:8]}  {d.rule:<14} {d.detail}: {d.content[:60]}"
                  for d in report.memory.doomed]
    if lines:
        sys.stdout.write("\n".join(lines) + "\n")


def _ranges(numbers: list[int]) -> str:
    from magent.api.inspection import number_spans

    return ",".join(number_spans(numbers))


def _print_policy(policy: "RetentionPolicy", source: str | None) -> None:
    from magent.store.retention import PROTECTED

    def days(mapping: dict) -> str:
        return ", ".join(f"{getattr(k, 'value', k)} {d}d" for k, d in mapping.items()) or "-"

    protected = [s.value for s in PROTECTED if s not in policy.by_status]
    rows = [("policy", source or "built-in defaults (no config/retention_policy.yaml)"),
            ("default_days", f"{policy.default_days}d"), ("by_task", days(policy.by_task)),
            ("by_status", days(policy.by_status)),
            ("keep_checkpoints", str(policy.keep_checkpoints or "all")),
            ("never swept", ", ".join(protected) or "-"), ("memory", _memory_rules(policy))]
    for key, value in rows:
        print(f"{key:<17} {value}")
    print("precedence        own --retention-days, then tags (longest wins), then status, "
          "then default_days")


def _memory_rules(policy: "RetentionPolicy") -> str:
    rules = policy.memory
    if rules is None:
        return "kept until forgotten (no memory section)"
    parts = [f"{name} {value}{'d' if name.endswith('days') else ''}"
             for name, value in (("unused_days", rules.unused_days), ("archived_days", rules.archived_days),
                                 ("max_entries", rules.max_entries)) if value is not None]
    return ", ".join(parts) or "kept until forgotten (no rules in the memory section)"


def _print_tasks(verdicts: list["Verdict"], at: datetime) -> None:
    print()
    if not verdicts:
        print("no tasks")
        return
    far = datetime.max.replace(tzinfo=at.tzinfo)
    verdicts = sorted(verdicts, key=lambda v: (v.status is None, v.eligible_at or far))
    print(f"{'TASK':<9} {'STATUS':<15} {'SINCE':<17} {'RULE':<28} ELIGIBLE")
    for v in verdicts:
        if v.status is None:
            print(f"{v.task_id[:8]:<9} {'?':<15} {'-':<17} {'-':<28} never: {v.detail}")
            continue
        since = v.since.astimezone().strftime("%Y-%m-%d %H:%M") if v.since else "-"
        rule = v.rule.detail if v.rule and v.rule.source != "protected" else "protected"
        if v.eligible_at is None:
            when = "never" + (f" ({v.status} is protected)" if v.reason in (
                "running", "awaiting_human") else "")
        else:
            when = v.eligible_at.astimezone().strftime("%Y-%m-%d %H:%M")
            when += " (now)" if v.eligible_at <= at else f" (in {_until(v.eligible_at - at)})"
            if v.reason == "locked":
                when += f"; {v.detail}"
        if v.trim:
            when += f"; trims {len(v.trim)} checkpoints"
        print(f"{v.task_id[:8]:<9} {v.status:<15} {since:<17} {rule:<28} {when}")


def _until(delta) -> str:
    secs = delta.total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if secs >= size:
            return f"{int(secs // size)}{unit}"
    return f"{int(secs)}s"
