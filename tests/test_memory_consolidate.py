"""Consolidation: near-duplicate merging (words, and vectors from a local embedding stub),
decay by time unused, archiving or evicting below the threshold, dry runs."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from magent.ids import now
from magent.memory.consolidate import consolidate
from magent.memory.service import Caller, Memory
from magent.models.memory import ConsolidationSettings, MemorySettings
from support.openai_stub import OpenAIStub


@pytest.fixture
def memory(magent_home: Path):
    with Memory.open() as m:
        yield m


def rows(memory: Memory) -> dict[str, tuple]:
    return {r[0]: tuple(r[1:]) for r in memory.store.query(
        "SELECT id, status, importance, access_count, merged_into, tags FROM memories")}


def test_near_duplicates_merge_into_the_more_important_one(memory: Memory) -> None:
    keep = memory.remember("The weekly sync is in room Atlas on Tuesdays", scope="global", importance=0.8,
                           tags=["meetings"]).entry
    dup = memory.remember("the weekly sync is in room atlas on tuesdays!", scope="global", importance=0.4,
                          tags=["rooms"]).entry
    memory.store.touch(memory.store.rowids([dup.id]).values(), now())
    memory.remember("The weekly sync is in room Borneo on Tuesdays", scope="global")  # differs: stays
    other = memory.remember("The weekly sync is in room Atlas on Tuesdays", scope="workflow",
                            scope_name="docs").entry  # same words, another scope: stays
    report = consolidate(memory)
    assert [(m.keeper, m.duplicate, m.measure, m.similarity) for m in report.merged] == [
        (keep.id, dup.id, "jaccard", 1.0)]
    after = rows(memory)
    assert after[dup.id][:2] == ("archived", 0.4) and after[dup.id][3] == keep.id
    assert after[keep.id][2] == 1 and after[keep.id][4] == '["meetings", "rooms"]'  # took its use and tags
    assert memory.store.get(other.id).status == "active"
    assert [h.entry.id for h in memory.search("Atlas", visible=[("global", "")]).hits] == [keep.id]


def test_the_text_measure_is_jaccard_over_words(memory: Memory) -> None:
    memory.remember("one two three four five six seven eight nine ten", scope="global")
    memory.remember("one two three four five six seven eight nine eleven", scope="global")  # 9/11 = 0.82
    assert consolidate(memory, dry_run=True).merged == []
    loose = ConsolidationSettings(text_similarity=0.8)
    assert [round(m.similarity, 3) for m in consolidate(memory, dry_run=True, settings=loose).merged] == [0.818]


def test_importance_halves_per_half_life_unused_and_low_ones_are_archived(memory: Memory) -> None:
    fresh = memory.remember("used today", scope="global", importance=0.5).entry
    old = memory.remember("not used for 60 days", scope="global", importance=0.5).entry
    faded = memory.remember("not used for a year", scope="global", importance=0.5).entry
    at = now()
    for entry, days in ((old, 60), (faded, 365)):
        stamp = (at - timedelta(days=days)).isoformat(timespec="microseconds")
        memory.store.conn.execute("UPDATE memories SET last_accessed = ? WHERE id = ?", [stamp, entry.id])
    report = consolidate(memory, at=at)
    decayed = {c.id: c.after for c in report.decayed}
    assert fresh.id not in decayed
    assert decayed[old.id] == pytest.approx(0.125, abs=1e-4)  # two half-lives of 30 days
    assert [c.id for c in report.archived] == [faded.id]
    assert memory.store.get(faded.id).status == "archived"
    assert "archived 1 below importance 0.05" in report.summary()
    # Again a day later: only that day decays (the 60 days are not counted twice).
    again = consolidate(memory, at=at + timedelta(days=1))
    day = 0.5 ** (1 / 30)
    assert {c.id: round(c.after, 4) for c in again.decayed} == {fresh.id: round(0.5 * day, 4),
                                                                 old.id: round(0.125 * day, 4)}


def test_evict_deletes_instead_of_archiving(memory: Memory) -> None:
    memory.remember("a b c d e f", scope="global", importance=0.9)
    memory.remember("a b c d e f", scope="global", importance=0.2)
    memory.remember("unimportant", scope="global", importance=0.01)
    report = consolidate(memory, settings=ConsolidationSettings(evict=True))
    assert len(report.merged) == 1 and len(report.archived) == 1
    assert "evicted 1 below" in report.summary()
    assert [r[0] for r in memory.store.query("SELECT content FROM memories")] == ["a b c d e f"]


def test_a_dry_run_changes_nothing(memory: Memory) -> None:
    memory.remember("same same", scope="global")
    memory.remember("same same", scope="global")
    memory.remember("faint", scope="global", importance=0.01)
    before = rows(memory)
    report = consolidate(memory, dry_run=True)
    assert len(report.merged) == 1 and len(report.archived) == 1 and report.dry_run
    assert report.summary().startswith("memory consolidation (dry run): 3 active memories: would merge 1")
    assert rows(memory) == before


def test_with_embeddings_vectors_find_duplicates_words_do_not(magent_home: Path) -> None:
    with OpenAIStub() as stub:
        settings = MemorySettings(embedding_model="openai/stub-embed", embedding_endpoint=stub.url,
                                  embedding_api_key="sk-stub-not-a-real-key")
        unit = [1.0] + [0.0] * 31
        near = [0.97, 0.2431] + [0.0] * 30  # cosine 0.97 with unit
        far = [0.9, -0.4359] + [0.0] * 30   # cosine 0.90 with unit, 0.77 with near
        stub.embedding_overrides.update({"Tuesday sync: room Atlas": unit, "Weekly meeting location is Atlas": near,
                                         "Standup happens in Borneo": far})
        with Memory.open(settings=settings) as memory:
            a = memory.remember("Tuesday sync: room Atlas", scope="global", importance=0.7).entry
            b = memory.remember("Weekly meeting location is Atlas", scope="global").entry
            memory.remember("Standup happens in Borneo", scope="global")
            assert all(e.embedding_model == "openai/stub-embed" for e in memory.store.list())
            report = consolidate(memory)
            assert [(m.keeper, m.duplicate, m.measure) for m in report.merged] == [(a.id, b.id, "cosine")]
            assert report.merged[0].similarity == pytest.approx(0.97, abs=1e-3)


def test_memories_stored_while_the_model_failed_get_vectors_later(magent_home: Path) -> None:
    with OpenAIStub() as stub:
        settings = MemorySettings(embedding_model="openai/stub-embed", embedding_endpoint=stub.url,
                                  embedding_api_key="sk-stub-not-a-real-key")
        stub.embedding_status = 500
        with Memory.open(settings=settings) as memory:
            stored = memory.remember("remember me", scope="global", caller=Caller())
            assert stored.stored and "stored without a vector" in stored.notes[0]
            assert memory.store.get(stored.entry.id).embedding_model is None
        stub.embedding_status = None
        with Memory.open(settings=settings) as memory:
            report = consolidate(memory)
            assert report.embedded == 1 and "embedded 1" in report.summary()
            assert memory.store.get(stored.entry.id).embedding_model == "openai/stub-embed"


def test_other_tasks_keep_writing_while_consolidation_plans(memory: Memory, monkeypatch) -> None:
    """Planning reads (it takes seconds on a large store) without the write lock; what another
    task stored meanwhile is planned again, so it is consolidated too. Writers that keep
    coming get a last plan made holding the lock."""
    import magent.memory.consolidate as module

    keep = memory.remember("The weekly sync is in room Atlas", scope="global", importance=0.8).entry
    real, plans, written = module._plan, [], []

    def writing_during(first: int):  # type: ignore[no-untyped-def]
        def plan(*args, **kwargs):  # type: ignore[no-untyped-def]
            plans.append(1)
            if len(plans) <= first:  # another task writes while this plan is being made
                with Memory.open(settings=MemorySettings(busy_timeout_seconds=0.2)) as other:
                    written.append(other.remember(f"the weekly sync is in room atlas{'!' * len(plans)}",
                                                  scope="global").entry)
            return real(*args, **kwargs)
        return plan

    monkeypatch.setattr(module, "_plan", writing_during(1))
    report = consolidate(memory)
    assert len(plans) == 2
    assert [(m.keeper, m.duplicate) for m in report.merged] == [(keep.id, written[0].id)]
    assert memory.store.get(written[0].id).merged_into == keep.id

    plans.clear()
    monkeypatch.setattr(module, "_plan", writing_during(module.PLAN_ATTEMPTS))
    report = consolidate(memory)
    assert len(plans) == module.PLAN_ATTEMPTS + 1  # the last one under the lock
    assert sorted(m.duplicate for m in report.merged) == sorted(e.id for e in written[1:])
    monkeypatch.setattr(module, "_plan", real)
    assert consolidate(memory).merged == []
