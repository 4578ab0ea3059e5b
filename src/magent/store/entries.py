"""The conversation as a tree of entries in ``entries.jsonl`` (seed 001).

Each message is appended as it completes. A checkpoint stores only the id of
its leaf entry; the messages of that checkpoint are the path from the root to
the leaf. Forks add children to an older entry, so the file holds a tree.
"""

from __future__ import annotations


from pydantic import ValidationError

from magent.errors import EntriesCorruptError
from magent.models import Entry, Message
from magent.store.files import AppendLog, read_jsonl


class EntryLog(AppendLog):

    def append(self, entry: Entry) -> Entry:
        doc = entry.model_dump(mode="json", exclude_none=True)
        if not doc["tool_calls"]:
            del doc["tool_calls"]
        if doc["entry_type"] == "message":
            del doc["entry_type"]
        if not doc["content"]:
            del doc["content"]
        self._append(doc)
        return entry

    def load(self, problems: list[str] | None = None) -> dict[str, Entry]:
        """All readable entries by id, in file order."""
        out: dict[str, Entry] = {}
        for n, raw in enumerate(read_jsonl(self.path, problems)):
            try:
                entry = Entry.model_validate(raw)
            except ValidationError:
                if problems is not None:
                    problems.append(f"{self.path.name}: entry {n + 1} does not fit the schema, skipped")
                continue
            out[entry.id] = entry
        return out

    def path_to(self, leaf_id: str | None, entries: dict[str, Entry] | None = None) -> list[Entry]:
        """Entries from the root to ``leaf_id``, oldest first.

        Raises ``EntriesCorruptError`` (a ``ValueError``) when an entry on the way is
        missing or the parent links loop.
        """
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

    def children_chain(self, after_id: str | None, entries: dict[str, Entry], *,
                       session: str | None = None) -> list[Entry]:
        """Entries of ``session`` appended after ``after_id`` that continue it, in order (used by
        crash recovery; ``None`` is the main session).

        Follows, from ``after_id``, the most recently written child at each step:
        what a run appended after its last checkpoint before it died.
        """
        children: dict[str | None, list[Entry]] = {}
        for entry in entries.values():
            if entry.session == session:
                children.setdefault(entry.parent_id, []).append(entry)
        chain: list[Entry] = []
        current = after_id
        while children.get(current):
            nxt = children[current][-1]
            chain.append(nxt)
            current = nxt.id
        return chain


def to_message(entry: Entry) -> Message:
    message = Message(role=entry.role, content=entry.content, tool_calls=entry.tool_calls,
                      tool_call_id=entry.tool_call_id, name=entry.name, timestamp=entry.created_at,
                      compaction=entry.compaction)
    message._entry = entry.id
    return message
