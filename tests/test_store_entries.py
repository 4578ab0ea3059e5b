"""The conversation tree: messages rebuilt from a checkpoint's leaf by walking parent_id."""

from __future__ import annotations

import json

import pytest

from magent.errors import EntriesCorruptError
from magent.ids import new_id
from magent.models import Entry
from magent.store.entries import EntryLog
from support.homes import HomeBuilder


@pytest.fixture
def t():
    return HomeBuilder().task("talk")


def _contents(td, cp):
    return [m.content for m in td.full_state(cp).messages]


def test_messages_are_rebuilt_from_the_leaf(t):
    t.conversation(("system", "be brief"), ("user", "hi"))
    cp0 = t.checkpoint("a")
    t.conversation(("assistant", "hello"), ("user", "bye"))
    cp1 = t.checkpoint("b")
    t.close()
    assert _contents(t.dir, t.dir.checkpoints.read(0)) == ["be brief", "hi"]
    assert _contents(t.dir, t.dir.checkpoints.read(1)) == ["be brief", "hi", "hello", "bye"]
    assert cp0.entry_count == 2 and cp1.entry_count == 4


def test_a_fork_gives_each_checkpoint_its_own_branch(t):
    root = t.say("user", "name it")
    t.say("assistant", "first idea")
    t.say("user", "shorter")
    t.checkpoint("a")
    t.fork(root)                      # resume from the older point: a second child of root
    t.say("assistant", "second idea")
    t.checkpoint("b")
    t.close()
    entries = t.dir.entries.load()
    children = [e for e in entries.values() if e.parent_id == root.id]
    assert len(children) == 2         # the file holds a tree
    assert _contents(t.dir, t.dir.checkpoints.read(0)) == ["name it", "first idea", "shorter"]
    assert _contents(t.dir, t.dir.checkpoints.read(1)) == ["name it", "second idea"]
    assert t.dir.checkpoints.read(1).entry_count == 2


def test_two_roots_are_two_conversations(t):
    t.say("user", "one")
    t.checkpoint("a")
    t.fork(None)
    t.say("user", "two")
    t.checkpoint("b")
    t.close()
    assert _contents(t.dir, t.dir.checkpoints.read(0)) == ["one"]
    assert _contents(t.dir, t.dir.checkpoints.read(1)) == ["two"]


def test_message_fields_survive_the_round_trip(t):
    t.say("assistant", "", tool_calls=[{"id": "c1", "server": "kv", "tool": "get",
                                        "arguments": {"key": "k"}}])
    t.say("tool", '{"v": 1}', tool_call_id="c1", name="kv.get")
    cp = t.checkpoint("a")
    t.close()
    msgs = t.dir.full_state(t.dir.checkpoints.read(cp.sequence)).messages
    assert msgs[0].tool_calls[0].full_name == "kv.get" and msgs[0].tool_calls[0].arguments == {"key": "k"}
    assert (msgs[1].role, msgs[1].tool_call_id, msgs[1].name) == ("tool", "c1", "kv.get")
    assert msgs[1].timestamp == t.entries[1].created_at


def test_no_leaf_means_no_messages(t):
    cp = t.checkpoint("start")
    assert cp.leaf_entry_id is None and t.dir.full_state(cp).messages == []


def test_torn_last_entry_is_ignored_and_repaired_on_next_append(t):
    t.conversation(("user", "a"), ("assistant", "b"))
    t.checkpoint("x")
    t.close()
    with open(t.entries_file, "ab") as fh:
        fh.write(b'{"id": "' + new_id().encode() + b'", "role": "user", "cont')
    problems: list[str] = []
    assert len(t.dir.entries.load(problems)) == 2
    assert problems and "torn last line" in problems[0]
    assert _contents(t.dir, t.dir.checkpoints.read(0)) == ["a", "b"]
    t.say("user", "c")          # a new writer opens the file: the torn tail goes first
    t.close()
    lines = t.entries_file.read_bytes().split(b"\n")
    assert len(lines) == 4 and lines[-1] == b""
    assert all(json.loads(line) for line in lines[:-1])
    assert [e.content for e in t.dir.entries.load().values()] == ["a", "b", "c"]


def test_entries_are_appended_not_rewritten(t):
    t.say("user", "first")
    t.close()
    first = t.entries_file.read_bytes()
    t.say("assistant", "second")
    t.close()
    assert t.entries_file.read_bytes().startswith(first)


