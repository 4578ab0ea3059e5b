"""Benchmark: ``magent retention sweep --dry-run`` over 10,000 tasks (target: median <= 2 s).

Builds a temporary home whose tasks look like what runs leave behind: a task.json
with a frozen config snapshot, three checkpoints, entries, events, a trace and a
lock file; statuses cycle through all six and ages spread over 0-60 days, so about
half the tasks are eligible. Then times the real command as a subprocess.

    python benchmarks/retention_sweep.py [--tasks 10000] [--runs 5] [--keep-checkpoints N]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from magent.ids import new_id
from magent.models import Checkpoint, HumanRequest, Task, TaskStatus
from magent.store.checkpoints import canonical_hash, file_name
from magent.store.home import init_home

STATUSES = list(TaskStatus)
TAGS = [[], ["debug"], ["critical"], ["nightly", "debug"], []]


def build(root: Path, count: int) -> None:
    """Write ``count`` task directories directly (plain writes: durability is not what is timed)."""
    init_home(root)
    now = datetime.now(timezone.utc)
    snapshot = {"workflow": {"name": "review_loop", "nodes": {f"n{i}": {"agent": "writer", "kind": "agent"}
                                                                for i in range(12)}},
                "agents": {"writer": {"system_prompt": "You are a careful writer. " * 40,
                                      "llm_config": {"model": "scripted", "api_key": "${KEY}"}}}}
    for n in range(count):
        status = STATUSES[n % len(STATUSES)]
        when = now - timedelta(days=(n * 7919) % 60, minutes=n % 1440)
        task = Task(id=new_id(), description=f"benchmark task {n}", status=status,
                    assigned_agent="writer", workflow="review_loop", created_at=when,
                    updated_at=when, completed_at=when if status.finished else None,
                    tags=TAGS[n % len(TAGS)], config_snapshot=snapshot,
                    retention_days=3 if n % 17 == 0 else None)
        d = root / "tasks" / task.id
        d.mkdir()
        (d / "task.json").write_text(task.model_dump_json(indent=2))
        for c in range(3):
            paused = status == TaskStatus.awaiting_human and c == 2
            (d / file_name(c)).write_bytes(checkpoint_bytes(task.id, c, paused))
        (d / "entries.jsonl").write_text('{"role": "user", "content": "hello"}\n' * 6)
        (d / "events.jsonl").write_text('{"seq": 1, "type": "run_started"}\n' * 10)
        (d / "trace.json").write_text("{}")
        (root / "locks" / f"{task.id}.lock").touch()


def checkpoint_bytes(task_id: str, sequence: int, paused: bool) -> bytes:
    """A valid checkpoint file (the same document ``CheckpointLog.write`` produces)."""
    request = HumanRequest(kind="human_node", node="review", question="Publish?") if paused else None
    cp = Checkpoint(checkpoint_id=new_id(), task_id=task_id, sequence=sequence, position="agent",
                    awaiting_human=paused, human_request=request,
                    state={"metadata": {"notes": "x" * 400}})
    doc = cp.model_dump(mode="json", exclude={"sha256": True, "state": {"messages"}},
                        exclude_none=True)
    doc["sha256"] = canonical_hash(doc)
    return json.dumps(doc, separators=(",", ":")).encode()


def time_runs(root: Path, runs: int, args: list[str]) -> tuple[list[float], list[float]]:
    """Wall-clock and CPU (user + sys) seconds of each run."""
    env = {**os.environ, "MAGENT_HOME": str(root)}
    cmd = [sys.executable, "-m", "magent", "retention", "sweep", "--dry-run", *args]
    subprocess.run(cmd, env=env, capture_output=True)  # warm-up, untimed: caches, bytecode
    times: list[float] = []
    cpu: list[float] = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
        times.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if p.returncode != 0:
            raise SystemExit(f"sweep failed ({p.returncode}): {p.stderr.strip()}")
        last = p.stdout.strip().splitlines()[-1]
    print(f"  {last}")
    return times, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--keep-checkpoints", type=int, default=2,
                    help="also time a policy with keep_checkpoints N (0: skip)")
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="magent-bench-") as tmp:
        root = Path(tmp) / "home"
        started = time.perf_counter()
        build(root, opts.tasks)
        os.sync()  # let writeback of the build finish before anything is timed
        print(f"built {opts.tasks} tasks in {time.perf_counter() - started:.1f} s")
        policies = [("default policy", None)]
        if opts.keep_checkpoints:
            policies.append((f"with keep_checkpoints: {opts.keep_checkpoints}", opts.keep_checkpoints))
        policy_file = root / "config" / "retention_policy.yaml"
        base = policy_file.read_text()
        for label, keep in policies:
            policy_file.write_text(base + (f"keep_checkpoints: {keep}\n" if keep else ""))
            print(f"magent retention sweep --dry-run, {label}:")
            times, cpu = time_runs(root, opts.runs, [])
            print(f"  median {statistics.median(times):.3f} s over {len(times)} runs "
                  f"(min {min(times):.3f}, max {max(times):.3f}; CPU median "
                  f"{statistics.median(cpu):.3f} s); target <= 2 s")


if __name__ == "__main__":
    main()
