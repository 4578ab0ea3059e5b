"""The memory database and its search, through the library (``Memory``, ``MemoryStore``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from magent import paths
from magent.errors import MemoryLockedError, MemoryNotFoundError, MemoryStoreError, UsageError
from magent.memory.service import Caller, Memory, parse_scope
from magent.memory.store import MemoryStore


@pytest.fixture
def memory(magent_home: Path):
    with Memory.open() as m:
        yield m


def test_a_memory_is_stored_with_the_seed_fields_and_found_by_a_prefix(memory: Memory) -> None:
    caller = Caller(agent="helper", workflow="office", task_id="t-1")
    stored = memory.remember("The weekly sync is in room Atlas", caller=caller, memory_type="semantic",
                             importance=0.8, tags=["meetings"], scope="workflow", source="agent")
    e = memory.store.get(stored.entry.id[:6])
    assert (e.content, e.memory_type, e.importance, e.tags) == ("The weekly sync is in room Atlas", "semantic",
                                                                0.8, ["meetings"])
    assert (e.scope, e.scope_name, e.source, e.source_agent, e.source_task) == (
        "workflow", "office", "agent", "helper", "t-1")
    assert e.access_count == 0 and e.last_accessed == e.created_at and e.status == "active"
    db = paths.memory_db()
    assert db.is_file() and oct(db.stat().st_mode & 0o777) == "0o600"
    assert sqlite3.connect(db).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_the_same_key_stores_once_and_replace_updates_in_place(memory: Memory) -> None:
    first = memory.remember("Alice prefers tea", scope="global", key="k1")
    again = memory.remember("Alice prefers tea", scope="global", key="k1")
    assert first.stored and not again.stored and again.entry.id == first.entry.id
    replaced = memory.remember("Alice prefers green tea", scope="global", key="k1", replace=True)
    assert replaced.entry.id == first.entry.id and replaced.entry.content == "Alice prefers green tea"
    assert memory.store.count() == 1
    assert [h.entry.id for h in memory.search("green").hits] == [first.entry.id]  # the index followed


def test_secrets_are_masked_before_they_are_stored(memory: Memory) -> None:
    stored = memory.remember("the deploy key is sk-abcdefghijklmnopqrstuvwxyz", scope="global",
                             tags=["sk-abcdefghijklmnopqrstuvwxyz"])
    assert "sk-abc" not in stored.entry.content and stored.entry.tags == ["[REDACTED]"]
    assert b"sk-abcdefghij" not in b"".join(p.read_bytes() for p in paths.memory_dir().iterdir())


def test_plain_words_match_any_word_and_score_by_the_share_matched(memory: Memory) -> None:
    memory.remember("The weekly sync is in room Atlas", scope="global")
    memory.remember("Budget meetings are held in room 4", scope="global")
    memory.remember("Alice prefers tea to coffee", scope="global")
    result = memory.search("Where is the weekly sync meeting?")
    assert [(h.entry.content[:15], round(h.score, 2)) for h in result.hits] == [
        ("The weekly sync", 0.67), ("Budget meetings", 0.33)]  # 'meeting' finds 'meetings' (stemming)
    assert result.hits[0].matched == ["weekly", "sync"] and "2 of 3 words" in result.hits[0].why()
    assert [h.entry.content[:6] for h in memory.search("weekly sync meeting", min_score=0.5).hits] == ["The we"]
    assert len(memory.search("room", top_k=1).hits) == 1


def test_rare_words_weigh_more_than_common_ones(memory: Memory) -> None:
    for i in range(6):
        memory.remember(f"project note {i}: the project is on track", scope="global")
    memory.remember("the zebra crossing is closed", scope="global")
    hits = memory.search("project zebra", top_k=10).hits
    assert hits[0].entry.content == "the zebra crossing is closed" and hits[0].why() == "matched zebra (1 of 2 words)"
    zebra, project = hits[0].score, hits[1].score  # each word weighs by how rare it is (IDF)
    assert zebra > 0.7 and project < 0.3 and round(zebra + project, 6) == 1.0
    assert len(hits) == 7
    memory.remember("the project zebra is a codename", scope="global")
    first = memory.search("project zebra").hits[0]
    assert first.entry.content == "the project zebra is a codename" and first.score == 1.0


def test_a_long_query_searches_its_rarest_words_first(memory: Memory, monkeypatch) -> None:
    import magent.memory.search as search

    monkeypatch.setattr(search, "BUDGET", 5)
    for i in range(8):
        memory.remember(f"common words everywhere {i}", scope="global")
    memory.remember("a rare okapi", scope="global")
    result = memory.search("okapi common words")
    assert result.query.terms == ["okapi", "common", "words"]
    assert [h.entry.content for h in result.hits] == ["a rare okapi"]  # the common words were not searched
    assert len(memory.search("common words", top_k=20).hits) == 8  # the rarest word is always searched


def test_full_text_syntax_is_used_and_a_broken_query_falls_back_to_its_words(memory: Memory) -> None:
    memory.remember("The weekly sync is in room Atlas", scope="global")
    memory.remember("sync the weekly files", scope="global")
    phrase = memory.search('"weekly sync"')
    assert [h.entry.content for h in phrase.hits] == ["The weekly sync is in room Atlas"]
    (only,) = memory.search("sync NOT files").hits  # what NOT excludes is not a word to score
    assert only.entry.content == "The weekly sync is in room Atlas" and only.score == 1.0
    assert only.why() == "matched sync (1 of 1 words)"
    for broken in ('sync AND (', '"unclosed', 'content:', 'a:b sync', 'NOT', '*'):
        result = memory.search(broken)
        assert result.notes and result.notes[0].startswith("not valid full-text syntax"), broken
    assert len(memory.search('sync AND (').hits) == 2
    assert memory.search("!!! ???").notes == ["the query has no words to search for"]


def test_scopes_keep_agents_and_workflows_apart(memory: Memory) -> None:
    a = Caller(agent="writer", workflow="blog")
    b = Caller(agent="writer", workflow="docs")
    c = Caller(agent="critic", workflow="blog")
    memory.remember("blog style: short sentences", caller=a, scope="workflow")
    memory.remember("writer's own note about sentences", caller=a, scope="agent")
    memory.remember("everyone: sentences end with a period", caller=a, scope="global")
    seen = lambda who: sorted(h.entry.content.split(":")[0] for h in  # noqa: E731
                              memory.search("sentences", visible=who.visible()).hits)
    assert seen(a) == ["blog style", "everyone", "writer's own note about sentences"]
    assert seen(b) == ["everyone", "writer's own note about sentences"]  # same agent name, other workflow
    assert seen(c) == ["blog style", "everyone"]
    blog = memory.search("blog").hits[0].entry.id
    with pytest.raises(MemoryNotFoundError):  # cannot forget what it cannot see
        memory.forget(blog, visible=Caller(agent="x", workflow="docs").visible())
    assert memory.forget(blog, visible=c.visible()).id == blog


def test_scope_names_are_checked(memory: Memory) -> None:
    assert parse_scope("agent:writer") == ("agent", "writer")
    assert parse_scope("global") == ("global", "")
    assert parse_scope("workflow", any_name=True) == ("workflow", None)
    for bad in ("team:x", "agent", "agent:", "global:x", ""):
        with pytest.raises(UsageError):
            parse_scope(bad)
    with pytest.raises(UsageError, match="needs a name"):
        memory.remember("x", caller=Caller(), scope="agent")


def test_archived_memories_are_not_found(memory: Memory) -> None:
    kept = memory.remember("room Atlas is booked", scope="global").entry
    gone = memory.remember("room Atlas was renamed", scope="global").entry
    memory.store.conn.execute("UPDATE memories SET status = 'archived' WHERE id = ?", [gone.id])
    assert [h.entry.id for h in memory.search("Atlas").hits] == [kept.id]


def test_a_prefix_must_be_unique_and_long_enough(memory: Memory) -> None:
    ids = [memory.remember(f"note {i}", scope="global").entry.id for i in range(40)]
    with pytest.raises(MemoryNotFoundError, match="at least its first 4"):
        memory.store.get("ab")
    with pytest.raises(MemoryNotFoundError, match="no memory with id"):
        memory.store.get("ffffffff-0000")
    shared = next((a[:4] for a in ids for b in ids if a != b and a[:4] == b[:4]), None)
    if shared:
        with pytest.raises(MemoryNotFoundError, match="matches several"):
            memory.store.get(shared)


def test_reading_a_missing_database_creates_nothing(magent_home: Path) -> None:
    with Memory.open(create=False) as memory:
        assert memory.store.list() == [] and memory.search("anything").hits == []
    assert not paths.memory_dir().exists()


def test_a_file_that_is_not_a_database_is_named_and_left_alone(magent_home: Path) -> None:
    db = paths.memory_db()
    db.parent.mkdir(parents=True)
    db.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(MemoryStoreError) as err:
        Memory.open()
    assert str(db) in str(err.value) and "left as it is" in str(err.value)
    assert db.read_bytes() == b"this is not sqlite" * 100


def test_a_damaged_database_is_named_and_left_alone(magent_home: Path) -> None:
    with Memory.open() as memory:
        for i in range(300):
            memory.remember(f"memory number {i} " + "x" * 200, scope="global")
    db = paths.memory_db()
    data = bytearray(db.read_bytes())  # (the last connection's close folded the WAL into the file)
    data[4096 * 8:] = b"\xff" * (len(data) - 4096 * 8)  # every page after the eighth is garbage now
    db.write_bytes(bytes(data))
    with pytest.raises(MemoryStoreError) as err:
        with Memory.open() as memory:
            memory.search("memory number")
            memory.store.list(limit=None)
    assert str(db) in str(err.value)
    assert db.read_bytes() == bytes(data)


def test_an_sqlite_file_of_someone_else_is_refused(magent_home: Path) -> None:
    db = paths.memory_db()
    db.parent.mkdir(parents=True)
    sqlite3.connect(db).execute("CREATE TABLE other (x)").connection.commit()
    with pytest.raises(MemoryStoreError, match="not magent's memory"):
        Memory.open()


def test_a_newer_schema_is_refused(magent_home: Path) -> None:
    with Memory.open() as memory:
        memory.store.conn.execute("PRAGMA user_version = 99")
    with pytest.raises(MemoryStoreError, match="newer magent"):
        Memory.open()


def test_a_write_blocked_by_another_writer_fails_with_a_clear_error(magent_home: Path) -> None:
    with Memory.open() as memory:
        memory.remember("first", scope="global")
    other = sqlite3.connect(paths.memory_db(), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process in the middle of a write
    try:
        store = MemoryStore(paths.memory_db(), busy_timeout=0.2)
        assert len(store.list()) == 1  # reading is never blocked (WAL)
        with pytest.raises(MemoryLockedError, match="locked by another process"):
            with Memory(store, Memory.open(create=False).settings) as memory:
                memory.remember("second", scope="global")
    finally:
        other.execute("ROLLBACK")
        other.close()
    with Memory.open() as memory:
        assert [e.content for e in memory.store.list()] == ["first"]
