"""magent batch against a shell loop of magent run (issue 15).

A scripted one-tool agent (one call to the reference MCP server mcp-server-time, then an
answer) over ROWS inputs:

- local: ``magent batch`` with the local executor (one process, one mcp-server-time for
  all rows, --concurrency 16): wall time, rows per second, CPU per row (the batch process
  and its server, from the children's rusage);
- sequential: ``magent run`` once per row, one process after the other, as a shell loop
  does -- measured on SAMPLE processes and scaled to ROWS (said so in the output), with its
  CPU per row;
- ray: RAY_ROWS rows through ``--executor ray`` on a local Ray cluster (two CPUs, started
  here and stopped at the end; its start-up is not counted) against the same rows with the
  local executor: the overhead per row.

The goal is a ratio of at least 20 between local and sequential.
Usage: python benchmarks/batch.py [ROWS=1000] [SAMPLE=30] [RAY_ROWS=100]
Needs the examples extra (mcp-server-time) and, for the Ray part, the ray extra.
"""

from __future__ import annotations

import json
import os
import resource
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "RAY_USAGE_STATS_ENABLED": "0",
       "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
MCP = """servers:
  - name: time
    transport: stdio
    config: {command: mcp-server-time, args: [--local-timezone, UTC]}
"""
SCRIPT = """responses:
  - tool_calls: [{name: time.get_current_time, arguments: {timezone: Europe/Paris}}]
  - content: It is the time shown above.
"""
AGENT = """name: clock
role: bench
system_prompt: Tell the time.
tools: [time.*]
mcp_servers: mcp.yaml
llm_config: {model: scripted, script: script.yaml}
"""
CLUSTER = """
import sys, ray
ctx = ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
print(ctx.address_info["gcs_address"], flush=True)
sys.stdin.read()
ray.shutdown()
"""


def magent(*args: str, home: Path) -> tuple[float, float]:
    """Run the magent command; (wall seconds, CPU seconds of it and its children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "magent", *args], env={**ENV, "MAGENT_HOME": str(home)},
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"magent {' '.join(args[:3])} failed ({done.returncode}): {done.stderr[-500:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def inputs(folder: Path, n: int) -> Path:
    path = folder / f"rows{n}.jsonl"
    path.write_text("".join(json.dumps({"task": f"What time is it? ({i})"}) + "\n" for i in range(n)))
    return path


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    sample = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    ray_rows = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    if shutil.which("mcp-server-time") is None and not (Path(sys.executable).parent / "mcp-server-time").exists():
        raise SystemExit("needs mcp-server-time: pip install -e '.[examples]'")
    ENV["PATH"] = f"{Path(sys.executable).parent}:{ENV.get('PATH', '')}"
    root = Path(tempfile.mkdtemp(prefix="magent-batch-bench-"))
    try:
        for name, text in (("mcp.yaml", MCP), ("script.yaml", SCRIPT), ("clock.yaml", AGENT)):
            (root / name).write_text(text)
        agent = str(root / "clock.yaml")

        wall, cpu = magent("batch", agent, "--inputs", str(inputs(root, rows)), "--concurrency", "16", "--json",
                           home=root / "home-local")
        print(f"local executor: {rows} rows in {wall:.1f}s = {rows / wall:.1f} rows/s, "
              f"CPU {cpu / rows * 1000:.0f} ms/row (batch process and its MCP server)")

        seq_wall = seq_cpu = 0.0
        for i in range(sample):
            w, c = magent("run", agent, "-t", f"What time is it? ({i})", "--quiet", home=root / "home-seq")
            seq_wall += w
            seq_cpu += c
        per_run = seq_wall / sample
        print(f"sequential magent run: {per_run * 1000:.0f} ms/row, CPU {seq_cpu / sample * 1000:.0f} ms/row "
              f"(measured on {sample} processes, scaled to {rows}: {per_run * rows:.0f}s)")
        print(f"ratio: batch is {per_run * rows / wall:.1f}x faster than {rows} sequential magent run "
              f"processes (goal >= 20x)")

        if ray_rows:
            ray_part(root, agent, ray_rows)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def ray_part(root: Path, agent: str, n: int) -> None:
    try:
        import ray  # noqa: F401
    except ImportError:
        print("ray: not installed (pip install -e '.[ray]'); skipped")
        return
    cluster = subprocess.Popen([sys.executable, "-c", CLUSTER], env=ENV, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        address = cluster.stdout.readline().strip()
        rows = str(inputs(root, n))
        local, _ = magent("batch", agent, "--inputs", rows, "--concurrency", "2", "--json", home=root / "home-l2")
        on_ray, _ = magent("batch", agent, "--inputs", rows, "--executor", "ray", "--ray-address", address,
                           "--concurrency", "2", "--json", home=root / "home-ray")
        print(f"ray executor (local cluster, 2 CPUs, --concurrency 2): {n} rows in {on_ray:.1f}s = "
              f"{n / on_ray:.1f} rows/s; local executor at --concurrency 2: {local:.1f}s; overhead "
              f"{(on_ray - local) / n * 1000:+.0f} ms/row (each Ray row starts its own MCP server and "
              f"event loop; the driver's connection to the cluster is included)")
    finally:
        cluster.stdin.close()
        cluster.wait(timeout=60)


if __name__ == "__main__":
    main()
