"""A short run of the adversarial kill trial (benchmarks/kill_trial.py): a real workflow on a
real MCP server, killed with SIGKILL at seeded random moments and resumed until it completes,
with no corrupt file, no tool call run twice and no temp file left after the next open.
The full trial (50 kills and more) is the benchmark; this keeps it working."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from kill_trial import report, trial  # noqa: E402


def test_a_few_random_kills_leave_only_resumable_tasks_that_complete(tmp_path: Path) -> None:
    figures = trial(kills=3, seed=7, work=tmp_path, per_task=3)
    assert figures.failures == [], report(figures, seed=7)
    assert figures.kills >= 3 and figures.completed == figures.tasks >= 1
    assert figures.orphans == 0
