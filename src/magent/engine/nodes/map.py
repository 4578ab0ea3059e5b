"""``type: map`` — one child session per item of a list in State, side by side.

Each item runs ``agent``'s ReAct loop in a session of its own whose history starts with
``prompt`` (``{item}`` and ``{index}`` filled in), at most ``max_concurrency`` at a time; the
answers go into ``metadata[output_key]`` in item order (the options: the fields below, and
docs/guides/agents-and-workflows.md). Each item is durable like any session: after a crash,
finished items are read back, open ones continue, and the rest start.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Literal

from pydantic import Field, field_validator

from magent.engine.children import run_agent_session
from magent.engine.context import NodeContext
from magent.engine.control import NodeFailed, Suspended
from magent.engine.nodes.base import Node, NodeConfig, NodeResult
from magent.engine.react import raise_first, react
from magent.models.progress import ItemResult, MapProgress, MapRecord

class MapConfig(NodeConfig):
    agent: str
    """The agent that handles each item."""
    over: str
    """The list to map over: ``metadata.PATH`` or ``output`` (the last output, a JSON list)."""
    prompt: str = "Handle this item:\n{item}"
    """Each item's instruction; ``{item}`` (JSON for anything but text) and ``{index}`` (from 0)."""
    max_concurrency: int = Field(default=4, gt=0, le=256)
    """Items handled at the same time."""
    on_error: Literal["fail", "collect"] = "fail"
    """A failed item fails the node (``fail``), or is kept as ``{"error": ...}`` (``collect``)."""
    output_key: str | None = None
    """Metadata key of the list of answers (default: the node's name)."""

    @field_validator("over")
    @classmethod
    def _state_path(cls, value: str) -> str:
        parts = value.split(".")
        if value == "output" or (parts[0] == "metadata" and len(parts) > 1 and all(parts)):
            return value
        raise ValueError(f"{value!r} is not a list in State: write metadata.NAME (e.g. metadata.files) "
                         "or output (the last node's output, a JSON list)")


class MapNode(Node):
    kind = "map"
    Config = MapConfig
    Progress = MapProgress
    config: MapConfig

    @classmethod
    def agent_refs(cls, config: MapConfig) -> list[tuple[str, str]]:
        return [("agent", config.agent)]

    async def run(self, ctx: NodeContext) -> NodeResult:
        config = self.config
        items = self._items(ctx)
        p = ctx.session.progress_as(MapProgress)
        if p.map is None:
            p.map = MapRecord(count=len(items))
            ctx.bus.emit("map_started", self.name, agent=config.agent, items=len(items),
                         max_concurrency=config.max_concurrency, on_error=config.on_error)
            ctx.checkpoints.node_started()
        done = p.map.done
        group = ctx.session.stop.child()  # a failed item stops its siblings, not the whole run
        slots = asyncio.Semaphore(config.max_concurrency)

        async def one(index: int) -> None:
            if index in done:
                return
            async with slots:
                key = f"item:{index}"
                child = ctx.run.child(ctx.session, key)
                if child is None:
                    if group.is_set:
                        raise Suspended(key)
                    child = ctx.run.open_session(ctx.session, kind="map", key=key, node=self.name,
                                                 agent=config.agent, task=instruction(config.prompt, items[index], index),
                                                 stop=group, speaker="workflow")
                    ctx.checkpoints.session_started()
                child.stop = group
                outcome = await run_agent_session(ctx.run, child, self.name, react)
                if outcome.ok:
                    done[index] = ItemResult(entry=outcome.entry_id)
                else:
                    done[index] = ItemResult(error=ctx.deps.redactor.text(outcome.text))
                    if config.on_error == "fail":
                        group.set("fail")
                        raise NodeFailed(f"map node '{self.name}': item {index} failed: {outcome.text}")
                ctx.checkpoints.node_step("map_item")

        raise_first(await asyncio.gather(*(one(i) for i in range(len(items))), return_exceptions=True))
        answers: list[Any] = []
        for index in range(len(items)):
            record = done[index]
            answers.append(ctx.run.entry_text(record.entry or "") if record.error is None else {"error": record.error})
        ctx.state.metadata[config.output_key or self.name] = answers
        failed = sum(1 for a in answers if isinstance(a, dict))
        ctx.bus.emit("map_finished", self.name, items=len(items), completed=len(items) - failed, failed=failed)
        return NodeResult(output="\n\n".join(
            f"{i + 1}. " + (a if isinstance(a, str) else f"(failed) {a['error']}") for i, a in enumerate(answers)))

    def _items(self, ctx: NodeContext) -> list[Any]:
        over = self.config.over
        where = f"map node '{self.name}': over {over}"
        if over == "output":
            text = ctx.last_output
            try:
                value: Any = json.loads(text)
            except ValueError:
                raise NodeFailed(f"{where}: the last output is not a JSON list "
                                 f"(it begins {text[:60]!r})") from None
        else:
            value = ctx.state.metadata
            path = over.split(".")[1:]
            for depth, part in enumerate(path):
                if not isinstance(value, dict) or part not in value:
                    missing = ".".join(["metadata", *path[:depth + 1]])
                    raise NodeFailed(f"{where}: State has no {missing} (set it with --set, a tool node's "
                                     "output_key, or a map's output_key)")
                value = value[part]
        if not isinstance(value, list):
            raise NodeFailed(f"{where}: expected a list, found {_kind(value)}")
        return value


def instruction(prompt: str, item: Any, index: int) -> str:
    """The prompt with ``{item}`` and ``{index}`` filled in (only those: other braces stay)."""
    text = item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)
    if "{item}" not in prompt:
        prompt = prompt.rstrip() + "\n\n{item}"
    return prompt.replace("{index}", str(index)).replace("{item}", text)


def _kind(value: Any) -> str:
    if isinstance(value, str):
        return f"text ({value[:40]!r})"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__
