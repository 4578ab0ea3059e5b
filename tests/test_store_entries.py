"""The conversation tree: messages rebuilt from a checkpoint's leaf by walking parent_id."""

from __future__ import annotations

import json

import pytest

from magent.errors import EntriesCorruptError
from magent.ids import new_id
from magent.models import Entry
from magent.store import EntryLog
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


def test_a_tool_result_after_its_one_call_leaves_out_the_calls_id_and_name(tmp_path):
    """Schemas 12-13: a tool result appended just after the reply that made its one call leaves
    out that call's id and name (a name the call does not give is kept) and the reply's node (a
    node that differs is written, even none); after two calls, or from a
    writer that did not append the reply, the result is written whole. Load and the index put
    everything back."""
    from magent.models import ToolCall

    def entry(role: str, parent: Entry | None, **kw) -> Entry:
        return Entry(id=new_id(), parent_id=parent.id if parent else None, role=role,
                     created_at="2026-01-01T00:00:00Z", **kw)

    path = tmp_path / "entries.jsonl"
    log = EntryLog(path)
    one = entry("assistant", None, tool_calls=[ToolCall(id="c1", server="kv", tool="get")], node="n")
    r1 = entry("tool", one, content="1", tool_call_id="c1", name="kv.get", node="n")
    two = entry("assistant", r1, tool_calls=[ToolCall(id="c2", server="kv", tool="get"),
                                             ToolCall(id="c3", server="", tool="now")])
    r2 = entry("tool", two, content="2", tool_call_id="c2", name="kv.get")
    r3 = entry("tool", r2, content="3", tool_call_id="c3", name="now")
    three = entry("assistant", r3, tool_calls=[ToolCall(id="c4", server="kv", tool="get")], node="n")
    r4 = entry("tool", three, content="4", tool_call_id="c4", name="kv.get_v2")
    four = entry("assistant", r4, tool_calls=[ToolCall(id="c5", server="kv", tool="get")])
    written = [one, r1, two, r2, r3, three, r4, four]
    for e in written:
        log.append(e)
    log.close()
    later = EntryLog(path)                         # another run: it did not append ``four``
    r5 = entry("tool", four, content="5", tool_call_id="c5", name="kv.get")
    later.append(r5)
    later.close()
    written.append(r5)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert not {"tool_call_id", "name", "node"} & set(lines[1])
    assert (lines[3]["tool_call_id"], lines[4]["tool_call_id"]) == ("c2", "c3")
    assert "tool_call_id" not in lines[6] and lines[6]["name"] == "kv.get_v2" and lines[6]["node"] is None
    assert (lines[8]["tool_call_id"], lines[8]["name"]) == ("c5", "kv.get")
    want = {e.id: e for e in written}
    assert EntryLog(path).load() == want
    assert dict(EntryLog(path).index()) == want
    assert [e.id for e in EntryLog(path).path_to(r5.id)] == [e.id for e in written]
    # walked from the leaf, each reply is read for its result, then parsed from that reading
    assert EntryLog(path).path_to(r5.id, EntryLog(path).index()) == written


def test_an_entry_line_is_the_json_of_its_model_dump(tmp_path):
    """A line is what ``json.dumps`` makes of the entry's dump (the defaults and what the tool result
    leaves out aside), however it is made: floats in a call's arguments as ``json`` writes them
    (``1e-05``, not pydantic's ``0.00001``), text escaped alike, a differing node written null last."""
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
    assert lines == [expected(ask, set()), expected(result, {"tool_call_id", "name"}, null_node=True),
                     expected(ask2, set()), expected(result2, {"tool_call_id", "name", "node"}),
                     expected(summary, set())]
    assert '"f":1e-05' in lines[0] and lines[1].endswith(',"node":null}')
    assert EntryLog(path).load() == {e.id: e for e in written}


