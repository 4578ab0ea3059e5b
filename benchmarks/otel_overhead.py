"""Benchmark: what live OpenTelemetry export adds to the long-react per-step time (target <= 5 %).

Runs the long-react workload (``long_react.py``: one agent, N turns, each calling a tool
that returns 10,000 bytes) alternately without and with ``OTEL_EXPORTER_OTLP_ENDPOINT``
pointing at a real OTLP/HTTP receiver in another process (tests/support/otlp_receiver.py),
and prints the median per-step times, their ratio, the CPU time per step (this process,
the exporter's background thread included; steady when the machine is busy, unlike wall
time), and how many spans arrived.

    python benchmarks/otel_overhead.py [N] [pairs]
"""

from __future__ import annotations

import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from long_react import one_run  # noqa: E402


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    receiver = subprocess.Popen([sys.executable, str(ROOT / "tests" / "support" / "otlp_receiver.py")],
                                stdout=subprocess.PIPE, text=True)
    url = receiver.stdout.readline().strip()
    plain: list[float] = []
    exported: list[float] = []
    cpu: dict[bool, list[float]] = {False: [], True: []}
    try:
        with tempfile.TemporaryDirectory() as tmp:  # warm-up: the first run in a process pays its imports
            asyncio.run(one_run(min(n, 20), Path(tmp) / "home"))
        for _ in range(pairs):
            for with_export in (False, True):  # alternate, so drift in machine load hits both alike
                if with_export:
                    os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = url
                else:
                    os.environ.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
                with tempfile.TemporaryDirectory() as tmp:
                    started = time.process_time()  # this process's CPU, the exporter's thread included
                    result = asyncio.run(one_run(n, Path(tmp) / "home"))
                    cpu[with_export].append((time.process_time() - started) / n * 1000)
                (exported if with_export else plain).append(statistics.median(result["steps"]) * 1000)
    finally:
        os.environ.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
        receiver.send_signal(signal.SIGINT)
        got = receiver.communicate(timeout=30)[0].strip()
    base, live = statistics.median(plain), statistics.median(exported)
    print(f"long-react N={n}, {pairs} runs each, alternating (medians of per-step medians)")
    print(f"  without export        {base:7.3f} ms/step   (runs: {', '.join(f'{x:.2f}' for x in plain)})")
    print(f"  with live OTLP export {live:7.3f} ms/step   (runs: {', '.join(f'{x:.2f}' for x in exported)})")
    print(f"  ratio                 {live / base:7.3f}   (target <= 1.05)")
    cpu_base, cpu_live = statistics.median(cpu[False]), statistics.median(cpu[True])
    print(f"  CPU per step          {cpu_base:7.3f} ms without, {cpu_live:.3f} ms with export: "
          f"+{cpu_live - cpu_base:.3f} ms ({(cpu_live / cpu_base - 1) * 100:+.1f} %; less sensitive to the "
          "machine's load than wall time)")
    print(f"  receiver got {got} (expected {pairs} x {2 * n + 3} spans: per turn a model call and a tool call, "
          f"plus the last call, the node and the run)")
    fed, made = feed_cost(n)
    print(f"  measured alone, per event (about 3 per step): {fed:.1f} µs to hand it over (the run's side), "
          f"{made:.1f} µs of CPU to make its spans (the exporter's thread, mostly while the run waits on fsync)")
    print(f"  load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


def feed_cost(n: int) -> tuple[float, float]:
    """Microseconds per event: what ``feed`` costs the run, and the CPU of turning the event into
    spans on the exporter's thread, timed over the events of one long-react run."""
    from magent.store.files import read_jsonl
    from magent.trace.otel import LiveExport
    from magent.trace.telemetry import OTLPTarget

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        task_id = asyncio.run(one_run(n, home))["task_id"]
        events = list(read_jsonl(home / "tasks" / task_id / "events.jsonl"))
    export = LiveExport(task_id, OTLPTarget(url="http://127.0.0.1:9/v1/traces", timeout=0.1))
    cpu = time.process_time()
    started = time.perf_counter()
    for ev in events:
        export.feed(ev)
    fed = time.perf_counter() - started
    export.events.put(None)
    export.maker.join()
    made = time.process_time() - cpu
    export.exporter.shutdown()
    return fed / len(events) * 1e6, made / len(events) * 1e6


if __name__ == "__main__":
    main()
