"""Benchmark: how long a run with a real model takes to exit (issue 18 item 4, issue 10 item 6).

Against the local OpenAI-compatible stub (tests/support/openai_stub.py), medians over
repeated ``magent run`` subprocesses of:

- answer → exit: from the ``run_finished`` event (``--json``) to the process exit;
- signal → exit: from SIGINT to the process group (Ctrl-C) while the model call is
  outstanding to the process exit (code 130, a checkpoint written);

and, measured in the same run as the baseline, the teardown of a plain interpreter
that imported the same libraries (what a magent process paid before it skipped it).

    python benchmarks/run_exit.py [--runs 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from support.exiting import seconds_until_exit, teardown_baseline  # noqa: E402
from support.openai_stub import OpenAIStub  # noqa: E402


def agent(folder: Path, url: str) -> Path:
    path = folder / "talker.yaml"
    path.write_text(f"name: talker\nrole: answers\nsystem_prompt: Answer briefly.\n"
                    f"llm_config: {{model: openai/stub-model, endpoint: '{url}', max_retries: 0}}\n")
    return path


def popen(args: list[str], env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "magent", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=env, start_new_session=True)


def answer_to_exit(folder: Path, env: dict[str, str]) -> float:
    with OpenAIStub() as stub:
        stub.text("Forty two.")
        proc = popen(["run", str(agent(folder, stub.url)), "-t", "answer", "--json"], env)
        seconds, _ = seconds_until_exit(proc, lambda line: '"type": "run_finished"' in line)
    assert proc.returncode == 0
    return seconds


def signal_to_exit(folder: Path, env: dict[str, str]) -> float:
    with OpenAIStub() as stub:
        stub.hang(3600)
        proc = popen(["run", str(agent(folder, stub.url)), "-t", "wait"], env)
        while not stub.received:
            time.sleep(0.02)
        time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGINT)
        started = time.monotonic()
        proc.communicate(timeout=120)
        seconds = time.monotonic() - started
    assert proc.returncode == 130
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    figures: dict[str, list[float]] = {"baseline_teardown": [], "answer_to_exit": [], "signal_to_exit": []}
    with tempfile.TemporaryDirectory(prefix="magent-bench-") as tmp:
        env = {**os.environ, "MAGENT_HOME": str(Path(tmp) / "home")}
        for _ in range(args.runs):  # interleaved, so a change of load hits all three alike
            figures["baseline_teardown"].append(teardown_baseline())
            figures["answer_to_exit"].append(answer_to_exit(Path(tmp), env))
            figures["signal_to_exit"].append(signal_to_exit(Path(tmp), env))
    medians = {name: statistics.median(values) for name, values in figures.items()}
    base = medians["baseline_teardown"]
    report = {name: {"median": round(m, 3), "min": round(min(figures[name]), 3),
                     "max": round(max(figures[name]), 3), "ratio_to_baseline": round(m / base, 3)}
              for name, m in medians.items()}
    if args.json:
        print(json.dumps({"runs": args.runs, "figures": report}, indent=2))
    else:
        print(f"{args.runs} runs each, median (min-max), ratio to the baseline teardown")
        for name, fig in report.items():
            print(f"  {name:<18} {fig['median']:.3f} s ({fig['min']:.3f}-{fig['max']:.3f})  "
                  f"x{fig['ratio_to_baseline']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
