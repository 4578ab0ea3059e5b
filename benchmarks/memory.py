"""Benchmark: long-term memory with 100,000 memories (targets: search <= 50 ms median,
retrieval before a model turn <= 10 ms median, batched insertion >= 2,000 memories/s).

Builds a temporary home, stores N memories in batches through the library (the FTS5
index and its triggers included), then times:

- insertion: batches of 1,000 (memories/s), and one memory per transaction for a sample
  (each one a durable commit, as ``memory.remember`` does);
- search: ``Memory.search`` for queries of 1-4 words, the work ``magent memory search``
  does after start-up (the command's wall time is also shown, start-up included);
- retrieval before a model turn: ``RunMemory.recall`` with a task description of 8-20
  words, including the access-count update it makes;
- consolidation (dry run) over everything;
- with ``--vectors DIM``: hybrid search with random DIM-dimensional vectors (the
  embedding call itself is not timed: it is the model's time, not magent's).

Baselines measured in the same run: a bare FTS5 ``MATCH ... ORDER BY rank LIMIT 10`` for
search, and the same rows inserted into a table without the full-text index.

    python benchmarks/memory.py [--memories 100000] [--queries 200] [--vectors 256]
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

from magent.ids import now
from magent.memory.service import Memory, new_entry

SCOPES = [("agent", f"agent_{i}") for i in range(40)] + [("workflow", f"flow_{i}") for i in range(10)] \
    + [("global", "")] * 10
TYPES = ["semantic"] * 6 + ["episodic"] * 3 + ["procedural"]


def vocabulary(size: int, rng: random.Random) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(3, 10))))
    return sorted(words)


@dataclass
class Corpus:
    words: list[str]
    weights: list[float]
    rng: random.Random = field(default_factory=lambda: random.Random(7))

    def __post_init__(self) -> None:
        self.cumulative = list(itertools.accumulate(self.weights))

    def sentence(self, low: int, high: int) -> str:
        return " ".join(self.rng.choices(self.words, cum_weights=self.cumulative,
                                         k=self.rng.randint(low, high)))


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def timed(fn, items) -> tuple[list[float], list[float]]:  # type: ignore[no-untyped-def]
    """Wall-clock and CPU (this thread) seconds of ``fn(item)`` for each item. On a shared,
    loaded machine the CPU time is the steadier measure of magent's own work."""
    wall, cpu = [], []
    for item in items:
        w, c = time.perf_counter(), time.thread_time()
        fn(item)
        cpu.append(time.thread_time() - c)
        wall.append(time.perf_counter() - w)
    return wall, cpu


def spread(wall: list[float], cpu: list[float]) -> str:
    return (f"median {ms(statistics.median(wall))} (CPU {ms(statistics.median(cpu))}), "
            f"p95 {ms(statistics.quantiles(wall, n=20)[-1])}")


def build(memory: Memory, corpus: Corpus, count: int, batch: int = 1000) -> list[tuple[int, float]]:
    """Store ``count`` memories in batches; returns (memories, seconds) of each ``store.add``
    (the entries are made before the clock starts: what is timed is the database's work)."""
    timed = []
    at = now()
    for start in range(0, count, batch):
        entries = []
        for i in range(start, min(count, start + batch)):
            scope, name = SCOPES[i % len(SCOPES)]
            entries.append(new_entry(corpus.sentence(8, 25), memory_type=TYPES[i % len(TYPES)],
                                     importance=round(corpus.rng.random(), 3), scope=scope, scope_name=name,
                                     tags=[corpus.rng.choice(corpus.words)], at=at))
        began = time.perf_counter()
        memory.store.add(entries)
        timed.append((len(entries), time.perf_counter() - began))
    return timed


