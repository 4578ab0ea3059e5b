"""``type: tool`` — call one tool with arguments taken from State.

Argument values that are strings starting with ``$`` are paths into State:
``$metadata.topic``, ``$output`` (the last node's output), ``$routing_key``.
Write ``$$`` for a literal leading ``$``. The result is stored in
``metadata[<output_key or node name>]``.
"""

from __future__ import annotations

import json
from typing import Any

from magent import failpoints
from magent.config.templates import is_template
from magent.engine import argrails, templating
from magent.engine.context import NodeContext
from magent.engine.control import NodeFailed
from magent.engine.nodes.base import Node, NodeConfig, NodeResult
from magent.engine.tooluse import check_before_call, declined, in_flight, landed, recorder
from magent.models.progress import ToolProgress
from magent.store.events import truncate
from magent.tools.base import CallContext, calling

class ToolNodeConfig(NodeConfig):
    tool: str
    """Full tool name, ``server.tool``."""
    arguments: dict[str, Any] = {}
    output_key: str | None = None
    """Metadata key for the result (default: the node's name)."""
    fail_on_error: bool = True
    """A failed call fails the task; set false to store the error and go on."""


class ToolNode(Node):
    kind = "tool"
    Config = ToolNodeConfig
    Progress = ToolProgress
    config: ToolNodeConfig

    async def run(self, ctx: NodeContext) -> NodeResult:
        name = self.config.tool
        visit = ctx.run.state.visits.get(self.name, 1)
        call_id = f"{self.name}:{visit}"
        args = {k: resolve(v, ctx) for k, v in self.config.arguments.items()}
        key = self.config.output_key or self.name
        done = ctx.recovery.finished.get(call_id)
        if done is not None:  # it finished before the crash: never run it twice
            outcome, content, data = done["outcome"], done.get("full_result", ""), done.get("data")
        else:
            args = await argrails.screen_node_call(ctx, self.name, call_id, name, args)  # before the intent
            check_before_call(ctx, self.name, call_id, name, args, "The workflow")
            reason = declined(ctx, call_id)
            if reason:
                outcome, content, data = "ERROR", reason, None
            else:
                tool = ctx.deps.tools().get(name)
                in_flight(ctx, call_id)
                ctx.bus.emit("tool_call", self.name, call_id=call_id, tool=name,
                             arguments=ctx.deps.redactor.data(args))
                # the intent must be durable before a call that cannot be repeated
                await ctx.checkpoints.before_tool(idempotent=bool(tool and tool.idempotent))
                failpoints.hit("after_tool_intent")
                with calling(CallContext(task_id=ctx.deps.task.id, node=self.name, call_id=call_id,
                                         emit=ctx.bus.emit, record=recorder(ctx, self.name, None, call_id))):
                    result = await ctx.deps.tools().call(name, args)
                failpoints.hit("after_tool_call")
                outcome, content, data = result.outcome, result.content, result.data
                ctx.bus.emit("tool_result", self.name, call_id=call_id, tool=result.tool or name,
                             outcome=outcome, result=truncate(ctx.deps.redactor.text(content)),
                             full_result=ctx.deps.redactor.text(content),
                             data=ctx.deps.redactor.data(_jsonable(data)), error=result.error,
                             duration_ms=result.duration_ms, artifact=result.artifact,
                             notes=result.notes or None, attempts=result.attempts or None)
                landed(ctx, call_id)
        ctx.calls.decisions = {}
        argrails.done(ctx, call_id)
        if outcome != "SUCCESS" and self.config.fail_on_error:
            raise NodeFailed(f"tool node '{self.name}': {name} {outcome.lower()}: {truncate(content, 300)}")
        ctx.state.metadata[key] = data if _jsonable(data) is not None else content
        if outcome != "SUCCESS":
            ctx.state.metadata[key] = {"outcome": outcome, "error": content}
        return NodeResult(output=content)


def resolve(value: Any, ctx: NodeContext) -> Any:
    if isinstance(value, dict):
        return {k: resolve(v, ctx) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, ctx) for v in value]
    if isinstance(value, str) and not value.startswith("$") and is_template(value):
        return templating.rendered(ctx, value, "a tool node's argument")
    if not isinstance(value, str) or not value.startswith("$"):
        return value
    if value.startswith("$$"):
        return value[1:]
    path = value[1:].split(".")
    state = ctx.state
    roots = {"metadata": state.metadata, "routing_key": state.routing_key, "output": ctx.last_output,
             "next_action": state.next_action, "current_agent": state.current_agent}
    if path[0] not in roots:
        raise NodeFailed(f"argument {value!r}: unknown State field {path[0]!r} "
                         f"(use one of: {', '.join('$' + r for r in roots)})")
    current: Any = roots[path[0]]
    for part in path[1:]:
        if isinstance(current, dict) and part in current:
            current = current[part]
        else:
            raise NodeFailed(f"argument {value!r}: State has no {'.'.join(path)}")
    return current


def _jsonable(data: Any) -> Any:
    try:
        json.dumps(data)
        return data
    except (TypeError, ValueError):
        return None
