"""Many tasks at once against a model with real latency, beside LangGraph (issue 34).

The workload: one ReAct agent per task against an OpenAI-compatible model server on 127.0.0.1
(``model_server.py``) that answers after LATENCY seconds; turns 1 and 2 call a key-value tool
once each, turn 3 answers. N tasks, C at once, every one checkpointed durably. It runs

- ``magent batch`` (the CLI, one process: its wall and CPU are the whole process's, start-up
  included, as a user sees them);
- ``asyncio.gather(magent.arun(...))`` under a semaphore of C (the API, one process);
- LangGraph, where the ``bench`` extra is installed: ``create_react_agent`` + ``ChatOpenAI`` +
  ``AsyncSqliteSaver`` with ``abatch`` (``max_concurrency=C``, ``durability="sync"``);

each in a fresh process, interleaved (the order rotates every round), and prints medians of the
rounds side by side: wall, wall / ideal (ideal = ceil(N/C) x 3 x LATENCY), CPU per task (the
worker process's user+system CPU, the server's not counted; for the API and LangGraph from just
before the first task, imports not counted) and the process's peak RSS.
C=1 runs min(N, 8) tasks (N of them would take N x 3 x LATENCY each round); the table says N.

    python benchmarks/throughput.py [--quick] [--json] [--tasks N] [--latency S] [--rounds R]
                                    [-c C ...] [--langgraph-python PATH]

``--quick``: C in {1, 16, 64}, 64 tasks, one round. ``--langgraph-python`` names an interpreter
that has the bench extra (default: this one), e.g. a scratch venv made with
``python -m venv /tmp/benchvenv && /tmp/benchvenv/bin/pip install -e '.[bench]'``.
On a busy machine the walls stretch; the load average is printed beside the table.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "MAGENT_FORBID_REMOTE_LLM": "1"}
AGENT = """name: worker
role: bench
system_prompt: Work.
tools: [kv.*]
llm_config: {{model: openai/stub, endpoint: "{url}", api_key: sk-bench-not-a-key}}
"""
SYSTEMS = ("langgraph", "api", "cli")
C1_TASKS = 8


# ------------------------------------------------------------------------------ the workers

def api_worker(url: str, c: int, n: int, folder: Path) -> dict:
    import asyncio

    import magent
    from magent.llm.factory import warm_import

    agent = folder / "worker.yaml"
    agent.write_text(AGENT.format(url=url))
    definition = magent.load(agent)
    warm_import(stream=False)  # what the first call would import (asked whole: no on_token)

    async def all_at_once() -> list:
        gate = asyncio.Semaphore(c)

        async def one(i: int):  # type: ignore[no-untyped-def]
            async with gate:
                return await magent.arun(definition, f"job {i}", home=folder / "home")

        return await asyncio.gather(*(one(i) for i in range(n)))

    cpu, began = time.process_time(), time.perf_counter()
    results = asyncio.run(all_at_once())
    wall, cpu = time.perf_counter() - began, time.process_time() - cpu
    bad = [r.error for r in results if not r.success]
    if bad:
        raise SystemExit(f"{len(bad)} magent tasks failed, e.g. {bad[0]}")
    return {"wall": wall, "cpu": cpu}


def langgraph_worker(url: str, c: int, n: int, folder: Path) -> dict:
    import asyncio

    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    from langgraph.prebuilt import create_react_agent

    store: dict[str, str] = {}

    @tool
    def kv_set(key: str, value: str) -> str:
        """Store value under key."""
        store[key] = value
        return "ok"

    async def all_at_once() -> tuple[list, float, float]:
        async with AsyncSqliteSaver.from_conn_string(str(folder / "checkpoints.sqlite")) as saver:
            model = ChatOpenAI(model="stub", base_url=url, api_key="sk-bench-not-a-key", max_retries=0)
            agent = create_react_agent(model, [kv_set], checkpointer=saver, prompt="Work.")
            inputs = [{"messages": [("user", f"job {i}")]} for i in range(n)]
            configs = [{"configurable": {"thread_id": f"t{i}"}, "max_concurrency": c, "recursion_limit": 20}
                       for i in range(n)]
            cpu, began = time.process_time(), time.perf_counter()
            out = await agent.abatch(inputs, configs, durability="sync")
            return out, time.perf_counter() - began, time.process_time() - cpu

    out, wall, cpu = asyncio.run(all_at_once())
    bad = [o for o in out if o["messages"][-1].content != "done"]
    if bad:
        raise SystemExit(f"{len(bad)} LangGraph tasks did not finish with the answer")
    return {"wall": wall, "cpu": cpu}


# ------------------------------------------------------------------------------ one measurement

def run_child(args: list[str], env: dict) -> tuple[str, float, float, float]:
    """Run ``args`` to the end; (stdout, wall s, CPU s, peak RSS MB) of that process alone."""
    began = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(args, env=env, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - began
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text, problem = out.read(), err.read()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args[1:5])} failed ({proc.returncode}): {problem.strip()[-600:]}")
    return text, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def one(system: str, url: str, c: int, n: int, folder: Path, lg_python: str) -> dict:
    folder.mkdir(parents=True)
    if system == "cli":
        (folder / "worker.yaml").write_text(AGENT.format(url=url))
        rows = folder / "rows.jsonl"
        rows.write_text("".join(json.dumps({"task": f"job {i}"}) + "\n" for i in range(n)))
        text, wall, cpu, rss = run_child(
            [sys.executable, "-m", "magent", "batch", str(folder / "worker.yaml"), "--inputs", str(rows),
             "--concurrency", str(c), "--json"], {**ENV, "MAGENT_HOME": str(folder / "home")})
        done = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
        if sum(1 for d in done if d.get("success")) != n:
            raise SystemExit(f"magent batch: {n} rows, {len(done)} reported, not all completed")
        return {"wall": wall, "cpu": cpu, "rss": rss}
    python = lg_python if system == "langgraph" else sys.executable
    text, _, _, rss = run_child([python, str(HERE), "--worker", system, url, str(c), str(n), str(folder)], ENV)
    figures = json.loads(text.strip().splitlines()[-1])
    return {**figures, "rss": rss}


# ------------------------------------------------------------------------------ the table

def langgraph_missing(python: str) -> str | None:
    p = subprocess.run([python, "-c", "import langgraph.prebuilt, langgraph.checkpoint.sqlite.aio, langchain_openai"],
                       capture_output=True, text=True)
    return None if p.returncode == 0 else (p.stderr.strip().splitlines() or ["not importable"])[-1]


def table(rows: list[dict], systems: tuple[str, ...]) -> str:
    names = {"langgraph": "LangGraph", "api": "magent API", "cli": "magent CLI"}
    head = ["C", "N", "ideal"] + [f"{names[s]} wall (x ideal)" for s in systems] + [
        "CPU/task ms " + " / ".join(names[s].replace("magent ", "") for s in systems),
        "peak RSS MB " + " / ".join(names[s].replace("magent ", "") for s in systems)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [str(r["C"]), str(r["N"]), f"{r['ideal']:.1f} s"]
        cells += [f"{r[s]['wall']:.1f} s ({r[s]['wall'] / r['ideal']:.2f})" for s in systems]
        cells.append(" / ".join(f"{r[s]['cpu_ms']:.0f}" for s in systems))
        cells.append(" / ".join(f"{r[s]['rss_mb']:.0f}" for s in systems))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        system, url, c, n, folder = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), Path(sys.argv[6])
        worker = api_worker if system == "api" else langgraph_worker
        print(json.dumps(worker(url, c, n, folder)))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON document")
    parser.add_argument("--tasks", type=int)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--rounds", type=int)
    parser.add_argument("-c", "--concurrency", type=int, action="append")
    parser.add_argument("--langgraph-python", default=sys.executable)
    parser.add_argument("--only", choices=SYSTEMS, action="append", help="run only these systems")
    a = parser.parse_args()
    levels = a.concurrency or ([1, 16, 64] if a.quick else [1, 16, 64, 256])
    tasks = a.tasks or (64 if a.quick else 256)
    rounds = a.rounds or (1 if a.quick else 2)
    systems = tuple(a.only or SYSTEMS)
    why = langgraph_missing(a.langgraph_python) if "langgraph" in systems else None
    if why:
        print(f"LangGraph: not measured ({why}; pip install -e '.[bench]')", file=sys.stderr)
        systems = tuple(s for s in systems if s != "langgraph")
    server = subprocess.Popen([sys.executable, str(HERE.parent / "model_server.py"), str(a.latency)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    url = server.stdout.readline().strip()
    load_before = os.getloadavg()
    figures: dict[tuple[int, str], list[dict]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="magent-throughput-") as tmp:
            for r in range(rounds):
                for c in levels:
                    n = min(tasks, C1_TASKS) if c == 1 else tasks
                    order = systems[r % len(systems):] + systems[:r % len(systems)]
                    for system in order:
                        got = one(system, url, c, n, Path(tmp) / f"{system}-{c}-{r}", a.langgraph_python)
                        figures.setdefault((c, system), []).append(got)
                        if not a.json:
                            print(f"  round {r + 1}, C={c}, {system}: {got['wall']:.1f} s", file=sys.stderr)
    finally:
        server.stdin.close()
        server.wait(timeout=30)
    rows = []
    for c in levels:
        n = min(tasks, C1_TASKS) if c == 1 else tasks
        row: dict = {"C": c, "N": n, "ideal": math.ceil(n / c) * 3 * a.latency}
        for s in systems:
            runs = figures[(c, s)]
            row[s] = {"wall": statistics.median(x["wall"] for x in runs),
                      "cpu_ms": statistics.median(x["cpu"] for x in runs) / n * 1000,
                      "rss_mb": statistics.median(x["rss"] for x in runs)}
        rows.append(row)
    machine = {"cpus": os.cpu_count(), "load_before": load_before, "load_after": os.getloadavg()}
    if a.json:
        print(json.dumps({"latency": a.latency, "tasks": tasks, "rounds": rounds, "machine": machine,
                          "rows": rows}, indent=1))
        return
    print(table(rows, systems))
    print(f"(model latency {a.latency} s, 3 calls a task; median of {rounds} round(s); {os.cpu_count()} CPUs, "
          f"load average {load_before[0]:.1f} before, {machine['load_after'][0]:.1f} after)")


if __name__ == "__main__":
    main()