def test_a_missing_entry_on_the_path_is_a_clear_error(t):
    t.conversation(("user", "a"), ("assistant", "b"), ("user", "c"))
    cp = t.checkpoint("x")
    t.close()
    lines = t.entries_file.read_bytes().split(b"\n")
    t.entries_file.write_bytes(b"\n".join([lines[0], lines[2], b""]))  # drop the middle entry
    with pytest.raises(EntriesCorruptError) as exc:
        t.dir.full_state(cp)
    assert f"entry {t.entries[1].id} is missing from entries.jsonl" in str(exc.value)
    assert str(exc.value).startswith(f"task {t.id[:8]}: ")
    assert isinstance(exc.value, ValueError)  # callers that caught ValueError still do


def test_a_parent_cycle_is_a_clear_error(tmp_path):
    log = EntryLog(tmp_path / "entries.jsonl")
    a, b = new_id(), new_id()
    log.append(Entry(id=a, parent_id=b, role="user", content="x"))
    log.append(Entry(id=b, parent_id=a, role="user", content="y"))
    log.close()
    with pytest.raises(EntriesCorruptError, match="cycle"):
        log.path_to(a)


def test_an_entry_that_does_not_fit_the_schema_is_skipped_and_reported(t):
    t.say("user", "ok")
    t.close()
    with open(t.entries_file, "ab") as fh:
        fh.write(json.dumps({"id": "not-a-uuid", "role": "user"}).encode() + b"\n")
    problems: list[str] = []
    assert len(t.dir.entries.load(problems)) == 1
    assert problems == ["entries.jsonl: entry 2 does not fit the schema, skipped"]


def test_children_chain_follows_the_newest_child(t):
    root = t.say("user", "q")
    cp = t.checkpoint("a")
    t.say("assistant", "old branch")
    t.fork(root)
    newer = t.say("assistant", "new branch")
    tail = t.say("tool", "result")
    t.close()
    chain = t.dir.entries.children_chain(cp.leaf_entry_id, t.dir.entries.load())
    assert [e.id for e in chain] == [newer.id, tail.id]


def test_entry_lines_are_compact(t):
    t.say("user", "hi")
    t.close()
    doc = json.loads(t.entries_file.read_text().splitlines()[0])
    assert set(doc) == {"id", "role", "content", "created_at"}  # defaults left out


def test_the_index_reads_only_the_entries_asked_for(t):
    """A resume walks its checkpoint's leaf back to the root and follows what came after it:
    the other branch's entries are never parsed."""
    root = t.say("user", "q")
    for n in range(20):
        t.say("assistant", f"old branch {n}")
    t.fork(root)
    newer = t.say("assistant", "new branch")
    cp = t.checkpoint("a")
    tail = t.say("tool", "result")
    t.close()
    index = t.dir.entries.index()
    path = t.dir.entries.path_to(cp.leaf_entry_id, index)
    assert [e.id for e in path] == [root.id, newer.id]
    assert [e.id for e in t.dir.entries.children_chain(cp.leaf_entry_id, index)] == [tail.id]
    assert index.parsed == {root.id, newer.id, tail.id}
    assert dict(index) == t.dir.entries.load()   # read in full, the same as load


def test_the_index_skips_what_load_skips(t):
    """Bad lines, entries that do not fit the schema, a torn last line, and lines written with
    other key orders (an older magent) read as load reads them."""
    a = t.say("user", "a")
    b = t.say("assistant", "b")
    t.close()
    reordered = {"role": "user", "content": "c", "parent_id": b.id, "id": new_id(),
                 "created_at": "2026-01-01T00:00:00Z"}
    with open(t.entries_file, "ab") as fh:
        fh.write(b"not json\n")
        fh.write(json.dumps({"id": new_id(), "parent_id": a.id, "role": "robot"}).encode() + b"\n")
        fh.write(json.dumps(reordered).encode() + b"\n")
        fh.write(b'{"id":"' + new_id().encode() + b'","role":"user","con')  # torn
    index = t.dir.entries.index()
    assert dict(index) == t.dir.entries.load()
    assert [e.content for e in t.dir.entries.path_to(reordered["id"], index)] == ["a", "b", "c"]


