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

_ACTION = re.compile(r"^\s*Action\s*:\s*(.+?)\s*$", re.M | re.I)
_INPUT = re.compile(r"^\s*Action\s*Input\s*:\s*(.*)", re.M | re.I | re.S)
_FINAL = re.compile(r"^\s*Final\s*Answer\s*:\s*(.*)", re.M | re.I | re.S)
_THOUGHT = re.compile(r"^\s*Thought\s*:\s*(.*?)(?=^\s*(?:Action|Final\s*Answer)\s*:|\Z)", re.M | re.I | re.S)


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


def parse(text: str) -> Parsed:
    thought_m = _THOUGHT.search(text)
    thought = thought_m.group(1).strip() if thought_m else ""
    action_m = _ACTION.search(text)
    final_m = _FINAL.search(text)
    if action_m and (not final_m or action_m.start() < final_m.start()):
        raw = ""
        input_m = _INPUT.search(text, action_m.end())
        if input_m:
            raw = input_m.group(1).strip()
            raw = raw.split("\nObservation:")[0].strip()
            if raw.startswith("```"):
                raw = raw.strip("`").removeprefix("json").strip()
        args: dict | None
        try:
            value = json.loads(raw) if raw else {}
            args = value if isinstance(value, dict) else None
        except ValueError:
            args = None
        return Parsed(thought=thought, action=action_m.group(1).strip(), arguments=args, raw_arguments=raw)
    if final_m:
        return Parsed(thought=thought, final=final_m.group(1).strip())
    return Parsed(thought=thought, final=None)


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
