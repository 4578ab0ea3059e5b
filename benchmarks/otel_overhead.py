"""Benchmark: what live OpenTelemetry export adds to the long-react per-step time (target <= 5 %).

Runs the long-react workload (``long_react.py``: one agent, N turns, each calling a tool
that returns 10,000 bytes) alternately without and with ``OTEL_EXPORTER_OTLP_ENDPOINT``
pointing at a real OTLP/HTTP receiver in another process (tests/support/otlp_receiver.py),
and prints the median per-step times, their ratio, the CPU time per step of the run's
process and of the exporter process the run starts (steady when the machine is busy,
unlike wall time), and how many spans arrived.

    python benchmarks/otel_overhead.py [N] [pairs]
"""

from __future__ import annotations

import asyncio
import os
import resource
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
    exporter_cpu: list[float] = []
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
                    started = time.process_time()  # the run's process
                    children = resource.getrusage(resource.RUSAGE_CHILDREN)  # the exporter, once waited for
                    result = asyncio.run(one_run(n, Path(tmp) / "home"))
                    cpu[with_export].append((time.process_time() - started) / n * 1000)
                    after = resource.getrusage(resource.RUSAGE_CHILDREN)
                    if with_export:
                        exporter_cpu.append((after.ru_utime - children.ru_utime + after.ru_stime
                                             - children.ru_stime) / n * 1000)
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
    print(f"  CPU per step, the run's process: {cpu_base:.3f} ms without, {cpu_live:.3f} ms with export "
          f"({(cpu_live / cpu_base - 1) * 100:+.1f} %)")
    print(f"  CPU per step, the exporter process (start-up and SDK import included): "
          f"{statistics.median(exporter_cpu):.3f} ms, on another core when there is one")
    print(f"  receiver got {got} (expected {pairs} x {2 * n + 3} spans: per turn a model call and a tool call, "
          f"plus the last call, the node and the run)")
    print(f"  load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
