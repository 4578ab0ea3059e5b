"""Workload "long-react" (issue 3): one agent on the scripted model; each turn calls an in-process
tool ``echo(n)`` returning exactly 10,000 bytes; after N turns it answers.

Prints: median per-step time (durable writes included) and its ratio to the fsync floor measured in
the same run (the same writes with no engine around them: see ``fsync_floor``; in mode sync also to
the sync floor, those writes with the reply made durable before its tool as sync does), process CPU per
step, first-10 vs last-10 step medians, checkpoint size at step 10 and at step N, and total bytes on
disk against N x 10,000. ``measure()`` returns the figures (the benchmark entry point calls it).
Usage: python benchmarks/long_react.py [N] [repeats] [--durability sync|step|exit|all]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

PAYLOAD = 10_000


def write_agent(folder: Path, n: int) -> Path:
    lines = ["responses:"]
    for i in range(n):
        lines.append(f"  - content: step {i}")
        lines.append("    tool_calls:")
        lines.append(f"      - {{name: bench.echo, arguments: {{n: {i}}}}}")
    lines.append("  - content: done")
    (folder / "script.yaml").write_text("\n".join(lines) + "\n")
    agent = folder / "long.yaml"
    agent.write_text(
        "name: long\nrole: benchmark\nsystem_prompt: Call echo until told to stop.\n"
        f"tools: [bench.echo]\nmax_iterations: {n + 5}\n"
        "llm_config: {model: scripted, script: script.yaml}\n")
    return agent


def timed_factory(stamps: list[tuple[float, float]], times: list | None = None, program_gc: bool = False):
    """A model factory like magent's own that notes the wall and process CPU time of every model
    call in ``stamps`` (and, given ``times``, ``os.times()`` there: user and system CPU apart).
    ``program_gc``: the first call sets the garbage collector as the ``magent`` program does once
    its run is going (``cli.collector.running``: what start-up made is frozen)."""
    from magent.cli import collector
    from magent.llm.factory import make_client

    def factory(config, *, agent, base_dir, cursors):
        client = make_client(config, agent=agent, base_dir=base_dir, cursors=cursors)

        class Timed:
            def supports_tools(self, model):
                return True

            async def complete(self, request, on_token=None, *, on_attempt=None):
                if not stamps and program_gc:
                    collector.running()   # (``magent run`` does it at the run's first event)
                stamps.append((time.perf_counter(), time.process_time()))
                if times is not None:
                    times.append(os.times())
                return await client.complete(request, on_token)

        return Timed()

    return factory


FLOOR_STEADY = 2.0
"""The widest spread of the fsync floor's measures around the runs (upper quartile / lower
quartile) for which a ratio to it is printed as a figure. On a quiet disk the measures scatter by
about a third (0.66-1.26 ms here, quartiles 1.3x apart); under another program's disk load they
were seen to swing from 0.7 to 20 ms within a minute."""


def floor_note(floors_ms: list[float]) -> str:
    """'' when the floor held steady around the runs, else why the ratio to it cannot be read."""
    if len(floors_ms) < 2:
        return ""
    low, _, high = statistics.quantiles(floors_ms, n=4, method="inclusive")
    if high <= FLOOR_STEADY * low:
        return ""
    return (f"the floor moved {min(floors_ms):.2f}-{max(floors_ms):.2f} ms during the runs "
            f"(quartiles {high / low:.1f}x apart): the disk's load changed, so the ratio cannot be "
            "read; run again quiet")


def fsync_floor(directory: Path, steps: int = 30, *, reply: bool = False,
                cpu: list[float] | None = None) -> float:
    """The median time (s) of one step's durable writes with no engine around them: a 10.5 KB
    line appended to a JSON Lines file and fsynced, a 750-byte checkpoint written to a temp file,
    fsynced and linked into place, and the directory fsynced (what a step of the long-react
    workload writes, done the plain way).

    ``reply``: the writes of a step in durability ``sync`` (the default), which makes the model's
    reply durable before its tool runs: first a 300-byte reply line appended and fsynced on its
    own, then the above. Mode ``step`` makes the step durable once, as the plain floor does.

    ``cpu``: gets the process CPU (user + system) of each step's writes, the kernel's work for
    them included: the part of a step's CPU that no engine can leave out."""
    directory.mkdir(parents=True, exist_ok=True)
    line = b'{"role":"tool","content":"' + b"x" * PAYLOAD + b'"}\n'
    answer = b'{"role":"assistant","content":"' + b"y" * 260 + b'"}\n'
    checkpoint = b"{" + b'"k":"v",' * 90 + b'"end":1}'
    log = os.open(directory / "entries.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    times = []
    try:
        for i in range(steps):
            began = time.perf_counter()
            began_cpu = time.process_time()
            if reply:
                os.write(log, answer)
                os.fsync(log)
            os.write(log, line)
            os.fsync(log)
            temp = directory / f".checkpoint_{i:03d}.json.tmp"
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.write(fd, checkpoint)
            os.fsync(fd)
            os.close(fd)
            os.link(temp, directory / f"checkpoint_{i:03d}.json")
            os.unlink(temp)
            dfd = os.open(directory, os.O_RDONLY)
            os.fsync(dfd)
            os.close(dfd)
            times.append(time.perf_counter() - began)
            if cpu is not None:
                cpu.append(time.process_time() - began_cpu)
    finally:
        os.close(log)
    return statistics.median(times)


def both_floors(directory: Path, cpu: list[float] | None = None) -> tuple[float, float]:
    """(plain floor, sync floor) measured side by side in ``directory``; ``cpu`` gets the sync
    floor's CPU per step."""
    return fsync_floor(directory / "plain"), fsync_floor(directory / "sync", reply=True, cpu=cpu)


async def one_run(n: int, home: Path, durability: str | None = None) -> dict:
    os.environ["MAGENT_HOME"] = str(home)
    from magent.engine.context import RunOptions
    from magent.engine.graph import load_target
    from magent.engine.session import start_run
    from magent.tools.function import FunctionProvider

    folder = home.parent / "defs"
    folder.mkdir(exist_ok=True)
    graph = load_target(str(write_agent(folder, n)))

    def echo(n: int) -> str:
        text = f"{n}:"
        return text + "x" * (PAYLOAD - len(text))

    tools = FunctionProvider("bench")
    tools.add("echo", echo, "Echo n, padded to 10,000 bytes.",
              {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
              idempotent=True)
    stamps: list[tuple[float, float]] = []
    times: list = []
    # The collector as in ``magent run`` (cli/app.py and cli/collector.py): collecting seldom while
    # it starts, then what start-up made frozen once the run goes. Without it the run would pay,
    # every few hundred steps, full collections over start-up's objects that the program never pays.
    from magent.cli import collector

    collector.starting()
    options = RunOptions(llm_factory=timed_factory(stamps, times, program_gc=True), extra_providers=[tools])
    if durability is not None:
        options.durability = durability
    outcome = await start_run(graph, "benchmark", options=options)
    assert outcome.status.value == "completed", outcome
    steps = [b[0] - a[0] for a, b in zip(stamps, stamps[1:])]
    cpu = [b[1] - a[1] for a, b in zip(stamps, stamps[1:])]
    # Mean user and system (kernel: writes, fsyncs, thread wake-ups) CPU per step, the first
    # step (one-time set-up) left out.
    spans = max(1, len(times) - 2)
    user = (times[-1].user - times[1].user) / spans if len(times) > 2 else 0.0
    system = (times[-1].system - times[1].system) / spans if len(times) > 2 else 0.0
    task_dir = home / "tasks" / outcome.task_id
    turn_cps = []
    import json

    for p in sorted(task_dir.glob("checkpoint_*.json"), key=lambda p: int(p.stem.split("_")[1])):
        if json.loads(p.read_bytes()).get("reason", "llm_turn") == "llm_turn":  # left out since schema 9
            turn_cps.append(p.stat().st_size)
    total = sum(p.stat().st_size for p in task_dir.rglob("*") if p.is_file())
    checkpoint_bytes = sum(p.stat().st_size for p in task_dir.glob("checkpoint_*.json"))
    return {"task_id": outcome.task_id, "steps": steps, "cpu": cpu, "user": user, "system": system, "cp10": turn_cps[min(9, len(turn_cps) - 1)],
            "cpN": turn_cps[-1], "total": total,
            "files": {p.name: p.stat().st_size for p in task_dir.iterdir() if p.is_file()
                      and not p.name.startswith("checkpoint_")}, "checkpoints": len(turn_cps),
            "checkpoint_bytes": checkpoint_bytes}


def measure(n: int = 1000, repeats: int = 3, durability: str | None = None) -> dict:
    """Run the workload ``repeats`` times in this process (each run between two measures of the
    fsync floor in the same directory, so both see the same load) and return the figures:
    ``per_step_ms``, ``floor_ms``, ``ratio`` (per-step / floor), ``floors_ms`` (every measure of
    the floor: a spread wider than ``FLOOR_STEADY`` means the disk's load changed during the runs,
    and the ratio cannot be read), ``cpu_ms`` (process CPU per
    step; ``user_ms``/``system_ms``: its mean user and kernel parts; ``floor_cpu_ms``: the sync
    floor's own CPU per step, its writes' share that no engine can leave out), ``first10_ms``, ``last10_ms``,
    ``flatness`` (last10 / first10), ``cp10``/``cpN`` (checkpoint bytes at step 10 and N), ``disk``
    (bytes on disk / (N x 10,000)), ``files`` (bytes per file but checkpoints), ``checkpoint_bytes``."""
    runs, floors, sync_floors, floor_cpu = [], [], [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            for where in ("floor", None, "floor-after"):
                if where is None:
                    runs.append(asyncio.run(one_run(n, Path(tmp) / "home", durability)))
                    continue
                plain, sync = both_floors(Path(tmp) / where, floor_cpu)
                floors.append(plain)
                sync_floors.append(sync)
    med = statistics.median(statistics.median(r["steps"]) for r in runs)
    first = statistics.median(statistics.median(r["steps"][:10]) for r in runs)
    last = statistics.median(statistics.median(r["steps"][-10:]) for r in runs)
    floor = statistics.median(floors)
    sync_floor = statistics.median(sync_floors)
    # The floor of the writes this mode makes durable per step: sync adds the reply's own fsync.
    own_floor = sync_floor if (durability or "sync") == "sync" else floor
    r0 = runs[0]
    return {"n": n, "repeats": repeats, "durability": durability or "sync",
            "per_step_ms": med * 1000, "floor_ms": floor * 1000, "ratio": med / floor,
            "floors_ms": [f * 1000 for f in floors],
            "sync_floor_ms": sync_floor * 1000, "sync_floors_ms": [f * 1000 for f in sync_floors],
            "own_floor_ms": own_floor * 1000, "own_ratio": med / own_floor,
            "cpu_ms": statistics.median(statistics.median(r["cpu"]) for r in runs) * 1000,
            "user_ms": statistics.median(r["user"] for r in runs) * 1000,
            "system_ms": statistics.median(r["system"] for r in runs) * 1000,
            "floor_cpu_ms": statistics.median(floor_cpu) * 1000,
            "first10_ms": first * 1000, "last10_ms": last * 1000, "flatness": last / first,
            "cp10": r0["cp10"], "cpN": r0["cpN"], "disk": r0["total"] / (n * PAYLOAD),
            "total": r0["total"], "files": r0["files"], "checkpoints": r0["checkpoints"],
            "checkpoint_bytes": r0["checkpoint_bytes"]}


def report(m: dict) -> None:
    n = m["n"]
    print(f"long-react N={n}, durability {m['durability']}, {m['repeats']} runs (medians)")
    print(f"  per-step time           {m['per_step_ms']:7.3f} ms   = {m['ratio']:.2f} x the fsync floor "
          f"({m['floor_ms']:.3f} ms, measured in the same run; goal <= 2)")
    if m["durability"] == "sync":
        print(f"                            = {m['own_ratio']:.2f} x the sync floor ({m['own_floor_ms']:.3f} ms: "
              "the same writes with the reply fsynced before its tool, as sync does)")
    moved = floor_note(m["floors_ms"]) or floor_note(m["sync_floors_ms"])
    if moved:
        print(f"  NOTE: {moved}")
    print(f"  process CPU per step    {m['cpu_ms']:7.3f} ms   (goal <= 2 ms; mean user {m['user_ms']:.3f} ms "
          f"+ system {m['system_ms']:.3f} ms;\n"
          f"                          the sync floor's own writes take {m['floor_cpu_ms']:.3f} ms of CPU per step)")
    print(f"  first 10 / last 10      {m['first10_ms']:7.3f} / {m['last10_ms']:.3f} ms   ratio "
          f"{m['flatness']:.2f} (goal: flat, <= 1.5)")
    print(f"  checkpoint at step 10   {m['cp10']} bytes; at step {n}: {m['cpN']} bytes "
          f"({(m['cpN'] / m['cp10'] - 1) * 100:+.1f}%, target within ±10%)")
    print(f"  total bytes on disk     {m['total']:,} = {m['disk']:.3f} x N x 10,000")
    print("  files:", ", ".join(f"{k} {v:,}" for k, v in sorted(m["files"].items())),
          f", {m['checkpoints']} turn checkpoints")
    # Where the bytes beyond the N tool results go, per step (entries.jsonl holds the results).
    per_step = dict(m["files"], **{"checkpoints": m["checkpoint_bytes"]})
    per_step["entries.jsonl"] = per_step.get("entries.jsonl", 0) - n * PAYLOAD
    print("  per step beyond K:     ", ", ".join(f"{k} {v / n:,.0f} B" for k, v in
                                               sorted(per_step.items(), key=lambda kv: -kv[1]) if v / n >= 1),
          f"(total {(m['total'] - n * PAYLOAD) / n:,.0f} B; guard <= {0.35 * PAYLOAD:,.0f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("n", nargs="?", type=int, default=1000, help="model turns (default 1000)")
    parser.add_argument("repeats", nargs="?", type=int, default=3, help="runs (default 3)")
    parser.add_argument("--durability", default="sync",
                        help="sync, step, exit, or 'all' to compare the three (default sync)")
    args = parser.parse_args()
    modes = ["sync", "step", "exit"] if args.durability == "all" else [args.durability]
    for mode in modes:
        report(measure(args.n, args.repeats, mode))


if __name__ == "__main__":
    main()
