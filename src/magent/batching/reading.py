"""Reading batches back: per-status counts (``batch list``/``show``) and one result per input
row (``batch results``), from the batch's record and its rows' tasks as they are now."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from magent.store.batches import BatchDir, all_batches

STATUSES = ("completed", "failed", "awaiting_human", "interrupted", "running", "cancelled", "not_started",
            "skipped", "removed")


@dataclass
class Summary:
    id: str
    created_at: str
    target: str
    rows: int
    counts: dict[str, int] = field(default_factory=dict)
    tokens: int = 0
    cost: float = 0.0
    unpriced: int = 0
    """Model calls without a known price: ``cost`` is a lower bound, or unknown."""
    running: bool = False
    """A process is driving the batch now."""
    doc: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "created_at": self.created_at, "target": self.target, "rows": self.rows,
                "counts": self.counts, "tokens": self.tokens, "cost": round(self.cost, 6),
                "unpriced": self.unpriced,
                "running": self.running, "options": self.doc.get("options"), "inputs": self.doc.get("inputs")}


def summary(batch: BatchDir) -> Summary:
    from magent.batching.runner import row_task
    from magent.store.locks import is_held
    from magent.store.tasks import Store

    doc = batch.read()
    store = Store()
    rows = int((doc.get("inputs") or {}).get("rows") or 0)
    counts: dict[str, int] = {}
    out = Summary(id=batch.id, created_at=str(doc.get("created_at", "")), target=str(doc.get("target", "")),
                  rows=rows, counts=counts, doc=doc, running=is_held(batch.path / "run.lock"))
    skipped = len(doc.get("skipped") or [])
    for task_id in batch.row_tasks().values():
        task = row_task(store, task_id)
        status = "removed" if task is None else task.status.value
        status = "running" if status == "pending" else status
        counts[status] = counts.get(status, 0) + 1
        if task is not None:
            out.tokens += task.usage.input + task.usage.output
            out.cost += task.usage.cost or 0.0
            out.unpriced += task.usage.unpriced
    if skipped:
        counts["skipped"] = skipped
    left = rows - sum(counts.values())
    if left > 0:
        counts["not_started"] = left
    return out


def summaries() -> list[Summary]:
    return sorted((summary(b) for b in all_batches()), key=lambda s: s.created_at)


def results(batch: BatchDir, result_of: Callable[[Any, Any], Any]) -> list[dict[str, Any]]:
    """One dict per input row: the row's ``AgentResult`` (as JSON) with ``row`` and ``task`` (the
    input's task text); rows without a task say ``not_started``, ``skipped`` or ``removed``.
    ``result_of(task_dir, task)``: the task's ``AgentResult`` (the API's, handed down)."""
    from magent.batching.inputs import read_inputs
    from magent.errors import TaskNotFoundError
    from magent.store.tasks import Store

    doc = batch.read()
    texts: dict[int, str] = {}
    try:
        inputs = read_inputs(Path(doc["inputs"]["path"]))
        if inputs.sha256 == doc["inputs"]["sha256"]:
            texts = {r.number: r.task for r in inputs.rows}
    except Exception:  # noqa: BLE001 - the inputs file moved or changed: the results stand without it
        pass
    skipped = {s["row"]: s["error"] for s in doc.get("skipped") or []}
    mapped = batch.row_tasks()
    store = Store()
    out = []
    for number in range(1, int(doc["inputs"]["rows"]) + 1):
        base = {"type": "result", "row": number, "task": texts.get(number)}
        if number in skipped:
            out.append({**base, "status": "skipped", "success": False,
                        "error": {"type": "bad_row", "message": skipped[number]}})
            continue
        task_id = mapped.get(number)
        if task_id is None:
            out.append({**base, "status": "not_started", "success": False})
            continue
        try:
            task_dir = store.task(task_id)
            result = result_of(task_dir, task_dir.shown_task()).model_dump(mode="json")
        except TaskNotFoundError:
            out.append({**base, "task_id": task_id, "status": "removed", "success": False})
            continue
        out.append({**base, **result, "row": number, "task": texts.get(number)})
    return out

