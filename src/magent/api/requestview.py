"""The exact requests of one step's model calls (``magent trace ID --step N --request``), put
back together from ``requests.jsonl`` in the OpenAI chat format litellm is handed."""

from __future__ import annotations

import json
from typing import Any

from magent.llm.openai_format import safe_name
from magent.trace.detail import carried_why, selection_lines
from magent.trace.load import TraceView
from magent.trace.view import Line

WITHHELD = ("not kept: a rail masked or withheld part of the text this guardrail judge checked, "
            "and its prompt holds that text as the judge saw it")


def step_requests(view: TraceView, number: int) -> tuple[list[dict[str, Any]], list[str]]:
    """One record per model call of step ``number`` (who asked, and the request as sent), and
    what could not be read on the way. Raises ``UsageError`` when the step made no model call."""
    from magent.errors import UsageError
    from magent.trace.detail import check_step

    check_step(view, number)
    events = view.built.events if view.built is not None else []
    calls = [ev for ev in events[number - 1] if ev.get("type") == "llm_call"] if events else []
    if not calls:
        with_calls = [str(n) for n, evs in enumerate(events, 1) if any(e.get("type") == "llm_call" for e in evs)]
        hint = f" (steps with model calls: {_ranges(with_calls)})" if with_calls else " (the task made none)"
        raise UsageError(f"step {number} of task {view.task_dir.id[:8]} made no model call{hint}")
    problems: list[str] = []
    pieces = view.task_dir.requests.load(problems)
    entries: dict[str, Any] | None = None
    out = []
    for i, ev in enumerate(calls, 1):
        item: dict[str, Any] = {"call": i, "of": len(calls), "agent": ev.get("agent"), "rail": ev.get("rail"),
                                "session": ev.get("session"), "iteration": ev.get("iteration"),
                                "answered_by": ev.get("model"), "route": ev.get("route")}
        sent = ev.get("request")
        if not isinstance(sent, dict):
            item["note"] = "not recorded: this call was made by a magent that did not keep requests"
            out.append(item)
            continue
        if "params" in sent:  # schema 7: the parameters by hash (older events carry them)
            params = pieces.get(sent["params"])
            if not isinstance(params, dict):
                item["note"] = f"its parameters ({sent['params']}) are missing from requests.jsonl"
                out.append(item)
                continue
            sent = {**params, **{k: v for k, v in sent.items() if k != "params"}}
        if "conversation" in sent and entries is None:
            entries = view.task_dir.entries.load(problems)
        item.update(_rebuild(sent, pieces, entries or {}, view.task_dir.entries))
        if isinstance(sent.get("selection"), dict):
            item["tool_selection"] = sent["selection"]
        out.append(item)
    return out, problems


def _rebuild(sent: dict[str, Any], pieces: dict[str, Any], entries: dict[str, Any], log: Any) -> dict[str, Any]:
    from magent.engine import textmode
    from magent.engine.compaction import recorded_view
    from magent.llm.base import LLMRequest, ToolSpec
    from magent.llm.openai_format import ToolNames, to_openai_messages, to_openai_tools
    from magent.models import Message
    from magent.store.entries import to_message

    missing: list[str] = []

    def piece(kind: str) -> Any:
        key = sent.get(kind)
        if key is None:
            return None
        if key not in pieces:
            missing.append(f"the {kind} ({key}) is missing from requests.jsonl")
            return None
        return pieces[key]

    system = piece("system") or ""
    tools = [ToolSpec(name=t["name"], description=t.get("description") or "", parameters=t.get("parameters") or {})
             for t in piece("tools") or []]
    messages: list[Message] | None = None
    conversation = sent.get("conversation")
    if isinstance(conversation, dict):
        try:
            messages = [to_message(e) for e in log.path_to(conversation.get("leaf"), entries)]
            messages = recorded_view(messages, conversation.get("compaction"))
        except ValueError as exc:
            missing.append(f"the conversation cannot be rebuilt ({exc})")
        if messages is not None and sent.get("text_mode"):
            messages = textmode.as_text_messages(messages)
    elif not sent.get("messages_withheld"):
        stored = piece("messages")
        if stored is not None:
            messages = [Message.model_validate(m) for m in stored]
    request = LLMRequest(model=str(sent.get("model")), messages=messages or [], system=system,
                         tools=[] if sent.get("text_mode") else tools)
    names = ToolNames([t.name for t in request.tools])
    body: dict[str, Any] = {"model": request.model}
    body["messages"] = to_openai_messages(request, names) if messages is not None else (
        [{"role": "system", "content": system}] if system else [])
    if request.tools:
        body["tools"] = to_openai_tools(request.tools, names)
    body["temperature"] = sent.get("temperature")
    if sent.get("max_tokens"):
        body["max_tokens"] = sent["max_tokens"]
    if sent.get("endpoint"):
        body["api_base"] = sent["endpoint"]
    body["stream"] = sent.get("stream") is not False  # (a call asked for its whole reply says so)
    record: dict[str, Any] = {
        "request": body,
        "settings": {k: sent[k] for k in ("timeout", "max_retries", "fallback_model", "api_key", "text_mode")
                     if sent.get(k) is not None},
        "stored": {k: sent[k] for k in ("system", "tools", "messages") if isinstance(sent.get(k), str)},
    }
    if isinstance(conversation, dict):
        record["stored"]["conversation_leaf"] = conversation.get("leaf")
    if sent.get("messages_withheld"):
        record["messages_note"] = WITHHELD
    if missing:
        record["problems"] = missing
    return record


