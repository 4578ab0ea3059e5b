"""The power-cut soak of issue 40: many power losses per durability mode, each then resumed.

Each cut is one trial of tests/support/powerflow.py on the lossy disk of
tests/support/lossyfs.py (FUSE; only what was fsynced survives, a name only once its
directory was fsynced, an unsynced append may come back torn at a sector): `magent run`
of an agent whose every turn calls a non-idempotent MCP tool (its ledger outside the disk)
and `kv.set`, then a tool node, with its home on the disk; every other trial adds an
approval gate answered by `magent resume --approve` on the same disk. The power is cut right
after a sync point (the K-th fsync the disk sees, K drawn from the run's own count) or after a
random change (any write, create, rename); then `magent resume` runs on what survived until
the task ends, and the README's promise for the mode is checked: the task completes, no
non-idempotent call ran twice (`sync`, `step`), no stored key is lost, every damaged
checkpoint was moved aside, `trace` and `checkpoints list` answer, never a traceback.

    python benchmarks/power_cut.py [--cuts 1000] [--seed 40] [--modes sync,step,exit] [--keep DIR]

Prints a table per mode (cuts, how each ended, broken promises, the first few of them);
exits 1 if any promise broke. A bounded number of these runs in the suite
(tests/test_power_cut.py). Needs /dev/fuse, fuse3 and mfusepy (the test extra).
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from support.powercut import fuse_missing  # noqa: E402
from support.powerflow import Trial  # noqa: E402


def soak(mode: str, cuts: int, seed: int, work: Path) -> tuple[Counter, list[str]]:
    rng = random.Random(f"{seed}-{mode}")
    points: dict[bool, tuple[int, int]] = {}
    ends: Counter = Counter()
    broken: list[str] = []
    for n in range(cuts):
        human = n % 2 == 1
        if human not in points:  # the run's own count of sync points and changes, uncut
            trial = Trial(work / f"{mode}-calibrate-{human}", mode, human=human).run(None)
            points[human] = (max(trial.syncs, 1), max(trial.ops, 1))
        kind = "syncs" if rng.random() < 0.5 else "ops"
        count = rng.randint(1, points[human][0 if kind == "syncs" else 1])
        folder = work / f"{mode}-{n}"
        trial = Trial(folder, mode, human=human).run(kind, count, seed=rng.randrange(1 << 30))
        ends[f"{trial.outcome} (cut in {trial.cut_during or 'no command'})"] += 1
        for problem in trial.broken:
            broken.append(f"{'human' if human else 'react'} {kind}={count}: {problem}")
        shutil.rmtree(folder, ignore_errors=True)
        print(f"\r{mode}: {n + 1}/{cuts} cuts, {len(broken)} broken", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return ends, broken


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cuts", type=int, default=1000, help="cuts per mode")
    parser.add_argument("--seed", type=int, default=40)
    parser.add_argument("--modes", default="sync,step,exit")
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
            ends, broken = soak(mode, args.cuts, args.seed, work)
            print(f"\nmode {mode}: {args.cuts} cuts in {time.monotonic() - started:.0f} s, seed {args.seed}")
            print(f"  {'how it ended':<48} {'cuts':>6}")
            for end, count in sorted(ends.items()):
                print(f"  {end:<48} {count:>6}")
            print(f"  {'broken promises':<48} {len(broken):>6}")
            for problem in broken[:10]:
                print(f"    {problem[:300]}")
            failed = failed or bool(broken)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
