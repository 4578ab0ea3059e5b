"""The memory database: one SQLite file every task shares (``$MAGENT_HOME/memory/memory.db``).

It relies on SQLite's locking, not magent's lock files, so that no crash or race loses or tears a
write: WAL (readers never wait), one ``BEGIN IMMEDIATE`` transaction per write (writers queue up
to ``busy_timeout``), ``synchronous=FULL`` (a commit survives power loss), FTS5 kept in step by
triggers in the same transaction, and a unique idempotency key that makes a repeated write a
no-op. A database that cannot be read is named in an error and never deleted or recreated."""

from __future__ import annotations

import json
import os
import sqlite3
from contextlib import contextmanager, suppress
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from magent import failpoints
from magent.errors import MemoryLockedError, MemoryNotFoundError, MemoryStoreError
from magent.models.memory import MemoryEntry

SCHEMA_VERSION = 1
"""``PRAGMA user_version`` of the database this code writes."""

COLUMNS = ("id", "content", "memory_type", "importance", "created_at", "last_accessed",
           "access_count", "source", "source_task", "source_agent", "tags", "scope", "scope_name",
           "status", "archived_at", "merged_into", "embedding_model")
SELECT = ", ".join(f"m.{c}" for c in COLUMNS)
TOKENIZE = "porter unicode61 remove_diacritics 2"
"""The full-text tokenizer: words split on anything not a letter or digit, case and accents
folded, English suffixes stemmed (``meetings`` and ``meeting`` are one term)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    content TEXT NOT NULL,
    memory_type TEXT NOT NULL CHECK (memory_type IN ('episodic', 'semantic', 'procedural')),
    importance REAL NOT NULL CHECK (importance >= 0 AND importance <= 1),
    created_at TEXT NOT NULL,
    last_accessed TEXT NOT NULL,
    access_count INTEGER NOT NULL DEFAULT 0,
    source TEXT NOT NULL,
    source_task TEXT,
    source_agent TEXT,
    tags TEXT NOT NULL DEFAULT '[]',
    scope TEXT NOT NULL CHECK (scope IN ('agent', 'workflow', 'global')),
    scope_name TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived')),
    archived_at TEXT,
    merged_into TEXT,
    embedding_model TEXT,
    decayed_at TEXT,
    idempotency_key TEXT UNIQUE
);
CREATE INDEX IF NOT EXISTS memories_scope ON memories (status, scope, scope_name);
CREATE INDEX IF NOT EXISTS memories_importance ON memories (status, importance);
CREATE INDEX IF NOT EXISTS memories_accessed ON memories (status, last_accessed);
CREATE TABLE IF NOT EXISTS memory_vectors (
    rowid INTEGER PRIMARY KEY,
    model TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts USING fts5(
    content, tags, content='memories', content_rowid='rowid', tokenize='{tokenize}');
CREATE VIRTUAL TABLE IF NOT EXISTS memory_terms USING fts5vocab(memory_fts, 'row');
CREATE TRIGGER IF NOT EXISTS memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memory_fts (rowid, content, tags) VALUES (new.rowid, new.content, new.tags);
END;
CREATE TRIGGER IF NOT EXISTS memories_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memory_fts (memory_fts, rowid, content, tags)
        VALUES ('delete', old.rowid, old.content, old.tags);
    DELETE FROM memory_vectors WHERE rowid = old.rowid;
END;
CREATE TRIGGER IF NOT EXISTS memories_au AFTER UPDATE OF content, tags ON memories BEGIN
    INSERT INTO memory_fts (memory_fts, rowid, content, tags)
        VALUES ('delete', old.rowid, old.content, old.tags);
    INSERT INTO memory_fts (rowid, content, tags) VALUES (new.rowid, new.content, new.tags);
    DELETE FROM memory_vectors WHERE rowid = old.rowid;
END;
""".replace("{tokenize}", TOKENIZE)

