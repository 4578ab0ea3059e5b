"""The lines of a task's journals: ``kv.jsonl``, ``tool_pins.jsonl`` and ``requests.jsonl``.

The writers (``tools/kv.py``, ``tools/pinning.py``, ``store/requests.py``) append plain dicts;
these models say what one line holds, for the published schemas (``models/published.py``) and
for anyone reading the files without magent."""

from typing import Annotated, Any, Literal, Union

from pydantic import Field

from magent.models.base import Model


class KvSet(Model):
    """``kv.set``: ``key`` now holds ``value``."""

    op: Literal["set"]
    key: str
    value: Any
    """Any JSON value (secrets masked)."""


class KvDelete(Model):
    """``kv.delete``: ``key`` is gone."""

    op: Literal["delete"]
    key: str


class KvLoad(Model):
    """The whole store at once: the ``kv.json`` of a task written by an older magent, copied in
    as the journal's first line."""

    op: Literal["load"]
    data: dict[str, Any]


KvChange = Annotated[Union[KvSet, KvDelete, KvLoad], Field(discriminator="op")]
"""One line of ``kv.jsonl``: a change to the task's key-value store, in order; the store at a
checkpoint is the changes up to its ``journals["kv.jsonl"]`` byte length."""


class ToolPin(Model):
    """One line of ``tool_pins.jsonl``: the definition of a tool as this task first used it (or as a
    person approved it after a change). The last line for a tool wins."""

    tool: str
    """The tool's full name (``server.tool``)."""
    hash: str
    """``sha256:`` and the hash of the canonical JSON of ``description`` and ``input_schema``."""
    description: str
    input_schema: dict[str, Any]
    pinned_at: str
    """When it was pinned (ISO 8601, seconds)."""


class RequestPiece(Model):
    """One line of ``requests.jsonl``: a piece of what was sent to a model, stored once; an
    ``llm_call`` event names it by ``hash`` (its ``request``)."""

    hash: str
    """First 16 hex digits of the sha256 of the canonical JSON of ``[kind, value]``."""
    kind: Literal["system", "tools", "messages", "params"]
    """A system prompt, a tool set, a one-off message list, or a call's parameters."""
    value: Any


class Signal(Model):
    """``tasks/{task_id}/signals/NNNNNN.json``: a control signal another process sent the running
    task (``store/signals.py``), applied once at the run's next safe point; its checkpoints'
    ``signals_applied`` says how far it has read."""

    signal: int
    """Its number, the ``NNNNNN`` of its file name: 1, 2... in the order sent."""
    kind: Literal["message", "pause", "cancel"]
    """``message``: ``text`` becomes an ``injection`` entry; ``pause``: the run pauses for a person
    (kind ``operator``); ``cancel``: the run ends as ``cancelled``."""
    text: str | None = None
    """A ``message``'s text."""
    session: str | None = None
    """The session a message is for (None: the main one)."""
    sent_at: str
    """When it was sent (ISO 8601)."""
    sender_pid: int | None = None
