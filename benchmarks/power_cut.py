"""The power-cut soak of issue 40: many power losses per durability mode, each then resumed.

Each cut is one trial of tests/support/powerflow.py on the lossy disk of
tests/support/lossyfs.py (FUSE; only what was fsynced survives, a name only once its
directory was fsynced, an unsynced append may come back torn at a sector), with its home on
that disk. The trials take the flows in turn: a ReAct agent calling a non-idempotent MCP tool
(its ledger outside the disk) and `kv.set`; the same with an approval gate answered by
`magent resume --approve`; a fan-out and a `map`; long-term memory writes; a follow-up with
`magent chat`; and a `magent batch`. The power is cut right after a sync point (the K-th fsync
the disk sees, K drawn from the flow's own count) or after a random change (any write,
create, rename); then the commands that continue it (`resume`, `chat`, `batch resume`) run
on what survived until it ends, and the README's promise for the mode is checked: every task
completes, no non-idempotent call ran twice (`sync`, `step`), no stored key is lost, memory.db
passes SQLite's integrity_check, every damaged checkpoint was moved aside, `trace` and
`checkpoints list` answer, never a traceback.

    python benchmarks/power_cut.py [--cuts 1000] [--seed 40] [--modes sync,step,exit]
        [--flows react,human,parallel,memory,followup,batch] [--jobs 2] [--keep DIR]

Prints a table per mode (cuts, how each ended, broken promises, the first few of them);
exits 1 if any promise broke. Trials run --jobs at a time, each on a disk of its own. A
bounded number of these runs in the suite (tests/test_power_cut.py). Needs /dev/fuse, fuse3
and mfusepy (the test extra).
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from support.powercut import fuse_missing  # noqa: E402
from support.powerflow import Trial  # noqa: E402


FLOWS = ("react", "human", "parallel", "memory", "followup", "batch")


def trial(work: Path, mode: str, flow: str, name: str) -> Trial:
    human = flow == "human"
    return Trial(work / name, mode, human=human, flow="react" if human else flow)


def soak(mode: str, cuts: int, seed: int, flows: list[str], jobs: int, work: Path) -> tuple[Counter, list[str]]:
    rng = random.Random(f"{seed}-{mode}")
    with ThreadPoolExecutor(jobs) as pool:  # the run's own count of sync points and changes, uncut
        calibrated = dict(zip(flows, pool.map(
            lambda flow: trial(work, mode, flow, f"{mode}-{flow}-calibrate").run(None), flows)))
    plan = []
    for n in range(cuts):
        flow = flows[n % len(flows)]
        kind = "syncs" if rng.random() < 0.5 else "ops"
        most = calibrated[flow].syncs if kind == "syncs" else calibrated[flow].ops
        plan.append((n, flow, kind, rng.randint(1, max(most, 1)), rng.randrange(1 << 30)))
    ends: Counter = Counter()
    broken: list[str] = []
    tally = threading.Lock()

    def one(n: int, flow: str, kind: str, count: int, cut_seed: int) -> None:
        done = trial(work, mode, flow, f"{mode}-{n}").run(kind, count, seed=cut_seed)
        shutil.rmtree(work / f"{mode}-{n}", ignore_errors=True)
        with tally:
            ends[f"{flow}: {done.outcome} (cut in {done.cut_during or 'no command'})"] += 1
            found = [f"{flow} {kind}={count} seed={cut_seed}: {problem}" for problem in done.broken]
            broken.extend(found)
            for problem in found:  # at once, so a soak stopped early still says what broke
                print(f"\n{mode}: broken: {problem}", file=sys.stderr, flush=True)
            print(f"\r{mode}: {sum(ends.values())}/{cuts} cuts, {len(broken)} broken", end="",
                  file=sys.stderr, flush=True)

    with ThreadPoolExecutor(jobs) as pool:
        for future in [pool.submit(one, *item) for item in plan]:
            future.result()
    print(file=sys.stderr)
    return ends, broken


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cuts", type=int, default=1000, help="cuts per mode")
    parser.add_argument("--seed", type=int, default=40)
    parser.add_argument("--modes", default="sync,step,exit")
    parser.add_argument("--flows", default=",".join(FLOWS), help="which flows take turns")
    parser.add_argument("--jobs", type=int, default=2, help="trials at once, each on its own disk")
    parser.add_argument("--keep", type=Path, help="work here and keep it (default: a temp dir)")
    args = parser.parse_args()
    if (why := fuse_missing()) is not None:
        print(f"power_cut: cannot mount the lossy disk: {why}", file=sys.stderr)
        return 2
    work = args.keep or Path(tempfile.mkdtemp(prefix="power-cut-"))
    failed = False
    try:
        for mode in args.modes.split(","):
            started = time.monotonic()
            flows = args.flows.split(",")
            if unknown := set(flows) - set(FLOWS):
                print(f"power_cut: unknown flows {sorted(unknown)}; known: {', '.join(FLOWS)}", file=sys.stderr)
                return 2
            ends, broken = soak(mode, args.cuts, args.seed, flows, args.jobs, work)
            print(f"\nmode {mode}: {args.cuts} cuts in {time.monotonic() - started:.0f} s, seed {args.seed}")
            print(f"  {'how it ended':<56} {'cuts':>6}")
            for end, count in sorted(ends.items()):
                print(f"  {end:<56} {count:>6}")
            print(f"  {'broken promises':<56} {len(broken):>6}")
            for problem in broken[:10]:
                print(f"    {problem[:300]}")
            failed = failed or bool(broken)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
