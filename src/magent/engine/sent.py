"""What a model call sent, as its ``llm_call`` event records it (``magent trace --request``).

The record is small: the parameters (which name the prompt and tools), the prompt, the tools
(and a one-off prompt such as a critic's) by hash into the task's ``requests.jsonl``, where each
distinct one is stored once, the conversation by its last entry in ``entries.jsonl``. Everything
goes through the run's redactor first, like every other file of the task.
"""

from __future__ import annotations

from typing import Any

from pydantic_core import to_jsonable_python

from magent.llm.base import LLMRequest

_PLAIN = (str, int, float, bool)


def record(request: LLMRequest, pieces: Any, redactor: Any, *, keep_messages: bool = True) -> dict[str, Any]:
    """The ``request`` field of an ``llm_call`` event; stores new pieces in ``pieces``
    (the task's ``RequestLog``). ``keep_messages=False`` (a guardrail judge's call when the
    rails masked or withheld part of the text it checked) leaves the messages out: they hold
    that text as the judge saw it."""
    # An agent sends the same prompt, tools and parameters on every turn: the piece that names
    # them is known by what it was made from after the first (while the redactor masks the same
    # secrets), without making it again.
    masking = (id(redactor), len(redactor.secrets))
    memo = pieces.memo
    values = (request.model, request.temperature, request.max_tokens, request.fallback_model, request.endpoint,
              request.timeout, request.max_retries)
    key, known = None, None
    if all(v is None or type(v) in _PLAIN for v in values):  # (a fallback's settings: not kept)
        key = ("request", masking, values, bool(request.api_key), bool(request.text_mode), request.system,
               tuple((t.name, t.description, id(t.parameters)) for t in request.tools))
        known = memo.get(key)
    if known is None:
        known = (_params(request, pieces, redactor, masking, memo), [t.parameters for t in request.tools])
        if key is not None:  # (the schemas are held, so the ids in the key stay theirs)
            memo[key] = known
    out: dict[str, Any] = {"params": known[0]}
    if request.selection is not None:
        out["selection"] = request.selection
    if not keep_messages:
        out["messages_withheld"] = True
    elif request.conversation_leaf is not None:
        out["conversation"] = {"leaf": request.conversation_leaf, "count": len(request.messages)}
        if request.compaction is not None:
            out["conversation"]["compaction"] = request.compaction
    else:
        messages = [m.model_dump(mode="json", exclude_none=True, exclude={"timestamp"}) for m in request.messages]
        out["messages"] = pieces.put("messages", redactor.data(messages))
    return out


def _params(request: LLMRequest, pieces: Any, redactor: Any, masking: Any, memo: dict[Any, Any]) -> str:
    """The id of the ``params`` piece of ``request`` (its parameters, naming its prompt and tools
    pieces), each piece stored the first time it is seen."""
    out: dict[str, Any] = {"model": request.model, "temperature": request.temperature}
    for name in ("max_tokens", "fallback_model"):
        if getattr(request, name) is not None:
            out[name] = getattr(request, name)
    if request.endpoint:
        out["endpoint"] = redactor.text(request.endpoint)
    out["timeout"] = request.timeout
    out["max_retries"] = request.max_retries
    if request.api_key:
        out["api_key"] = "set"  # never the key itself
    if request.text_mode:
        out["text_mode"] = True
    if request.system:
        key: tuple[Any, ...] | None = ("system", masking, request.system)
        if (known := memo.get(key)) is None:
            known = memo[key] = (pieces.put("system", redactor.text(request.system)), None)
        out["system"] = known[0]
    if request.tools:
        key = ("tools", masking, tuple((t.name, t.description, id(t.parameters)) for t in request.tools))
        if (known := memo.get(key)) is None:
            tools = [{"name": t.name, "description": t.description, "parameters": t.parameters}
                     for t in request.tools]
            # (the schemas are held, so the ids in the key stay theirs)
            known = memo[key] = (pieces.put("tools", redactor.data(tools)), [t.parameters for t in request.tools])
        out["tools"] = known[0]
    # The same for every turn of an agent: stored once, like the prompt and tools it names
    # (masked like the event it would have been part of).
    key = ("params", masking, tuple(out.items())) if all(
        v is None or type(v) in _PLAIN for v in out.values()) else None  # (a fallback's settings: not kept)
    known = memo.get(key) if key is not None else None
    if known is None:
        known = (pieces.put("params", redactor.data(to_jsonable_python(out))), None)
        if key is not None:
            memo[key] = known
    params: str = known[0]
    return params
