"""Benchmark: how fast the read side of the CLI starts.

Targets (issue 2), medians of repeated runs as subprocesses:

- ``magent --help``                     <= 0.25 s
- ``magent tasks list`` over 1,000 tasks <= 0.5 s

The home is built with the store's own API (``tests/support/homes.populate``):
every task has a task.json carrying a frozen config snapshot (as a run stores
one), two checkpoints and a four-message conversation. Exit status 1 when a
target is missed.

    python benchmarks/cli_startup.py [--tasks 1000] [--runs 9] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.homes import populate  # noqa: E402

TARGETS = {"help": 0.25, "tasks_list": 0.5}

SNAPSHOT = {
    "kind": "workflow",
    "workflow": {"path": "/home/user/flows/review.yaml", "raw": {
        "name": "review_loop", "entry_point": "draft",
        "nodes": {f"n{i}": {"type": "agent", "agent": "writer"} for i in range(8)},
        "edges": [{"from": f"n{i}", "to": f"n{i + 1}"} for i in range(7)]}},
    "agents": {"writer": {"path": "/home/user/flows/writer.yaml", "raw": {
        "name": "writer", "role": "writes", "system_prompt": "You are a careful writer. " * 40,
        "llm_config": {"model": "openai/gpt-4o-mini", "api_key": "${OPENAI_API_KEY}"}}}},
}


def magent_command() -> list[str]:
    """The installed ``magent`` script next to this interpreter (what a user runs), else ``-m``."""
    script = Path(sys.executable).with_name("magent")
    return [str(script)] if script.exists() else [sys.executable, "-m", "magent"]


def timed(cmd: list[str], env: dict[str, str], runs: int) -> list[float]:
    subprocess.run(cmd, env=env, capture_output=True, check=True)  # warm the page cache and .pyc
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, env=env, capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="magent-bench-"))
    try:
        home = tmp / "home"
        started = time.perf_counter()
        populate(home, args.tasks, checkpoints=2, config_snapshot=SNAPSHOT)
        built = time.perf_counter() - started
        env = {**os.environ, "MAGENT_HOME": str(home), "COLUMNS": "120"}
        cmd = magent_command()
        listed = subprocess.run(cmd + ["tasks", "list", "--json"], env=env, capture_output=True,
                                text=True, check=True)
        assert len(json.loads(listed.stdout)) == args.tasks, "tasks list did not see every task"
        results = {
            "help": timed(cmd + ["--help"], env, args.runs),
            "tasks_list": timed(cmd + ["tasks", "list"], env, args.runs),
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    missed = False
    report = {"tasks": args.tasks, "runs": args.runs, "build_seconds": round(built, 2), "figures": {}}
    for name, times in results.items():
        median = statistics.median(times)
        ok = median <= TARGETS[name]
        missed |= not ok
        report["figures"][name] = {"median": round(median, 4), "min": round(min(times), 4),
                                   "max": round(max(times), 4), "target": TARGETS[name], "ok": ok}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"home: {args.tasks} tasks x 2 checkpoints (built in {built:.1f} s); "
              f"{args.runs} runs each, median (min-max)")
        labels = {"help": "magent --help", "tasks_list": f"magent tasks list ({args.tasks} tasks)"}
        for name, fig in report["figures"].items():
            verdict = "ok" if fig["ok"] else "MISSED"
            print(f"  {labels[name]:<32} {fig['median']:.3f} s ({fig['min']:.3f}-{fig['max']:.3f})"
                  f"  target <= {fig['target']} s  {verdict}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
