"""A server's question to the user mid-call (MCP ``elicitation/create``), answered for magent:
inline by the person at the terminal when a command set ``terminal_asker`` (a form from the
request's schema), else by the caller's ``elicitation`` setting (``decline``, ``cancel`` or
``defaults``). Each exchange goes to the run's trace as a masked ``elicitation`` event."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any, Callable, Literal

ElicitationPolicy = Literal["decline", "cancel", "defaults"]
POLICIES: tuple[str, ...] = ("decline", "cancel", "defaults")

Asker = Callable[[str, dict[str, Any]], "tuple[str, dict[str, Any] | None]"]
"""``ask(message, schema)`` → ``(action, content)``: blocking, it talks to a person (it runs in a
thread, so that the call's connection keeps being served)."""

terminal_asker: ContextVar[Asker | None] = ContextVar("magent_elicitation_asker", default=None)
"""Set by a command when a person can answer at the terminal; None: answer by the policy."""


def defaults(schema: dict[str, Any]) -> dict[str, Any]:
    """The form's default answer: each top-level property that has a ``default`` (SEP-1034)."""
    props = schema.get("properties") or {}
    return {name: spec["default"] for name, spec in props.items()
            if isinstance(spec, dict) and "default" in spec}


def by_policy(policy: str, schema: dict[str, Any] | None) -> tuple[str, dict[str, Any] | None]:
    """The answer when no person is asked: ``defaults`` accepts a form with its defaults (a URL
    question, which has no form, is declined); ``decline`` and ``cancel`` say so."""
    if policy == "defaults":
        return ("accept", defaults(schema)) if schema is not None else ("decline", None)
    return ("cancel", None) if policy == "cancel" else ("decline", None)


def callback(provider: Any) -> Callable[..., Any]:
    """The ``elicitation_callback`` of ``provider``'s sessions: asks whoever answers for the
    call in flight (``provider.calling``), records the exchange in its trace."""
    import asyncio

    async def elicit(context: Any, params: Any) -> Any:
        from mcp_types import ElicitResult

        call = provider.calling()
        schema = getattr(params, "requested_schema", None)
        question: dict[str, Any] = {"server": provider.name, "mode": getattr(params, "mode", "form"),
                                    "message": params.message}
        if schema is not None:
            question["schema"] = schema
        else:
            question["url"] = getattr(params, "url", None)
        ask = terminal_asker.get()
        policy = getattr(call, "elicitation", None) or "decline"
        if ask is not None:
            action, content = await asyncio.to_thread(ask, params.message, schema or {"url": question["url"]})
            answered_by = "person"
        else:
            action, content = by_policy(policy, schema)
            answered_by = f"config: {policy}"
        record = getattr(call, "record", None)
        if record is not None:
            record("elicitation", **question, action=action, content=content, answered_by=answered_by)
        return ElicitResult(action=action, content=content if action == "accept" else None)
    return elicit


def ask_in_terminal(message: str, schema: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """The form at the terminal: the server's message, then each field (Enter takes its default);
    ``d`` declines, ``c`` (or the input's end) cancels."""
    print(f"\nthe tool's server asks: {message}")
    if "url" in schema and "properties" not in schema:
        print(f"  it asks you to open {schema['url']}")
        reply = _input("  open it and go on? [y]es / [d]ecline / [c]ancel: ")
        return ("accept", None) if reply in ("y", "yes") else ("decline", None) if reply == "d" else ("cancel", None)
    content: dict[str, Any] = {}
    required = set(schema.get("required") or [])
    for name, spec in (schema.get("properties") or {}).items():
        while True:
            value = _field(name, spec, name in required)
            if value is _CANCEL:
                return "cancel", None
            if value is _DECLINE:
                return "decline", None
            if value is not _RETRY:
                break
        if value is not _SKIP:
            content[name] = value
    return "accept", content


_CANCEL, _DECLINE, _RETRY, _SKIP = object(), object(), object(), object()


def _input(prompt: str) -> str | None:
    try:
        return input(prompt).strip()
    except EOFError:
        return None


def _field(name: str, spec: dict[str, Any], required: bool) -> Any:
    """One field asked: its value (typed as the schema says), or one of the markers above."""
    kind = spec.get("type", "string")
    choices = spec.get("enum")
    hint = f" ({'/'.join(map(str, choices))})" if choices else f" ({kind})"
    default = spec.get("default")
    shown = f" [{default}]" if "default" in spec else ""
    about = f" - {spec['description']}" if spec.get("description") else ""
    reply = _input(f"  {spec.get('title', name)}{about}{hint}{shown}{'*' if required else ''}: ")
    if reply is None or reply == "c":
        return _CANCEL
    if reply == "d":
        return _DECLINE
    if reply == "":
        if "default" in spec:
            return default
        if required:
            print("  this field is required (d declines, c cancels)")
            return _RETRY
        return _SKIP
    try:
        value: Any = {"integer": int, "number": float}.get(kind, str)(reply)
        if kind == "boolean":
            value = reply.lower() in ("y", "yes", "true", "1")
    except ValueError:
        print(f"  please give a {kind}")
        return _RETRY
    if choices and value not in choices:
        print(f"  please give one of {', '.join(map(str, choices))}")
        return _RETRY
    return value
