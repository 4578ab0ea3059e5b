"""How long a magent process takes to exit, against what Python's own teardown costs.

Exit latency is measured relative to a baseline taken in the same test, so the verdict
does not depend on how fast or how loaded the machine is: the baseline is a plain
interpreter that has imported what a run imports (litellm included) and then exits
normally, which is what a magent process did before it skipped that teardown.
"""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Callable

BASELINE = ("import magent.cli.app, magent.engine.session, magent.trace\n"
            "from magent.llm.litellm_client import warm\n"
            "warm()\n"
            "print('ready', flush=True)\n")


def teardown_baseline() -> float:
    """Seconds from the last line of a plain interpreter that loaded litellm to its exit."""
    proc = subprocess.Popen([sys.executable, "-c", BASELINE], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    started = time.monotonic()
    proc.wait(timeout=120)
    assert line.strip() == "ready" and proc.returncode == 0
    return time.monotonic() - started


def seconds_until_exit(proc: subprocess.Popen, until: Callable[[str], bool],
                       timeout: float = 120) -> tuple[float, list[str]]:
    """Read ``proc``'s stdout until a line satisfies ``until``; seconds from then to its exit,
    and every line it printed."""
    assert proc.stdout is not None
    lines: list[str] = []
    started = None
    for line in proc.stdout:
        lines.append(line)
        if started is None and until(line):
            started = time.monotonic()
    proc.wait(timeout=timeout)
    if started is None:
        raise AssertionError("the process never printed the line waited for:\n" + "".join(lines))
    return time.monotonic() - started, lines