def iso(when: datetime) -> str:
    """Timestamps are stored as fixed-width UTC ISO strings, so SQL compares them as text."""
    return when.astimezone(timezone.utc).isoformat(timespec="microseconds")


def scope_clause(visible: list[tuple[str, str | None]] | None, alias: str = "m") -> tuple[str, list[str]]:
    """SQL (and its parameters) restricting rows to the ``visible`` scopes: ``(scope, scope_name)``
    pairs a reader may see (a None name: any name); None means everything."""
    if visible is None:
        return "1", []
    if not visible:
        return "0", []
    parts, params = [], []
    for scope, name in visible:
        if name is None:
            parts.append(f"({alias}.scope = ?)")
            params.append(scope)
            continue
        parts.append(f"({alias}.scope = ? AND {alias}.scope_name = ?)")
        params += [scope, name]
    return "(" + " OR ".join(parts) + ")", params


class MemoryStore:
    """Open with ``MemoryStore(path)``, as a context manager or ``close()`` it. ``create=False``
    creates nothing: a missing file reads as an empty store."""

    def __init__(self, path: Path, *, busy_timeout: float = 10.0, create: bool = True):
        self.path = Path(path)
        self.busy_timeout = busy_timeout
        self.writes = 0
        """Transactions this connection committed (caches compare it, with ``data_version``)."""
        self.changes = 0
        """Transactions of this connection that added or removed memories (not ``touch``)."""
        self._scratch = False
        self._count: tuple[Any, int] | None = None
        self._docs: tuple[Any, dict[str, int]] = (None, {})
        self.conn = self._connect(create)

    # opening
    def _connect(self, create: bool) -> sqlite3.Connection:
        if not self.path.exists() and not create:
            conn = sqlite3.connect(":memory:", isolation_level=None)
            conn.executescript(_SCHEMA)
            return conn
        if self.path.is_symlink() or (self.path.exists() and not self.path.is_file()):
            raise MemoryStoreError(f"{self.path} is not a regular file: the memory database must "
                                   "be a plain file (it was left as it is)")
        if not self.path.exists():
            from magent.store.files import FILE_MODE, ensure_dir

            ensure_dir(self.path.parent)
            try:  # created 0600 up front: SQLite gives its -wal and -shm files the same mode
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT, FILE_MODE))
            except OSError as exc:
                raise MemoryStoreError(f"cannot create {self.path}: {exc.strerror}") from None
        try:
            conn = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None)
        except sqlite3.Error as exc:
            raise MemoryStoreError(f"cannot open the memory database {self.path}: {exc}") from None
        try:
            with self._guard():
                conn.execute("PRAGMA synchronous = FULL")
                conn.execute("PRAGMA temp_store = MEMORY")
                # the log is emptied at each checkpoint anyway; this gives its space back
                conn.execute("PRAGMA journal_size_limit = 16777216")
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                if version > SCHEMA_VERSION:
                    raise MemoryStoreError(
                        f"{self.path} was written by a newer magent (schema {version}; this one knows "
                        f"{SCHEMA_VERSION}): upgrade magent to use it (the file was left as it is)")
                if version < SCHEMA_VERSION:
                    self._create(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _create(self, conn: sqlite3.Connection) -> None:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if tables and "memories" not in tables:
            raise MemoryStoreError(f"{self.path} is an SQLite database but not magent's memory "
                                   "(no 'memories' table); it was left as it is")
        if conn.execute("PRAGMA journal_mode = WAL").fetchone()[0].lower() != "wal":
            raise MemoryStoreError(f"{self.path}: could not switch the database to WAL mode")
        # One script, one transaction (executescript would commit a transaction begun outside it).
        try:
            conn.executescript(f"BEGIN IMMEDIATE;\n{_SCHEMA}\nPRAGMA user_version = {SCHEMA_VERSION};\n"
                               "COMMIT;")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "MemoryStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """SQLite's errors as errors a person can act on, naming the file."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            raise self.failure(exc) from None

    def failure(self, exc: sqlite3.Error) -> Exception:
        """The error to raise for ``exc``: locked, unreadable, or (a bug) as it is."""
        text = str(exc)
        if isinstance(exc, sqlite3.OperationalError):
            if "locked" in text or "busy" in text:
                return MemoryLockedError(
                    f"the memory database {self.path} is locked by another process (waited "
                    f"{self.busy_timeout:g} s); try again, or raise busy_timeout_seconds in "
                    "config/memory.yaml")
            if not any(w in text for w in ("disk I/O", "malformed", "not a database")):
                return exc
        return MemoryStoreError(
            f"the memory database {self.path} cannot be read ({text}); it was left as it is: move it "
            "aside to start a new one, or restore a copy (`magent memory export` output imports back)")

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``): all of it lands, or none of it."""
        with self._guard():
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
                failpoints.hit("memory_before_commit")
                self.conn.execute("COMMIT")
                self.writes += 1
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: every query inside sees the database as it was at its start."""
        with self._guard():
            self.conn.execute("BEGIN")
            try:
                yield self.conn
            finally:
                self.conn.execute("ROLLBACK")

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._guard():
            return self.conn.execute(sql, params).fetchall()

    # reading
    def data_version(self) -> int:
        """Changes when another connection commits (this connection's own commits do not count)."""
        return int(self.query("PRAGMA data_version")[0][0])

    def version(self) -> tuple[int, int]:
        """Changes whenever anyone (another process or this connection) commits a change."""
        return self.query("PRAGMA data_version")[0][0], self.writes

    def _content_version(self) -> tuple[int, int]:
        """Like ``version``, but this connection's access-count updates do not change it."""
        return self.query("PRAGMA data_version")[0][0], self.changes

    def doc_count(self) -> int:
        """How many memories the full-text index holds (cached until memories are added or removed)."""
        version = self._content_version()
        if self._count is None or self._count[0] != version:
            self._count = (version, int(self.query("SELECT count(*) FROM memories")[0][0]))
        return self._count[1]

    def term_docs(self, terms: Sequence[str]) -> dict[str, int]:
        """How many memories each index term occurs in, cached until memories are added or removed."""
        version = self._content_version()
        if self._docs[0] != version:
            self._docs = (version, {})
        cache = self._docs[1]
        missing = [t for t in terms if t not in cache]
        if missing:
            found = {t: int(d) for t, d in self.query(
                f"SELECT term, doc FROM memory_terms WHERE term IN ({','.join('?' * len(missing))})", missing)}
            cache.update({t: found.get(t, 0) for t in missing})
        return {t: cache[t] for t in terms}

    def stems(self, texts: Sequence[str]) -> list[set[str]]:
        """The index terms of each text, made by FTS5's own tokenizer (in a scratch table in
        memory), so they compare exactly with what the index holds."""
        with self._guard():
            conn = self.conn
            if not self._scratch:
                conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.memory_scratch USING fts5("
                             f"text, tokenize='{TOKENIZE}')")
                conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.memory_scratch_terms "
                             "USING fts5vocab(temp, memory_scratch, 'instance')")
                self._scratch = True
            # Inside a savepoint that is rolled back: nothing is kept, and undoing is cheaper
            # than deleting (and it nests inside a transaction the caller may have open).
            conn.execute("SAVEPOINT memory_stems")
            try:
                conn.executemany("INSERT INTO temp.memory_scratch (rowid, text) VALUES (?, ?)",
                                 list(enumerate(texts, 1)))
                out: list[set[str]] = [set() for _ in texts]
                for doc, term in conn.execute("SELECT doc, term FROM temp.memory_scratch_terms"):
                    out[int(doc) - 1].add(term)
            finally:
                conn.execute("ROLLBACK TO memory_stems")
                conn.execute("RELEASE memory_stems")
        return out

    def get(self, ref: str) -> MemoryEntry:
        """The memory whose id is ``ref`` or starts with it (at least 4 characters)."""
        return self.entries([self.resolve(ref)])[0]

    def resolve(self, ref: str, visible: list[tuple[str, str]] | None = None) -> int:
        """The rowid of the memory ``ref`` names; ``MemoryNotFoundError`` if none or several."""
        ref = ref.strip().lower()
        if len(ref) < 4 or not all(c in "0123456789abcdef-" for c in ref):
            raise MemoryNotFoundError(f"{ref!r} is not a memory id (give the id or at least its "
                                      "first 4 characters, as `magent memory list` shows them)")
        where, params = scope_clause(visible)
        rows = self.query(f"SELECT m.rowid, m.id FROM memories m WHERE m.id >= ? AND m.id < ? AND {where} "
                          "LIMIT 2", [ref, ref + "\uffff", *params])
        if not rows:
            raise MemoryNotFoundError(f"no memory with id {ref!r}")
        if len(rows) > 1:
            raise MemoryNotFoundError(f"{ref!r} matches several memories ({rows[0][1][:8]}, "
                                      f"{rows[1][1][:8]}...): give more of the id")
        return int(rows[0][0])

    def rowids(self, ids: Sequence[str]) -> dict[str, int]:
        """id → rowid for the ids that exist."""
        out: dict[str, int] = {}
        for start in range(0, len(ids), 500):
            chunk = list(ids[start:start + 500])
            out.update((r[0], int(r[1])) for r in self.query(
                f"SELECT id, rowid FROM memories WHERE id IN ({','.join('?' * len(chunk))})", chunk))
        return out

    def entries(self, rowids: Iterable[int]) -> list[MemoryEntry]:
        """The memories with these rowids, in the order given (missing ones left out)."""
        wanted = list(rowids)
        if not wanted:
            return []
        found: dict[int, MemoryEntry] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start:start + 500]
            marks = ",".join("?" * len(chunk))
            for row in self.query(f"SELECT m.rowid, {SELECT} FROM memories m WHERE m.rowid IN ({marks})",
                                  chunk):
                found[row[0]] = to_entry(row[1:])
        return [found[r] for r in wanted if r in found]

    def list(self, *, visible: list[tuple[str, str]] | None = None, types: Sequence[str] = (),
             status: str | None = "active", limit: int | None = None,
             order: str = "m.created_at DESC") -> list[MemoryEntry]:
        where, params = self._filters(visible, types, status)
        sql = f"SELECT {SELECT} FROM memories m WHERE {where} ORDER BY {order}, m.rowid"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [to_entry(row) for row in self.query(sql, params)]

    def iter_all(self, *, visible: list[tuple[str, str]] | None = None,
                 status: str | None = None) -> Iterator[MemoryEntry]:
        """Every memory, oldest first, read in pages (for export)."""
        where, params = self._filters(visible, (), status)
        last = 0
        while True:
            rows = self.query(f"SELECT m.rowid, {SELECT} FROM memories m WHERE m.rowid > ? AND {where} "
                              "ORDER BY m.rowid LIMIT 1000", [last, *params])
            if not rows:
                return
            for row in rows:
                yield to_entry(row[1:])
            last = rows[-1][0]

    def count(self, *, status: str | None = "active",
              visible: list[tuple[str, str]] | None = None) -> int:
        where, params = self._filters(visible, (), status)
        return int(self.query(f"SELECT count(*) FROM memories m WHERE {where}", params)[0][0])

    def _filters(self, visible: list[tuple[str, str]] | None, types: Sequence[str],
                 status: str | None) -> tuple[str, list[Any]]:
        where, params = scope_clause(visible)
        clauses: list[str] = [where]
        if types:
            clauses.append(f"m.memory_type IN ({','.join('?' * len(types))})")
            params += list(types)
        if status:
            clauses.append("m.status = ?")
            params.append(status)
        return " AND ".join(clauses), params

    def size_bytes(self) -> int:
        """The database on disk: the file plus its write-ahead log."""
        total = 0
        for suffix in ("", "-wal"):
            with suppress(OSError):
                total += os.stat(f"{self.path}{suffix}").st_size
        return total

    # writing
    def add(self, entries: Sequence[MemoryEntry], *, keys: Sequence[str | None] | None = None,
            replace: bool = False) -> list[tuple[str, bool]]:
        """Store ``entries`` in one transaction; returns ``(id, stored)`` for each. An entry whose
        id or key (``keys[i]``) is stored already is not stored again (``replace``: its content,
        tags and importance are replaced, the id stays)."""
        keys = list(keys) if keys is not None else [None] * len(entries)
        self.changes += 1
        with self.transaction() as conn:
            if any(k is not None for k in keys):
                return [self._add_one(conn, e, k, replace) for e, k in zip(entries, keys)]
            seen = self._existing(conn, [e.id for e in entries])
            conn.executemany(_INSERT, [to_row(e, None) for e in entries])
            out = []
            for entry in entries:
                out.append((entry.id, entry.id not in seen))
                seen.add(entry.id)
            return out

    @staticmethod
    def _existing(conn: sqlite3.Connection, ids: list[str]) -> set[str]:
        found: set[str] = set()
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            found.update(r[0] for r in conn.execute(
                f"SELECT id FROM memories WHERE id IN ({','.join('?' * len(chunk))})", chunk))
        return found

    def _add_one(self, conn: sqlite3.Connection, entry: MemoryEntry, key: str | None,
                 replace: bool) -> tuple[str, bool]:
        if key is not None:
            row = conn.execute("SELECT rowid, id FROM memories WHERE idempotency_key = ?", [key]).fetchone()
            if row is not None:
                if replace:
                    conn.execute("UPDATE memories SET content = ?, tags = ?, importance = ? WHERE rowid = ?",
                                 [entry.content, json.dumps(entry.tags), entry.importance, row[0]])
                return row[1], False
        cur = conn.execute(_INSERT, to_row(entry, key))
        return entry.id, cur.rowcount == 1

    def touch(self, rowids: Sequence[int], at: datetime) -> None:
        """Count a retrieval (``access_count``, ``last_accessed``). Statistics, so the commit does
        not wait for the disk: still atomic, but a power cut may lose the last counts."""
        rowids = list(rowids)
        if not rowids:
            return
        self.conn.execute("PRAGMA synchronous = NORMAL")
        try:
            with self.transaction() as conn:
                conn.execute(f"UPDATE memories SET access_count = access_count + 1, last_accessed = ? "
                             f"WHERE rowid IN ({','.join('?' * len(rowids))})", [iso(at), *rowids])
        finally:
            self.conn.execute("PRAGMA synchronous = FULL")

    def delete(self, rowids: Sequence[int]) -> int:
        """Remove memories for good (their index entries and vectors go with them)."""
        removed = 0
        self.changes += 1
        with self.transaction() as conn:
            for start in range(0, len(rowids), 500):
                chunk = list(rowids[start:start + 500])
                removed += conn.execute(f"DELETE FROM memories WHERE rowid IN ({','.join('?' * len(chunk))})",
                                        chunk).rowcount
        return removed


_INSERT = (f"INSERT OR IGNORE INTO memories ({', '.join(COLUMNS)}, idempotency_key) "
           f"VALUES ({', '.join('?' * (len(COLUMNS) + 1))})")


def to_row(entry: MemoryEntry, key: str | None) -> tuple[Any, ...]:
    return (entry.id, entry.content, entry.memory_type, entry.importance, iso(entry.created_at),
            iso(entry.last_accessed), entry.access_count, entry.source, entry.source_task,
            entry.source_agent, json.dumps(entry.tags, ensure_ascii=False), entry.scope,
            entry.scope_name, entry.status, iso(entry.archived_at) if entry.archived_at else None,
            entry.merged_into, entry.embedding_model, key)


def to_entry(row: Sequence[Any]) -> MemoryEntry:
    data = dict(zip(COLUMNS, row))
    try:
        data["tags"] = json.loads(data["tags"] or "[]")
    except ValueError:
        data["tags"] = []
    return MemoryEntry.model_validate(data)
