"""Benchmark: ``magent trace ID --html`` on a 1,000-step task (targets: <= 1 s, <= 5 MB).

Runs the same task as ``trace_view.py`` (one agent, 1,000 turns, each reading a
10,000-byte page), then times the whole command as a subprocess (start-up
included) and ``write_report`` in-process, and prints the page's size. With
Chromium and Playwright present (the test extra and ``.ci/run`` bring them), it
also opens the page headless and times it until drawn and until step 500 is open.

    python benchmarks/trace_html.py [--steps 1000] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from trace_view import build_task  # noqa: E402

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def timed(args: list[str], runs: int, env: dict[str, str]) -> tuple[list[float], list[float]]:
    """Wall and CPU (user + system) seconds of ``magent ARGS`` as a subprocess, per run.

    On a shared machine the wall time includes waiting for a core; the CPU time is what
    the command itself costs."""
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "magent", *args], capture_output=True, env=env)
        walls.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if p.returncode != 0:
            raise SystemExit(f"magent {' '.join(args)} failed ({p.returncode}): {p.stderr.decode()[-500:]}")
    return walls, cpus


def in_browser(page_path: Path, step: int, runs: int) -> tuple[list[float], list[float]] | None:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    if not os.path.exists("/usr/bin/chromium"):
        return None
    drawn, opened = [], []
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
        context = p.chromium.launch_persistent_context(profile, executable_path="/usr/bin/chromium",
                                                       headless=True, args=FLAGS)
        for _ in range(runs):
            page = context.new_page()
            page.goto(page_path.as_uri())
            page.wait_for_selector("body[data-ready]")
            # measured by the page itself: from navigation start until drawn, and one click
            drawn.append(float(page.get_attribute("body", "data-ready")) / 1000)
            opened.append(page.evaluate(f"""() => {{ const t = performance.now();
                document.querySelector('#step-{step} .head').click(); document.body.offsetHeight;
                return (performance.now() - t) / 1000; }}"""))
            page.close()
        context.close()
    return drawn, opened


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        started = time.perf_counter()
        task_id = build_task(home, opts.steps)
        print(f"built a {opts.steps}-step task in {time.perf_counter() - started:.1f} s: {task_id}")
        env = {**os.environ, "MAGENT_HOME": str(home)}
        out = Path(tmp) / "report.html"
        walls, cpus = timed(["trace", task_id[:8], "--html", str(out)], opts.runs, env)
        size = out.stat().st_size
        print(f"magent trace ID --html (whole command, start-up included; target <= 1 s): "
              f"wall median {statistics.median(walls):.3f} s (min {min(walls):.3f}), "
              f"CPU median {statistics.median(cpus):.3f} s, {opts.runs} runs")
        print(f"report size: {size:,} bytes = {size / 1e6:.2f} MB (target <= 5 MB)")

        from magent.store.tasks import Store
        from magent.trace.html import write_report

        td = Store().task(task_id)
        inner = []
        for _ in range(opts.runs):
            started = time.perf_counter()
            written = write_report(td, Path(tmp) / "again.html")
            inner.append(time.perf_counter() - started)
        print(f"write_report in-process: median {statistics.median(inner):.3f} s ({written.steps} steps)")
        walls, cpus = timed(["--help"], opts.runs, env)
        print(f"(magent --help for comparison: wall median {statistics.median(walls):.3f} s, "
              f"CPU {statistics.median(cpus):.3f} s; load average now {os.getloadavg()[0]:.1f} "
              f"on {os.cpu_count()} cores)")
        browser = in_browser(out, min(500, written.steps), 3)
        if browser is None:
            print("(no Chromium/Playwright: page timings skipped)")
        else:
            drawn, opened = browser
            print(f"headless Chromium: page drawn in median {statistics.median(drawn):.2f} s, "
                  f"step {min(500, written.steps)} opened in {statistics.median(opened) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