def plain_insert_rate(path: Path, corpus: Corpus, count: int, batch: int = 1000) -> float:
    """The same kind of rows into a table with no full-text index (the baseline)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("CREATE TABLE t (id TEXT UNIQUE, content TEXT, scope TEXT, importance REAL)")
    seconds = 0.0
    for start in range(0, count, batch):
        rows = [(f"{i:032x}", corpus.sentence(8, 25), "global", 0.5) for i in range(start, min(count, start + batch))]
        began = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", rows)
        conn.execute("COMMIT")
        seconds += time.perf_counter() - began
    conn.close()
    return count / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--vectors", type=int, default=0, metavar="DIM",
                        help="also time hybrid search with random vectors of this dimension")
    args = parser.parse_args()
    rng = random.Random(11)
    words = vocabulary(8000, rng)
    corpus = Corpus(words, [1 / (rank + 1) ** 1.05 for rank in range(len(words))])  # Zipf-like use

    with tempfile.TemporaryDirectory(prefix="magent-memory-bench-") as tmp:
        root = Path(tmp) / "home"
        os.environ["MAGENT_HOME"] = str(root)
        memory = Memory.open(root)
        batches = build(memory, corpus, args.memories)
        built = sum(seconds for _, seconds in batches)
        rates = [n / seconds for n, seconds in batches]
        single = []
        for i in range(300):
            t = time.perf_counter()
            memory.remember(corpus.sentence(8, 25), scope="global")
            single.append(time.perf_counter() - t)
        baseline_rate = plain_insert_rate(Path(tmp) / "plain.db", corpus, args.memories)
        size = memory.store.size_bytes()
        memory.store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size_checkpointed = memory.store.size_bytes()

        print(f"memories: {args.memories:,} (+300 single), vocabulary {len(words):,} words, "
              f"8-25 words each, {len(SCOPES)} scopes")
        print(f"insertion, batches of 1,000: {args.memories / built:,.0f} memories/s overall "
              f"(median batch {statistics.median(rates):,.0f}/s); baseline without the full-text index "
              f"{baseline_rate:,.0f}/s (ratio {baseline_rate / (args.memories / built):.2f}x)")
        print(f"insertion, one per transaction (fsync each): median {ms(statistics.median(single))} "
              f"= {1 / statistics.median(single):,.0f}/s")
        print(f"database size: {size / 1e6:.1f} MB with its WAL, {size_checkpointed / 1e6:.1f} MB after a "
              f"checkpoint ({size_checkpointed / args.memories:.0f} bytes per memory)")

        queries = [" ".join(rng.choices(words[:3000], k=rng.randint(1, 4))) for _ in range(args.queries)]
        memory.search(queries[0])  # warm-up
        hits: list[int] = []
        wall, cpu = timed(lambda q: hits.append(len(memory.search(q, top_k=10).hits)), queries)
        raw_wall, raw_cpu = timed(lambda q: memory.store.conn.execute(
            "SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? ORDER BY rank LIMIT 10",
            [" OR ".join(f'"{w}"' for w in q.split())]).fetchall(), queries)
        print(f"search (library, top 10, all scopes): {spread(wall, cpu)}, {statistics.mean(hits):.1f} hits "
              f"on average; bare FTS5 query (no scopes, no scores) median {ms(statistics.median(raw_wall))} "
              f"(CPU ratio {statistics.median(cpu) / statistics.median(raw_cpu):.1f}x)")

        env = {**os.environ, "MAGENT_HOME": str(root)}
        cli = []
        for q in queries[:5]:
            t = time.perf_counter()
            subprocess.run([sys.executable, "-m", "magent", "memory", "search", q], env=env,
                           capture_output=True, check=True)
            cli.append(time.perf_counter() - t)
        print(f"`magent memory search` command, start-up included: median {ms(statistics.median(cli))} "
              f"over {len(cli)} runs")

        from magent.memory.run import RunMemory
        from magent.models.memory import AgentMemory

        agent = SimpleNamespace(name="agent_3", memory=AgentMemory(long_term=True, top_k=5))
        run = RunMemory(task_id=None, workflow="flow_3", agents={"agent_3": agent.memory})
        run._memory = memory
        bus = SimpleNamespace(emit=lambda *a, **k: None)
        contexts = []
        for _ in range(args.queries):
            text = corpus.sentence(8, 20)
            contexts.append(SimpleNamespace(bus=bus, task=SimpleNamespace(description=text), state=SimpleNamespace(
                messages=[SimpleNamespace(role="user", content=text)])))
        wall, cpu = timed(lambda ctx: run.recall(ctx, agent, "work", "You help."), contexts)
        print(f"retrieval before a model turn (a new task each time: 8-20 words; agent + workflow + global "
              f"scopes, top 5, access counts updated): {spread(wall, cpu)}")
        wall, cpu = timed(lambda ctx: run.recall(ctx, agent, "work", "You help."), contexts[-20:] * 1)
        print(f"  the same tasks' later turns (nothing new to record): {spread(wall, cpu)}")

        from magent.memory.consolidate import consolidate

        t = time.perf_counter()
        report = consolidate(memory, dry_run=True)
        print(f"consolidation dry run over {report.scanned:,}: {time.perf_counter() - t:.2f} s "
              f"({len(report.merged)} near-duplicates, {len(report.archived)} below the threshold)")

        if args.vectors:
            bench_vectors(memory, queries, args.vectors)
        memory.close()


def bench_vectors(memory: Memory, queries: list[str], dim: int) -> None:
    import numpy as np

    from magent.memory.vectors import VectorIndex, save_vectors, unit

    rowids = [r[0] for r in memory.store.query("SELECT rowid FROM memories")]
    gen = np.random.default_rng(3)
    t = time.perf_counter()
    for start in range(0, len(rowids), 5000):
        chunk = rowids[start:start + 5000]
        block = gen.standard_normal((len(chunk), dim)).astype(np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        save_vectors(memory.store, "bench", dict(zip(chunk, block)))
    stored = time.perf_counter() - t

    class FixedEmbedder:
        model = "bench"

        def query(self, text: str):  # noqa: ANN201
            return unit(gen.standard_normal(dim))

    memory._embedder = FixedEmbedder()
    memory._index = VectorIndex("bench")
    memory.embedding_model = "bench"
    t = time.perf_counter()
    memory.search("warm up")  # loads the matrix once
    loaded = time.perf_counter() - t
    wall, cpu = timed(lambda q: memory.search(q, top_k=10), queries)
    print(f"vectors ({dim} dimensions): stored {len(rowids):,} in {stored:.1f} s; first hybrid search "
          f"(loads the matrix) {ms(loaded)}; then {spread(wall, cpu)}; db now "
          f"{memory.store.size_bytes() / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