def test_tool_results_are_written_whole_and_older_compact_ones_read_back(tmp_path):
    """Schema 18 writes a tool result's line whole (its call id, name and node). Schemas 12-13
    left out of a result appended just after the reply that made its one call that call's id and
    name (a name the call does not give was kept) and the reply's node (a node that differed was
    written, even none); load and the index put everything back from such lines."""
    from magent.models import ToolCall
    from magent.store.files import dumps

    def entry(role: str, parent: Entry | None, **kw) -> Entry:
        return Entry(id=new_id(), parent_id=parent.id if parent else None, role=role,
                     created_at="2026-01-01T00:00:00Z", **kw)

    fresh = EntryLog(tmp_path / "new.jsonl")
    ask = entry("assistant", None, tool_calls=[ToolCall(id="c0", server="kv", tool="get")], node="n")
    fresh.append(ask)
    fresh.append(entry("tool", ask, content="0", tool_call_id="c0", name="kv.get", node="n"))
    fresh.close()
    line = json.loads((tmp_path / "new.jsonl").read_text().splitlines()[1])
    assert (line["tool_call_id"], line["name"], line["node"]) == ("c0", "kv.get", "n")

    one = entry("assistant", None, tool_calls=[ToolCall(id="c1", server="kv", tool="get")], node="n")
    r1 = entry("tool", one, content="1", tool_call_id="c1", name="kv.get", node="n")
    two = entry("assistant", r1, tool_calls=[ToolCall(id="c2", server="kv", tool="get"),
                                             ToolCall(id="c3", server="", tool="now")])
    r2 = entry("tool", two, content="2", tool_call_id="c2", name="kv.get")
    r3 = entry("tool", r2, content="3", tool_call_id="c3", name="now")
    three = entry("assistant", r3, tool_calls=[ToolCall(id="c4", server="kv", tool="get")], node="n")
    r4 = entry("tool", three, content="4", tool_call_id="c4", name="kv.get_v2")
    four = entry("assistant", r4, tool_calls=[ToolCall(id="c5", server="kv", tool="get")])
    r5 = entry("tool", four, content="5", tool_call_id="c5", name="kv.get")
    written = [one, r1, two, r2, r3, three, r4, four, r5]
    # as a schema 13 magent wrote them: r1 without call id, name and node; r4 without its call
    # id, its node written null; the rest whole
    left_out = {1: ({"tool_call_id", "name", "node"}, False), 6: ({"tool_call_id", "node"}, True)}
    path = tmp_path / "entries.jsonl"
    with open(path, "wb") as f:
        for n, e in enumerate(written):
            drop, null_node = left_out.get(n, (set(), False))
            doc = {k: v for k, v in e.model_dump(mode="json", exclude_none=True).items()
                   if k not in drop and v not in ([], "", "message")}
            if null_node:
                doc["node"] = None
            f.write(dumps(doc) + b"\n")
    want = {e.id: e for e in written}
    assert EntryLog(path).load() == want
    assert dict(EntryLog(path).index()) == want
    assert [e.id for e in EntryLog(path).path_to(r5.id)] == [e.id for e in written]
    # walked from the leaf, each reply is read for its result, then parsed from that reading
    assert EntryLog(path).path_to(r5.id, EntryLog(path).index()) == written


def test_an_entry_line_is_the_json_of_its_model_dump(tmp_path):
    """A line is what ``json.dumps`` makes of the entry's dump (None and a message's defaults
    aside): floats in a call's arguments as ``json`` writes them (``1e-05``, not pydantic's
    ``0.00001``), text escaped alike."""
    from magent.models import ToolCall
    from magent.models.state import Compaction

    def entry(role: str, parent: Entry | None, **kw) -> Entry:
        return Entry(id=new_id(), parent_id=parent.id if parent else None, role=role,
                     created_at="2026-01-01T00:00:00.120000Z", **kw)

    path = tmp_path / "entries.jsonl"
    log = EntryLog(path)
    ask = entry("assistant", None, content="é \u2028 \x01 \"q\" \\", node="n", tool_calls=[
        ToolCall(id="c1", server="kv", tool="set", arguments={"f": 1e-05, "big": 10 ** 20, "deep": [{"x": None}]})])
    result = entry("tool", ask, content="x" * 600, tool_call_id="c1", name="kv.set")  # node None: written null
    ask2 = entry("assistant", result, node="n", tool_calls=[ToolCall(id="c2", tool="now", arguments={"n": 1})])
    result2 = entry("tool", ask2, content="", tool_call_id="c2", name="now", node="n")
    summary = entry("user", result2, entry_type="compaction", content="sum",
                    compaction=Compaction(agent="a", strategy="fifo", keep_from=2, dropped=1))
    written = [ask, result, ask2, result2, summary]
    for e in written:
        log.append(e)
    log.close()

    def expected(e: Entry, drop: set[str], null_node: bool = False) -> str:
        doc = {k: v for k, v in e.model_dump(mode="json", exclude_none=True).items()
               if k not in drop and v not in ([], "", "message")}
        if null_node:
            doc["node"] = None
        return json.dumps(doc, ensure_ascii=False, separators=(",", ":"))

    lines = path.read_text(encoding="utf-8").split("\n")[:-1]  # (splitlines would cut at U+2028)
    assert lines == [expected(ask, set()), expected(result, set()), expected(ask2, set()),
                     expected(result2, set()), expected(summary, set())]
    assert '"f":1e-05' in lines[0] and '"tool_call_id":"c1"' in lines[1]
    assert EntryLog(path).load() == {e.id: e for e in written}
