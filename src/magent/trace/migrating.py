"""trace.json in a task's migration (``magent migrate``): the store plans its own files
(``store.rewrite``), this plans the trace last, as a run's end would write it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from magent.schema import SCHEMA_VERSION
from magent.store.files import read_bytes
from magent.store.rewrite import Plan, Rewrite, plan, version_of

if TYPE_CHECKING:
    from magent.store.tasks import TaskDir


def plan_task(task_dir: "TaskDir") -> Plan:
    """What migrating the task in ``task_dir`` would write, trace.json last; reads only."""
    out = plan(task_dir)
    plan_trace(task_dir, out)
    return out


def plan_trace(task_dir: "TaskDir", out: Plan) -> None:
    """trace.json, after the logs: the stored one migrated when readers show it, else rebuilt
    from the events (a stale, unreadable or too old trace, which readers build from them too)."""
    from magent.trace.actions import hydrate
    from magent.trace.build import dump_for_disk, rebuilt_trace, shorten_results
    from magent.trace.load import read_trace_file, restore_results

    try:
        data = read_bytes(task_dir.trace_file)
    except FileNotFoundError:
        return
    except OSError as exc:
        out.kept.append(f"trace.json: cannot be read ({exc}); left as it is")
        return
    if version_of(data) == SCHEMA_VERSION:
        return
    doc = read_trace_file(task_dir, [])
    if doc is not None and not doc.get("_unusable"):
        from pydantic import ValidationError

        from magent.models import TraceLog

        shorten_results(restore_results(doc, task_dir))   # a long result's text: a preview, as written now
        try:
            trace = TraceLog.model_validate(hydrate(doc))
        except ValidationError as exc:
            out.kept.append(f"trace.json: does not fit the TraceLog model ({exc.errors()[0]['msg']}); left as it is")
            return
    elif task_dir.events_file.exists():
        trace = rebuilt_trace(task_dir)
    else:
        out.kept.append("trace.json: cannot be read and there are no events to build it from; left as it is")
        return
    out.rewrites.append(Rewrite(task_dir.trace_file, dump_for_disk(trace), "trace.json"))
