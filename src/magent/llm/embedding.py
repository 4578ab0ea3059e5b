"""Embedding calls through litellm, for long-term memory's vectors (imported only when an
embedding model is configured; ``magent memory`` without one never loads litellm)."""

from __future__ import annotations

from typing import Any, Sequence

from magent.errors import LLMError

BATCH = 128
"""Texts per request."""


def embed(texts: Sequence[str], *, model: str, endpoint: str | None = None,
          api_key: str | None = None, timeout: float = 30) -> list[list[float]]:
    """One vector per text, in order. Any failure is an ``LLMError`` naming the model."""
    from magent.llm.failures import clean_message
    from magent.llm.litellm_client import check_endpoint_allowed, load_litellm

    check_endpoint_allowed(model, endpoint)
    litellm = load_litellm()
    out: list[list[float]] = []
    for start in range(0, len(texts), BATCH):
        batch = list(texts[start:start + BATCH])
        try:
            response = litellm.embedding(model=model, input=batch, api_base=endpoint, api_key=api_key,
                                         timeout=timeout, num_retries=0, max_retries=1)
            vectors = _vectors(response, len(batch))
        except LLMError:
            raise
        except Exception as exc:
            where = f" at {endpoint}" if endpoint else ""
            raise LLMError(f"embedding model {model!r}{where} failed: {clean_message(exc)}") from None
        out.extend(vectors)
    return out


def _vectors(response: Any, expected: int) -> list[list[float]]:
    items = [_get(d, "embedding") for d in sorted(response.data, key=lambda d: _get(d, "index") or 0)]
    if len(items) != expected or not all(isinstance(v, list) and v for v in items):
        raise LLMError(f"the embedding model returned {len(items)} vectors for {expected} texts")
    return [[float(x) for x in v] for v in items]


def _get(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, dict) else getattr(item, key, None)
