"""magent batch against a shell loop of magent run (issue 15).

A scripted one-tool agent (one call to the reference MCP server mcp-server-time, then an
answer) over ROWS inputs:

- local: ``magent batch`` with the local executor (one process, one mcp-server-time for
  all rows, --concurrency 16): wall time, rows per second, CPU per row (the batch process
  and its server, from the children's rusage);
- sequential: ``magent run`` once per row, one process after the other, as a shell loop
  does -- measured on SAMPLE processes and scaled to ROWS (said so in the output), with its
  CPU per row;
- ray (issue 34): on a cluster of two ``ray start`` nodes of one CPU each on this host, a
  model-bound batch of RAY_ROWS rows (``model_server.py``, BENCH_LATENCY seconds a call,
  default 0.5) through ``--executor ray`` against the local executor at --concurrency 8 (goal:
  within 1.2x its wall), and a CPU-bound one (4 x RAY_ROWS rows of a scripted agent) on the two
  nodes against one (goal: 1.6x faster) -- each as a command and as a warm session's second
  batch (see ``ray_part``).

The goal is a ratio of at least 20 between local and sequential.
Usage: python benchmarks/batch.py [ROWS=1000] [SAMPLE=30] [RAY_ROWS=36]    (ROWS=0: Ray only)
Needs the examples extra (mcp-server-time) and, for the Ray part, the ray extra.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import math
import os
import resource
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

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
    ray_rows = int(sys.argv[3]) if len(sys.argv) > 3 else 36
    if rows and not (shutil.which("mcp-server-time") or (Path(sys.executable).parent / "mcp-server-time").exists()):
        raise SystemExit("needs mcp-server-time: pip install -e '.[examples]'")
    ENV["PATH"] = f"{Path(sys.executable).parent}:{ENV.get('PATH', '')}"
    root = Path(tempfile.mkdtemp(prefix="magent-batch-bench-"))
    try:
        for name, text in (("mcp.yaml", MCP), ("script.yaml", SCRIPT), ("clock.yaml", AGENT)):
            (root / name).write_text(text)
        agent = str(root / "clock.yaml")
        if rows:
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
            ray_part(root, ray_rows)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def ray_part(root: Path, n: int) -> None:
    """The Ray executor on two ``ray start`` nodes of one CPU each (127.0.0.1 only): a model-bound
    batch against the local executor at the same concurrency, and a CPU-bound one on two nodes
    against one. Each is timed twice: the ``magent batch`` command (a cold driver and cold actors,
    as a user runs it) and the second of two ``magent.batch`` calls in one Python session (the
    actors kept warm)."""
    if importlib.util.find_spec("ray") is None:
        print("ray: not installed (pip install -e '.[ray]'); skipped")
        return
    latency = float(os.environ.get("BENCH_LATENCY", "0.5"))
    server = subprocess.Popen([sys.executable, str(Path(__file__).parent / "model_server.py"), str(latency)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    url = server.stdout.readline().strip()
    (root / "model.yaml").write_text(MODEL_AGENT.format(url=url))
    (root / "busy.script.yaml").write_text(BUSY_SCRIPT)
    (root / "busy.yaml").write_text(BUSY_AGENT)
    model_rows, busy_rows = inputs(root, n), inputs(root, 4 * n)
    try:
        with nodes(root, 2) as address:
            local = timed(root, "model.yaml", model_rows, "local", None)
            on_ray = timed(root, "model.yaml", model_rows, "ray", address)
            two = timed(root, "busy.yaml", busy_rows, "ray", address)
        with nodes(root, 1) as address:
            one = timed(root, "busy.yaml", busy_rows, "ray", address)
    finally:
        server.stdin.close()
        server.wait(timeout=30)
    ideal = math.ceil(n / 8) * 3 * latency
    print(f"ray, model-bound ({n} rows, a model answering after {latency:g}s, 3 calls a row, --concurrency 8, "
          f"ideal {ideal:.1f}s), two nodes of 1 CPU:")
    for what, figures in (("command", 0), ("session, warm", 1)):
        print(f"  {what}: local executor {local[figures]:.1f}s, ray {on_ray[figures]:.1f}s = "
              f"{on_ray[figures] / local[figures]:.2f}x the local wall (goal <= 1.2x)")
    print(f"ray, CPU-bound ({4 * n} rows of a scripted agent, 5 tool turns, no latency, --concurrency 8):")
    for what, figures in (("command", 0), ("session, warm", 1)):
        print(f"  {what}: one node {one[figures]:.1f}s, two nodes {two[figures]:.1f}s = "
              f"{one[figures] / two[figures]:.2f}x faster on two (goal >= 1.6x)")
    print(f"  (both nodes share this host's {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}: two nodes can "
          "be faster only by as many cores as are idle)")


MODEL_AGENT = """name: worker
role: bench
system_prompt: Work.
tools: [kv.*]
llm_config: {{model: openai/stub, endpoint: "{url}", api_key: sk-bench-not-a-key}}
"""
BUSY_SCRIPT = "responses:\n" + "".join(
    f"  - tool_calls: [{{name: kv.set, arguments: {{key: k{i}, value: v{i}}}}}]\n" for i in range(5)
) + "  - content: done\n"
BUSY_AGENT = """name: busy
role: bench
system_prompt: Work.
tools: [kv.*]
llm_config: {model: scripted, script: busy.script.yaml}
"""
SESSION = """
import json, sys, time, magent
agent, rows, executor, address = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] or None
walls = []
for _ in range(2):
    began = time.perf_counter()
    done = magent.batch(agent, rows, concurrency=8, executor=executor, ray_address=address)
    walls.append(time.perf_counter() - began)
    assert all(r.status == "completed" for r in done.rows), done.counts
