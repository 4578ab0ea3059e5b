"""Benchmark: spawn → first model call of ``magent run``, and of ``magent resume`` (issue 17 item 3).

The workload is "long-react" as a user runs it: one scripted agent whose every turn calls the
built-in ``kv.get`` tool, which returns the same 10,000-byte value (stored by a first ``kv.set``
turn), N turns, then an answer. Each run is a fresh ``magent`` process; the time is from just
before the spawn to the ``ts`` of the first ``llm_call`` event the run writes (a scripted model
answers at once, so that is when the first model call happened); the process is then stopped
(SIGKILL at its first tool call, through ``MAGENT_FAILPOINT``) rather than waited for.

- run: N = 10 and N = 1000 (the figure must not grow with N), in one home where each agent ran
  once before (a long script's parse is kept under the home: ``magent.config.parsecache``), and
  N = 1000 with a script new to that home, which is parsed from its YAML;
- resume: a run is killed with SIGKILL (``MAGENT_FAILPOINT``) just after its 500th tool result
  of 1000, then ``magent resume ID`` is spawned and timed to its first new model call;
- baselines, measured in the same run: a bare interpreter, ``python -c pass``; and the stack's
  floor, an interpreter that only imports what any ``magent run`` must load from its chosen
  libraries (``STACK``: asyncio, typer with its pydantic adapters, pydantic's models and plugin
  loader, pyyaml, filelock). What a run takes beyond the floor is magent's own: its modules, its
  models' schemas, its work before the first call.

    python benchmarks/startup.py [--runs 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

PAYLOAD = 10_000
MAGENT = [sys.executable, "-m", "magent"]
GOALS = {"run": 0.35, "resume": 0.5}


def write_agent(folder: Path, n: int, tag: str = "") -> Path:
    """A scripted agent: one ``kv.set`` of a 10,000-byte value, then ``n`` turns of ``kv.get``
    (``tag`` changes the replies' text, making another script of the same length)."""
    folder.mkdir(parents=True, exist_ok=True)
    value = "x" * (PAYLOAD - 2)  # kv.get returns it JSON-quoted: 10,000 bytes
    lines = ["responses:", "  - content: storing the page",
             "    tool_calls:", f"      - {{name: kv.set, arguments: {{key: page, value: {value}}}}}"]
    for i in range(n):
        lines += [f"  - content: step {i}{tag}", "    tool_calls:", "      - {name: kv.get, arguments: {key: page}}"]
    lines.append("  - content: done")
    (folder / "script.yaml").write_text("\n".join(lines) + "\n")
    agent = folder / "long.yaml"
    agent.write_text("name: long\nrole: benchmark\nsystem_prompt: Read the page until told to stop.\n"
                     f"tools: [kv.get, kv.set]\nmax_iterations: {n + 5}\n"
                     "llm_config: {model: scripted, script: script.yaml}\n")
    return agent


def _env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a magent process. Python caches compiled modules as it does for any
    user (an installed package has them from pip; PYTHONDONTWRITEBYTECODE would make every
    process compile magent again, which is not what a user's start-up costs)."""
    env = {**os.environ, "MAGENT_HOME": str(home), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    for name in ("MAGENT_FAILPOINT", "PYTHONDONTWRITEBYTECODE"):
        env.pop(name, None)
    env.update(extra)
    return env


def _events(home: Path, task_id: str) -> list[dict]:
    path = home / "tasks" / task_id / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _stamp(event: dict) -> float:
    return datetime.fromisoformat(event["ts"]).timestamp()


def _task_ids(home: Path) -> set[str]:
    tasks = home / "tasks"
    return {p.name for p in tasks.iterdir()} if tasks.exists() else set()


STOP = "after_tool_intent@1"
"""Where a timed process is stopped (SIGKILL, through ``MAGENT_FAILPOINT``): just after its first
model call asked for a tool, so a timing does not wait for the rest of the run."""


def spawn_to_first_call(agent: Path, home: Path, *, failpoint: str = STOP) -> tuple[float, str]:
    """Run the agent as a fresh process; seconds from spawn to its first model call, and the task id."""
    before = _task_ids(home)
    extra = {"MAGENT_FAILPOINT": failpoint}
    began = time.time()
    subprocess.run([*MAGENT, "run", str(agent), "-t", "read", "--quiet"], env=_env(home, **extra),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=agent.parent)
    (task_id,) = _task_ids(home) - before
    first = next(e for e in _events(home, task_id) if e["type"] == "llm_call")
    return _stamp(first) - began, task_id


def resume_to_first_call(home: Path, task_id: str, cwd: Path) -> float:
    """Spawn ``magent resume ID``; seconds to its first new model call (stopped just after it)."""
    seen = len(_events(home, task_id))
    began = time.time()
    p = subprocess.run([*MAGENT, "resume", task_id, "--json"], env=_env(home, MAGENT_FAILPOINT=STOP), cwd=cwd,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if p.returncode not in (0, -9):
        raise RuntimeError(f"magent resume failed ({p.returncode}): {p.stderr.strip()}")
    first = next(e for e in _events(home, task_id)[seen:] if e["type"] == "llm_call")
    return _stamp(first) - began


STACK = ("import asyncio, typer, typer.main, typer._adapters, pydantic, pydantic.main, pydantic.fields, "
         "pydantic.type_adapter, pydantic.plugin._loader, yaml, filelock")
"""What every ``magent run`` imports from the libraries it is built on before its first model call
(typer loads pydantic to convert parameters; pydantic loads its plugin loader, and with it
importlib.metadata, when it builds its first validator, plugins off or not)."""


READ_STACK = "import typer, typer.main, typer._adapters, pydantic.plugin._loader, json"
"""What ``magent trace ID`` and ``magent tasks list`` import from the libraries they are built on:
typer, with the pydantic it converts every parameter's value through (a ``TypeAdapter`` per
parameter, even one not given) and pydantic's plugin loader, which building the first one
imports (and with it importlib.metadata); json. Every module either command imports that is not
magent's own is among these (checked with ``sys.modules`` on 2026-11-23)."""


def stack_floor(runs: int, stack: str = STACK) -> float:
    """Median seconds of an interpreter that imports ``stack`` and nothing of magent."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run([sys.executable, "-c", stack], env=env, check=True)
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def bare_interpreter(runs: int) -> float:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"])
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def measure(runs: int = 5, *, resume_n: int = 1000, kill_at: int = 500) -> dict:
    """Medians over ``runs`` of each figure, each run type interleaved with the baseline."""
    out: dict[str, list[float]] = {"bare": [], "floor": [], "run_10": [], "run_1000": [], "run_1000_new": [],
                                   "resume": []}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        home = root / "home"
        agents = {n: write_agent(root / f"n{n}", n) for n in (10, 1000)}
        if resume_n not in agents:
            agents[resume_n] = write_agent(root / f"n{resume_n}", resume_n)
        for agent in agents.values():  # compiles what is not compiled yet; keeps the scripts' parse
            spawn_to_first_call(agent, home)
        for r in range(runs):
            out["bare"].append(bare_interpreter(1))
            out["floor"].append(stack_floor(1))
            for n in (10, 1000):
                out[f"run_{n}"].append(spawn_to_first_call(agents[n], home)[0])
            new = write_agent(root / f"new{r}", 1000, tag=f" of run {r}")
            out["run_1000_new"].append(spawn_to_first_call(new, home)[0])
            # kill -9 just after the 500th tool result of 1000 (the kv.set turn is result 1)
            _, task_id = spawn_to_first_call(agents[resume_n], home, failpoint=f"after_tool_entry@{kill_at + 1}")
            out["resume"].append(resume_to_first_call(home, task_id, agents[resume_n].parent))
    return {k: statistics.median(v) for k, v in out.items()} | {"runs": runs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    opts = ap.parse_args()
    res = measure(opts.runs)
    if opts.json:
        print(json.dumps(res))
        return
    bare = res["bare"]
    print(f"start-up, medians of {res['runs']} runs (bare interpreter `python -c pass`: {bare:.3f} s; "
          f"the stack's imports alone: {res['floor']:.3f} s)")
    for key, label, goal in (("run_10", "magent run, N=10: spawn -> first model call", GOALS["run"]),
                             ("run_1000", "magent run, N=1000: spawn -> first model call", GOALS["run"]),
                             ("run_1000_new", "  the same, a script new to the home", GOALS["run"]),
                             ("resume", "magent resume (killed at 500/1000) -> first new call", GOALS["resume"])):
        print(f"  {label:55} {res[key]:6.3f} s  {res[key] / bare:5.1f}x bare  "
              f"{res[key] - res['floor']:+6.3f} s beyond the stack   goal <= {goal} s")


if __name__ == "__main__":
    main()