def _ranges(numbers: list[str], most: int = 12) -> str:
    shown = ", ".join(numbers[:most])
    return shown + (f" and {len(numbers) - most} more" if len(numbers) > most else "")


def request_lines(number: int, calls: list[dict[str, Any]]) -> list[Line]:
    """The requests as styled lines, nothing cut."""
    lines: list[Line] = []
    for item in calls:
        if lines:
            lines.append([])
        who = item.get("rail") and f"rail {item['rail']}" or item.get("agent") or "?"
        head: Line = [(f"step {number}", "bold"), (f" · model call {item['call']} of {item['of']}", "dim"),
                      (f" · {who}", "bold cyan")]
        if item.get("iteration") is not None and "conversation_leaf" in (item.get("stored") or {}):
            head.append((f" · turn {item['iteration']}", None))
        if item.get("session"):
            head.append((f" · session {str(item['session'])[:8]}", "dim"))
        lines.append(head)
        if item.get("note"):
            lines.append([(item["note"], "yellow")])
            continue
        body, settings = item["request"], item["settings"]
        params = [f"temperature {body.get('temperature')}", f"max_tokens {body.get('max_tokens', 'not set')}",
                  f"timeout {settings.get('timeout')} s", f"{settings.get('max_retries')} retries"]
        if settings.get("fallback_model"):
            params.append(f"then {settings['fallback_model']}")
        if body.get("api_base"):
            params.append(f"at {body['api_base']}")
        if settings.get("api_key"):
            params.append("API key set (not shown)")
        lines.append([("sent to ", None), (str(body.get("model")), "blue"), (f" · {' · '.join(params)}", "dim")])
        if item.get("route"):
            lines.append([("model chosen by ", None), (str(item["route"]), "cyan")])
        if item.get("answered_by") and item["answered_by"] != body.get("model"):
            lines.append([(f"answered by {item['answered_by']}", "yellow")])
        if settings.get("text_mode"):
            lines.append([("text mode: the tools are described in the system prompt, results come back as "
                           "Observations", "dim")])
        for problem in item.get("problems") or []:
            lines.append([(problem, "yellow")])
        stored = item.get("stored") or {}
        for message in body.get("messages") or []:
            lines.extend(_message_lines(message, stored))
        if item.get("messages_note"):
            lines.append([("messages: ", "bold"), (item["messages_note"], "dim")])
        tools = body.get("tools") or []
        selection = item.get("tool_selection")
        if selection:
            lines.append([])
            lines.extend(selection_lines(selection))
        why = {safe_name(t["tool"]): carried_why(t) for t in (selection or {}).get("carried") or []}
        if tools:
            lines.append([])
            lines.append([(f"tools ({len(tools)})", "bold"), (f"  stored as {stored.get('tools')}", "dim")])
            for tool in tools:
                fn = tool.get("function") or {}
                lines.append([(f"  {fn.get('name')}", "magenta"), (f"  {fn.get('description') or ''}", None)])
                if fn.get("name") in why:
                    lines.append([(f"    carried: {why[fn['name']]}", "dim")])
                schema = json.dumps(fn.get("parameters"), ensure_ascii=False, separators=(",", ":"))
                lines.append([(f"    {schema}", "dim")])
    return lines


def _message_lines(message: dict[str, Any], stored: dict[str, Any]) -> list[Line]:
    role = str(message.get("role"))
    lines: list[Line] = [[]]
    head: Line = [(role, "bold")]
    if role == "system" and stored.get("system"):
        head.append((f"  stored once as {stored['system']}", "dim"))
    if message.get("tool_call_id"):
        head.append((f"  result of {message['tool_call_id']}", "dim"))
    lines.append(head)
    content = message.get("content")
    for row in (content or "").splitlines() or ([] if message.get("tool_calls") else ["(empty)"]):
        lines.append([("  " + row, None)])
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        lines.append([(f"  → {fn.get('name')} ", "magenta"), (str(fn.get("arguments")), None),
                      (f"  ({call.get('id')})", "dim")])
    return lines
