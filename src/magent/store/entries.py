"""The conversation as a tree of entries in ``entries.jsonl`` (seed 001).

Each message is appended as it completes. A checkpoint stores only the id of
its leaf entry; the messages of that checkpoint are the path from the root to
the leaf. Forks add children to an older entry, so the file holds a tree.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import ValidationError

from magent.errors import EntriesCorruptError
from magent.models import Entry, Message
from magent.store.files import AppendLog, dumps, loads, read_bytes, read_jsonl

_HEAD = re.compile(rb'\{"id":"([0-9a-f-]{36})"(?:,"parent_id":"([0-9a-f-]{36})")?,"(?:entry_type|role)":')
"""The start of a line as ``EntryLog.append`` writes it: the id, the parent's id when there is one."""


def _call_name(call: Mapping[str, Any]) -> str:
    server, tool = call.get("server") or "", call.get("tool") or ""
    return f"{server}.{tool}" if server else tool


def restore(raw: dict[str, Any], parent: Mapping[str, Any] | None) -> dict[str, Any]:
    """Put back (in place) what ``EntryLog.append`` left out of a tool result's line: its
    ``tool_call_id`` and ``name`` are those of its parent's one tool call (``parent``: the raw
    entry its ``parent_id`` names, as read), and, since schema 13, its ``node`` the parent's
    (null is written when it differs). Every older tool result carries a ``tool_call_id``, so
    none of this applies to it."""
    if raw.get("role") == "tool" and "tool_call_id" not in raw and parent is not None:
        calls = parent.get("tool_calls")
        if parent.get("role") == "assistant" and isinstance(calls, list) and len(calls) == 1 \
                and isinstance(calls[0], dict):
            raw["tool_call_id"] = calls[0].get("id")
            raw.setdefault("name", _call_name(calls[0]))
            if "node" not in raw and parent.get("node") is not None:
                raw["node"] = parent["node"]
    return raw


def entry_line(entry: Entry) -> bytes:
    """``entry``'s line in entries.jsonl (without its newline): the whole entry, but for fields
    that are None and, for a message, what is at its default (no tool calls, no text, the
    ``message`` type)."""
    leave_out = set()
    if not entry.tool_calls:
        leave_out.add("tool_calls")
    if entry.entry_type == "message":
        leave_out.add("entry_type")
    if not entry.content:
        leave_out.add("content")
    return dumps(entry.model_dump(mode="json", exclude_none=True, exclude=leave_out))


class EntryLog(AppendLog):

    def append(self, entry: Entry) -> Entry:
        """Append ``entry``'s line (``entry_line``)."""
        self._append_line(entry_line(entry))
        return entry

    def load(self, problems: list[str] | None = None) -> dict[str, Entry]:
        """All readable entries by id, in file order."""
        out: dict[str, Entry] = {}
        raws: dict[str, dict[str, Any]] = {}
        for n, raw in enumerate(read_jsonl(self.path, problems)):
            try:
                raw = restore(raw, raws.get(raw.get("parent_id")))  # type: ignore[arg-type]
                if isinstance(raw.get("id"), str):
                    raws[raw["id"]] = raw
                entry = Entry.model_validate(raw)
            except ValidationError:
                if problems is not None:
                    problems.append(f"{self.path.name}: entry {n + 1} does not fit the schema, skipped")
                continue
            out[entry.id] = entry
        return out

    def index(self) -> "EntryIndex":
        """Every entry by id, as ``load`` finds them, but each parsed only when asked for: a
        resume reads the path to its checkpoint's leaf and what came after it, not every entry
        of every session and branch."""
        lines: dict[str, list[bytes]] = {}
        parents: dict[str, str | None] = {}
        try:
            data = read_bytes(self.path)
        except FileNotFoundError:
            data = b""
        for line in data.split(b"\n")[:-1]:  # the last piece is b"" or a torn line
            head = _HEAD.match(line)
            if head is not None and (head.group(2) is not None or b'"parent_id"' not in line):
                key, parent = head.group(1).decode(), head.group(2)
                lines.setdefault(key, []).append(line)
                parents[key] = parent.decode() if parent is not None else None
                continue
            entry = _parse(line)  # written some other way (an older version): read it whole
            if entry is not None:
                lines.setdefault(entry.id, []).append(line)
                parents[entry.id] = entry.parent_id
        return EntryIndex(lines, parents)

    def path_to(self, leaf_id: str | None, entries: Mapping[str, Entry] | None = None) -> list[Entry]:
        """Entries from the root to ``leaf_id``, oldest first; ``EntriesCorruptError`` when an entry
        on the way is missing or the parent links loop."""
        if leaf_id is None:
            return []
        entries = self.load() if entries is None else entries
        chain: list[Entry] = []
        seen: set[str] = set()
        current: str | None = leaf_id
        while current is not None:
            if current in seen:
                raise EntriesCorruptError(f"task {self.path.parent.name[:8]}: {self.path.name}: "
                                          f"the entry tree has a cycle at entry {current}")
            seen.add(current)
            entry = entries.get(current)
            if entry is None:
                raise EntriesCorruptError(f"task {self.path.parent.name[:8]}: entry {current} is "
                                          f"missing from {self.path.name}, so the conversation "
                                          "cannot be rebuilt")
            chain.append(entry)
            current = entry.parent_id
        chain.reverse()
        return chain

    def children_chain(self, after_id: str | None, entries: Mapping[str, Entry], *,
                       session: str | None = None) -> list[Entry]:
        """Entries of ``session`` (None: the main one) appended after ``after_id``, in order: the
        newest child at each step, what a run appended after its last checkpoint before it died."""
        if isinstance(entries, EntryIndex):
            def children(parent: str | None) -> list[Entry]:
                found = (entries.get(key) for key in entries.children(parent))
                return [e for e in found if e is not None and e.session == session]
        else:
            by_parent: dict[str | None, list[Entry]] = {}
            for entry in entries.values():
                if entry.session == session:
                    by_parent.setdefault(entry.parent_id, []).append(entry)

            def children(parent: str | None) -> list[Entry]:
                return by_parent.get(parent, [])
        chain: list[Entry] = []
        current = after_id
        while kids := children(current):
            nxt = kids[-1]
            chain.append(nxt)
            current = nxt.id
        return chain


