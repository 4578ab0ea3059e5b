"""Memory vectors when an embedding model is configured (numpy, imported only then): stored unit
length, so cosine is a dot product; a search's matrix is kept until memories or vectors change
(``PRAGMA data_version`` for other processes' writes)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from magent.memory.store import MemoryStore, scope_clause

if TYPE_CHECKING:
    from magent.models.memory import MemorySettings


def unit(vector: Sequence[float]) -> Any:
    import numpy as np

    v = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v


class Embedder:
    """A litellm embedding model with its endpoint and key; query vectors are cached."""

    def __init__(self, model: str, *, endpoint: str | None = None, api_key: str | None = None,
                 timeout: float = 30):
        self.model = model
        self.endpoint = endpoint
        self.api_key = api_key
        self.timeout = timeout
        self._queries: dict[str, Any] = {}

    @classmethod
    def configured(cls, settings: "MemorySettings", model: str | None = None) -> "Embedder | None":
        """The embedder for ``model`` (an agent's) or the settings' model; None without one."""
        name = model or settings.embedding_model
        if not name:
            return None
        same = name == settings.embedding_model
        return cls(name, endpoint=settings.embedding_endpoint if same else None,
                   api_key=settings.embedding_api_key if same else None,
                   timeout=settings.embedding_timeout_seconds)

    def embed(self, texts: Sequence[str]) -> list[Any]:
        """Unit vectors for ``texts``; ``LLMError`` when the model fails."""
        from magent.llm.embedding import embed

        raw = embed(texts, model=self.model, endpoint=self.endpoint, api_key=self.api_key,
                    timeout=self.timeout)
        return [unit(v) for v in raw]

    def query(self, text: str) -> Any:
        if text not in self._queries:
            self._queries[text] = self.embed([text])[0]
        return self._queries[text]


def save_vectors(store: MemoryStore, model: str, vectors: dict[int, Any]) -> None:
    """Store unit vectors by rowid (replacing older ones) and note the model on each memory."""
    if not vectors:
        return
    store.changes += 1
    with store.transaction() as conn:
        conn.executemany("INSERT OR REPLACE INTO memory_vectors (rowid, model, dim, vector) VALUES (?, ?, ?, ?)",
                         [(r, model, int(v.shape[0]), v.tobytes()) for r, v in vectors.items()])
        conn.executemany("UPDATE memories SET embedding_model = ? WHERE rowid = ?",
                         [(model, r) for r in vectors])


class VectorIndex:
    """Cosine similarities between a query vector and the stored vectors of one model."""

    def __init__(self, model: str):
        self.model = model
        self._cache: dict[Any, tuple[list[int], Any, dict[int, int]]] = {}

    def matrix(self, store: MemoryStore, dim: int, visible: list[tuple[str, str]] | None,
               types: Sequence[str] = (), status: str = "active") -> tuple[list[int], Any, dict[int, int]]:
        """(rowids, unit vectors as rows, rowid → row) of the visible memories, kept until
        memories or vectors are added or removed (access-count updates do not count)."""
        import numpy as np

        key = (store._content_version(), dim, tuple(visible) if visible is not None else None,
               tuple(types), status)
        if key not in self._cache:
            where, params = scope_clause(visible)
            sql = (f"SELECT v.rowid, v.vector FROM memory_vectors v JOIN memories m ON m.rowid = v.rowid "
                   f"WHERE v.model = ? AND v.dim = ? AND m.status = ? AND {where}")
            if types:
                sql += f" AND m.memory_type IN ({','.join('?' * len(types))})"
            rows = store.query(sql, [self.model, dim, status, *params, *types])
            rowids = [int(r[0]) for r in rows]
            matrix = (np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), dim)
                      if rows else np.zeros((0, dim), dtype=np.float32))
            self._cache = {key: (rowids, matrix, {r: i for i, r in enumerate(rowids)})}
        return self._cache[key]

    def similarities(self, store: MemoryStore, query: Any, visible: list[tuple[str, str]] | None,
                     types: Sequence[str] = (), top: int = 20, also: Sequence[int] = ()) -> dict[int, float]:
        """rowid → cosine similarity for the ``top`` most similar memories and for ``also``."""
        import numpy as np

        rowids, matrix, position = self.matrix(store, int(query.shape[0]), visible, types)
        if not rowids:
            return {}
        sims = matrix @ query
        best = np.argpartition(-sims, min(top, len(rowids) - 1))[:top] if len(rowids) > top else range(len(rowids))
        out = {rowids[int(i)]: float(sims[int(i)]) for i in best}
        out.update({r: float(sims[position[r]]) for r in also if r in position})
        return out
