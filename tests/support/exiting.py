"""How a magent process exits.

For tests: what is still alive in it when it leaves, and whether it skipped Python's own
teardown (``watched_magent``, ``exit_report``): facts, not timings. For
benchmarks/run_exit.py: how long it takes to exit, against a baseline taken in the same run
(a plain interpreter that imported what a run imports, litellm included, and exits normally,
which is what a magent process did before it skipped that teardown).
"""

from __future__ import annotations

import json
import os
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


# Runs ``python -m magent ARGS`` (argv: REPORT ARGS...) with a watch on how it leaves: os._exit
# writes what is still alive in the process to REPORT before exiting; an exit handler that
# only Python's own teardown would run leaves REPORT.teardown behind.
_WATCH = """
import atexit, json, os, runpy, sys, threading

report = sys.argv.pop(1)
real_exit = os._exit


def children():
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and fields[0] != "Z":
            found.append(int(pid))
    return found


def watched_exit(code):
    # the threads Python's own exit would wait for (every thread not marked daemon) and that
    # os._exit would cut short; but magent's fsync pool (store/commit.py names its threads),
    # idle once the run has flushed, which it does before its command returns
    waited_for = [t.name for t in threading.enumerate()
                  if t is not threading.main_thread() and not t.daemon and t.is_alive()
                  and not t.name.startswith("magent-fsync")]
    with open(report, "w") as f:
        json.dump({"code": code, "threads": waited_for, "children": children()}, f)
    real_exit(code)


os._exit = watched_exit
atexit.register(lambda: open(report + ".teardown", "w").close())
runpy.run_module("magent", run_name="__main__", alter_sys=True)
"""


def watched_magent(report: str, *args: str) -> list[str]:
    """The command line of ``python -m magent ARGS`` watched as it leaves (see ``exit_report``)."""
    return [sys.executable, "-c", _WATCH, report, *args]


def exit_report(report: str) -> dict[str, object]:
    """How a watched magent process left: its exit code, the threads Python's own exit would
    have waited for (all but the main thread, daemon threads and magent's idle fsync pool) and
    its child processes alive at that moment. It fails if the process went through Python's
    teardown (exit handlers, final garbage collections, freeing every module: the seconds a
    run once spent after its answer) instead of ending at once."""
    assert not os.path.exists(report + ".teardown"), "the process ran Python's teardown at exit"
    assert os.path.exists(report), "the process did not end through magent's immediate exit"
    with open(report) as f:
        return json.load(f)