def _parse(line: bytes, parent: Any = None, raw: dict[str, Any] | None = None) -> Entry | None:
    """One line as an entry, or None when it is not JSON or does not fit the schema;
    ``parent(id)``: the raw entry of that id (for what ``restore`` puts back); ``raw``: the
    line as already read, if it was."""
    try:
        if raw is None:
            raw = loads(line)
        if not isinstance(raw, dict):
            return None
        if raw.get("role") == "tool" and "tool_call_id" not in raw and parent is not None:
            restore(raw, parent(raw.get("parent_id")))
        return Entry.model_validate(raw)
    except (ValueError, ValidationError):
        return None


class EntryIndex(Mapping[str, Entry]):
    """The entries of ``entries.jsonl`` by id (``EntryLog.index``): what ``load`` returns, with
    each line parsed and validated on first use. A line that cannot be read is as absent as
    ``load`` leaves it; of two lines with one id, the last readable one counts."""

    def __init__(self, lines: dict[str, list[bytes]], parents: dict[str, str | None]):
        self._lines = lines
        self._parents = parents
        self._parsed: dict[str, Entry | None] = {}
        self._children: dict[str | None, list[str]] | None = None
        self._read: dict[str, tuple[bytes, dict[str, Any]]] = {}
        """Lines read as a parent's (``_raw``) and not parsed yet: a path is walked from its
        leaf, so each reply is read for the tool result after it, then parsed from that."""

    def __getitem__(self, key: str) -> Entry:
        if key not in self._parsed:
            found = None
            read = self._read.pop(key, None)
            for line in reversed(self._lines.get(key, ())):
                found = _parse(line, self._raw, read[1] if read is not None and read[0] is line else None)
                if found is not None:
                    break
            self._parsed[key] = found
        entry = self._parsed[key]
        if entry is None:
            raise KeyError(key)
        return entry

    def _raw(self, key: Any) -> dict[str, Any] | None:
        """The last line of entry ``key`` that is a JSON object, as read (a parent's tool calls)."""
        for line in reversed(self._lines.get(key, ()) if isinstance(key, str) else ()):
            try:
                raw = loads(line)
            except ValueError:
                continue
            if isinstance(raw, dict):
                if key not in self._parsed:
                    self._read[key] = (line, raw)
                return raw
        return None

    def __iter__(self) -> Iterator[str]:
        return (key for key in self._lines if self.get(key) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    @property
    def parsed(self) -> set[str]:
        """Ids of the entries read so far (the lines parsed and validated)."""
        return {key for key, entry in self._parsed.items() if entry is not None}

    def children(self, parent: str | None) -> list[str]:
        """Ids of the entries whose parent is ``parent``, in file order."""
        if self._children is None:
            self._children = {}
            for key, up in self._parents.items():
                self._children.setdefault(up, []).append(key)
        return self._children.get(parent, [])


def to_message(entry: Entry) -> Message:
    message = Message(role=entry.role, content=entry.content, tool_calls=entry.tool_calls,
                      tool_call_id=entry.tool_call_id, name=entry.name, timestamp=entry.created_at,
                      compaction=entry.compaction)
    message._entry = entry.id
    return message