def test_a_message_appended_without_its_entry_model_is_the_same_line(tmp_path):
    """``append_message`` (a run's usual messages, no ``Entry`` built) writes the bytes ``append``
    writes for the entry the message makes, in every shape a run appends; and where it would not
    (a float in a call's arguments, a tool result whose node is written null, an id that is not a
    UUID v4, a text that is not a plain str, a text pydantic refuses) it writes nothing and says so."""
    from datetime import datetime, timezone

    from magent.models import Message, ToolCall

    when = datetime(2026, 1, 1, 0, 0, 0, 120000, tzinfo=timezone.utc)
    session = new_id()

    class Node(str):
        pass

    def msg(role: str, **kw) -> Message:
        return Message(role=role, timestamp=when, **kw)

    one = [ToolCall(id="c1", server="kv", tool="set", arguments={"k": "é \u2028 \x01 \"q\" \\", "n": [1, None, True]})]
    two = [ToolCall(id="c2", tool="now"), ToolCall(id="c3", server="s", tool="t", raw_arguments="{oops")]
    # (message, turn_id, node, session, masked arguments): appended in this order, each after the one before
    shapes = [
        (msg("user", content="the task", name="workflow"), None, None, None, None),
        (msg("assistant", content="", tool_calls=one), "a:0", "a", None, None),
        (msg("tool", content="x" * 600, tool_call_id="c1", name="kv.set"), None, "a", None, None),  # all told
        (msg("assistant", content="two", tool_calls=one), "a:1", "a", None, [{"k": "***", "n": [1]}]),
        (msg("tool", content="r", tool_call_id="c1", name="other"), None, "b", None, None),  # only the id told
        (msg("assistant", content="many", tool_calls=two), "a:2", "a", session, None),
        (msg("tool", content="", tool_call_id="c2", name="now"), None, "a", session, None),  # two calls: none told
        (msg("system", content="summary", name="magent"), None, "a", session, None),
    ]
    model_log, plain_log = EntryLog(tmp_path / "model.jsonl"), EntryLog(tmp_path / "plain.jsonl")
    parent = None
    for message, turn, node, tag, masked in shapes:
        entry_id = new_id()
        calls = message.tool_calls if masked is None else [
            c.model_copy(update={"arguments": a}) for c, a in zip(message.tool_calls, masked)]
        model_log.append(Entry(id=entry_id, parent_id=parent, role=message.role, content=message.content,
                               tool_calls=calls, tool_call_id=message.tool_call_id, name=message.name,
                               turn_id=turn, node=node, session=tag, created_at=message.timestamp))
        assert plain_log.append_message(entry_id, parent, message, message.content, masked, turn, node, tag)
        parent = entry_id
    model_log.close()
    plain_log.close()
    model_lines = (tmp_path / "model.jsonl").read_bytes().split(b"\n")
    plain_lines = (tmp_path / "plain.jsonl").read_bytes().split(b"\n")
    assert plain_lines == model_lines
    assert b'"tool_call_id"' not in model_lines[2] and b'"node"' not in model_lines[2]
    assert b'"tool_call_id"' not in model_lines[4] and b'"name":"other"' in model_lines[4]
    assert b'"tool_call_id":"c2"' in model_lines[6]

    # What it leaves to the model, writing nothing.
    log = EntryLog(tmp_path / "other.jsonl")
    reply = msg("assistant", tool_calls=one)
    assert log.append_message(new_id(), None, reply, "", None, None, "a", None)
    reply_id = json.loads((tmp_path / "other.jsonl").read_bytes())["id"]
    result = msg("tool", content="r", tool_call_id="c1", name="kv.set")
    assert not log.append_message(new_id(), reply_id, result, "r", None, None, None, None)  # node null
    floats = msg("assistant", tool_calls=[ToolCall(id="c9", tool="t", arguments={"f": 1e-05})])
    assert not log.append_message(new_id(), None, floats, "", None, None, None, None)
    assert not log.append_message("not-an-id", None, result, "r", None, None, None, None)
    assert not log.append_message(new_id(), "not-an-id", result, "r", None, None, None, None)
    assert not log.append_message(new_id(), None, result, "r", None, None, Node("a"), None)
    assert not log.append_message(new_id(), None, result, "\ud800 lone", None, None, None, None)
    log.close()
    assert (tmp_path / "other.jsonl").read_bytes().count(b"\n") == 1