print(json.dumps(walls))
"""


def timed(root: Path, agent: str, rows: Path, executor: str, address: str | None) -> tuple[float, float]:
    """(the command's wall, the warm second batch's wall in one session)."""
    where = ["--executor", executor, *(["--ray-address", address] if address else [])]
    command, _ = magent("batch", str(root / agent), "--inputs", str(rows), "--concurrency", "8", "--json", *where,
                        home=root / f"home-{executor}")
    done = subprocess.run([sys.executable, "-c", SESSION, str(root / agent), str(rows), executor, address or ""],
                          env={**ENV, "MAGENT_HOME": str(root / f"home-{executor}")}, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"session ({executor}) failed: {done.stderr[-800:]}")
    return command, json.loads(done.stdout.strip().splitlines()[-1])[1]


@contextlib.contextmanager
def nodes(root: Path, count: int) -> Iterator[str]:
    """``count`` nodes of one CPU each, every one a ``ray start --block`` process of ours in a
    process group of its own, every port on 127.0.0.1 chosen free; the head's address."""
    head_port = free_port()
    address = f"127.0.0.1:{head_port}"
    procs = []
    try:
        for i in range(count):
            ports = {flag: str(free_port()) for flag in (
                "--node-manager-port", "--object-manager-port", "--metrics-export-port", "--runtime-env-agent-port",
                "--dashboard-agent-grpc-port", "--dashboard-agent-listen-port")}
            role = (["--head", "--port", str(head_port),
                     "--include-dashboard", "false"] if i == 0 else ["--address", address])
            procs.append(subprocess.Popen(
                [str(Path(sys.executable).parent / "ray"), "start", "--block", *role, "--num-cpus", "1",
                 "--node-ip-address", "127.0.0.1", "--disable-usage-stats",
                 *[x for pair in ports.items() for x in pair]],
                env={**ENV, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "1"},  # (with 0, ray start refuses a 2nd node)
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
            wait_for_nodes(address, i + 1)
        yield address
    finally:  # `ray start --block` leaves its raylet and GCS behind on a signal: end each node's group
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for proc in reversed(procs):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, sig)
            time.sleep(3 if sig == signal.SIGTERM else 0)
        for proc in procs:
            proc.wait()


def wait_for_nodes(address: str, count: int) -> None:
    probe = ("import ray, sys; ray.init(address=sys.argv[1], logging_level='ERROR'); "
             "print(sum(1 for n in ray.nodes() if n['Alive']))")
    for _ in range(60):
        p = subprocess.run([sys.executable, "-c", probe, address], env=ENV, capture_output=True, text=True)
        if p.returncode == 0 and p.stdout.strip().endswith(str(count)):
            return
        time.sleep(1)
    raise SystemExit(f"the Ray cluster at {address} never had {count} nodes")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    main()
