"""The ReAct text format (seed 000), for models without native function calling.

The model writes::

    Thought: what it thinks
    Action: server.tool
    Action Input: {"json": "arguments"}

or ``Final Answer: ...``; tool results come back as ``Observation: ...``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from magent.llm.base import ToolSpec
from magent.models import Message

# A label line as models write it: ``Action:``, ``**Action:**``, ``**Action**:``, ``### Action:``.
_LABEL = re.compile(r"^[ \t]*(?:#+[ \t]*)?[*_]{0,3}[ \t]*(Thought|Action[ \t]*Input|Action|Final[ \t]*Answer|Observation)"
                    r"[ \t]*(?:[*_]{1,3}[ \t]*:|:[ \t]*[*_]{0,3})[ \t]*", re.M | re.I)
_ACTION = re.compile(r"^Action:(.*)$", re.M)
_INPUT = re.compile(r"^Action Input:(.*)", re.M | re.S)
_FINAL = re.compile(r"^Final Answer:(.*)", re.M | re.S)
_THOUGHT = re.compile(r"^Thought:(.*?)(?=^(?:Action|Final Answer):|\Z)", re.M | re.S)
_NEXT_LABEL = re.compile(r"^(?:Observation|Thought|Action|Final Answer):", re.M)
_FENCE = re.compile(r"```[A-Za-z]*[ \t]*\n?(.*?)```", re.S)

NO_STEP = ("Your reply has a Thought but no Action and no Final Answer. Continue: call a tool "
           "(Action and Action Input) or give your Final Answer.")
"""What the model is told after a reply that only thinks (seed 000: no action, no answer → think on)."""


def instructions(tools: list[ToolSpec]) -> str:
    lines = ["You can use these tools:"]
    for t in tools:
        lines.append(f"- {t.name}: {t.description} Arguments (JSON Schema): "
                     f"{json.dumps(t.parameters, separators=(',', ':'))}")
    lines += [
        "",
        "Answer in this format. To use a tool:",
        "Thought: your reasoning",
        "Action: the tool name, exactly as listed",
        'Action Input: the arguments as one JSON object, e.g. {"key": "value"}',
        "Then stop and wait for the Observation. When you know the answer:",
        "Thought: your reasoning",
        "Final Answer: the answer",
    ]
    return "\n".join(lines)


@dataclass(eq=False)
class Parsed:
    thought: str
    action: str | None = None
    arguments: dict | None = None
    raw_arguments: str = ""
    final: str | None = None
    labelled: bool = False
    """The reply used the format's labels (so one without an Action or a Final Answer is only
    thinking); a reply without any label is taken as a plain answer."""


def parse(text: str) -> Parsed:
    """A reply in the text format, read the way models write it: labels in markdown emphasis or
    headings, the tool name in backticks, the Action Input in a code fence or followed by
    prose; anything from an ``Observation:`` the model wrote itself onwards is not read."""
    text = _LABEL.sub(lambda m: _label(m.group(1)) + ": ", text)
    labelled = bool(re.search(r"^Thought:", text, re.M))
    thought_m = _THOUGHT.search(text)
    thought = thought_m.group(1).strip() if thought_m else ""
    action_m = _ACTION.search(text)
    final_m = _FINAL.search(text)
    if action_m and (not final_m or action_m.start() < final_m.start()):
        input_m = _INPUT.search(text, action_m.end())
        raw = _input_text(input_m.group(1)) if input_m else ""
        args, raw = _arguments(raw)
        return Parsed(thought=thought, action=_tool_name(action_m.group(1)), arguments=args,
                      raw_arguments=raw, labelled=True)
    if final_m:
        return Parsed(thought=thought, final=final_m.group(1).strip(), labelled=True)
    return Parsed(thought=thought, final=None, labelled=labelled)


def step_text(text: str) -> str:
    """``text`` without what follows a hallucinated ``Observation:`` after the Action: the
    model's turn as it goes into the conversation, before the real Observation."""
    acted = False
    for m in _LABEL.finditer(text):
        label = _label(m.group(1))
        if label == "Action":
            acted = True
        elif label == "Observation" and acted:
            return text[:m.start()].rstrip()
    return text


def _label(word: str) -> str:
    return {"actioninput": "Action Input", "finalanswer": "Final Answer"}.get(
        re.sub(r"\s+", "", word).lower(), word.strip().capitalize())


def _tool_name(text: str) -> str:
    """``kv.set``, ```kv.set```, ``"kv.set"``, ``**kv.set**``, ``kv.set()`` or ``kv.set (to
    store it)`` → ``kv.set`` (magent's tool names have no spaces or brackets)."""
    name = re.match(r"[`*_\"'\s]*([\w.\-]+)", text)
    return name.group(1) if name else text.strip()


def _input_text(text: str) -> str:
    """The Action Input up to the next label (a hallucinated Observation, a new Thought...)."""
    following = _NEXT_LABEL.search(text)
    return (text[:following.start()] if following else text).strip()


def _arguments(raw: str) -> tuple[dict | None, str]:
    """The JSON object of an Action Input (inside a code fence, or the first object in the
    text, prose after it ignored) and the raw text it was read from."""
    fence = _FENCE.search(raw)
    if fence:
        raw = fence.group(1).strip()
    if not raw:
        return {}, raw
    start = raw.find("{")
    if start < 0:
        return None, raw
    try:
        value, end = json.JSONDecoder().raw_decode(raw, start)
    except ValueError:
        return None, raw
    if not isinstance(value, dict):
        return None, raw
    return value, raw[start:end]


def as_text_messages(messages: list[Message]) -> list[Message]:
    """The conversation as a text-mode model sees it: tool results become Observations."""
    out: list[Message] = []
    for m in messages:
        if m.role == "tool":
            out.append(Message(role="user", content=f"Observation: {m.content}", timestamp=m.timestamp))
        elif m.role == "assistant" and m.tool_calls:
            out.append(Message(role="assistant", content=m.content, timestamp=m.timestamp))
        else:
            out.append(m)
    return out
