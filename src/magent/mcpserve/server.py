"""The MCP server on the mcp SDK's low-level ``Server``: tools, resources, transports."""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import os
import secrets
import socket
import sys
from functools import partial
from typing import Any, Awaitable, Callable

import mcp_types as types
from mcp.server import NotificationOptions, Server
from mcp.shared.exceptions import MCPError

from magent.version import __version__
from magent.errors import MagentError, UsageError
from magent.mcpserve.catalog import VERBS, Served
from magent.mcpserve.runs import Caller, Runs, reply_text
from magent.mcpserve.verbs import READ_ONLY, SCHEMAS, TEMPLATES, call_verb, read_resource, recent_tasks

TOKEN_ENV = "MAGENT_MCP_TOKEN"
INSTRUCTIONS = ("Each workflow tool starts a durable magent task. If it is still running when the call "
                "returns, ask task_status with its task_id. A task paused for a person returns the "
                "question and the resume call to make once the person has answered.")


def build(served: list[Served], runs: Runs) -> Server[Any]:
    """An MCP server answering for ``served`` and the task verbs, running tasks with ``runs``."""
    from magent import api

    by_name = {s.name: s for s in served}
    cancelled: set[str] = set()

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        tools = [types.Tool(name=s.name, description=s.description, input_schema=s.input_schema())
                 for s in served]
        tools += [types.Tool(name=name, description=SCHEMAS[name][0], input_schema=SCHEMAS[name][1],
                             annotations=types.ToolAnnotations(read_only_hint=True) if name in READ_ONLY else None)
                  for name in VERBS]
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = dict(params.arguments or {})

        async def progress(count: float, message: str) -> None:
            await ctx.session.report_progress(count, None, message)

        caller = Caller(progress=progress, settled=ctx.session.send_resource_list_changed,
                        cancelled_by_client=lambda: ctx.request_id is not None and str(ctx.request_id) in cancelled)
        try:
            if params.name in by_name:
                item = by_name[params.name]
                metadata = item.metadata_of(args)
                start = partial(api.arun, item.definition, args["task"], set={"metadata": metadata},
                                tags=["mcp"])
                reply: Any = await runs.call(start, caller, wait=_wait(args))
                reply = await _ask_person(ctx, runs, reply, caller)
                is_text = False
            elif params.name in VERBS:
                _wait(args)
                reply, is_text = await call_verb(runs, params.name, args, caller)
                if params.name in ("resume", "chat"):
                    reply = await _ask_person(ctx, runs, reply, caller)
            else:
                raise UsageError(f"no tool {params.name!r} (tools: {', '.join([*by_name, *VERBS])})")
        except MagentError as exc:
            return types.CallToolResult(content=[types.TextContent(text=str(exc))], is_error=True)
        if is_text:
            return types.CallToolResult(content=[types.TextContent(text=reply)])
        failed = "error" in reply and reply.get("status") not in ("awaiting_human",)
        return types.CallToolResult(content=[types.TextContent(text=reply_text(reply))],
                                    structured_content=reply, is_error=failed)

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        rows = await asyncio.to_thread(recent_tasks)
        return types.ListResourcesResult(resources=[
            types.Resource(uri=f"magent://tasks/{task_id}/{what}", name=f"{workflow} {task_id[:8]} {what}",
                           description=f"{TEMPLATES[what][1]}; the task is {status}",
                           mime_type="application/json")
            for task_id, workflow, status in rows for what in ("result", "trace")])

    async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(uri_template=template, name=f"task {what}", description=about,
                                   mime_type="application/json")
            for what, (template, about) in TEMPLATES.items()])

    async def read(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            text = await asyncio.to_thread(read_resource, uri)
        except MagentError as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from None
        return types.ReadResourceResult(contents=[types.TextResourceContents(
            uri=uri, text=text, mime_type="application/json")])

    server: Server[Any] = _Server(
        "magent", version=__version__, instructions=INSTRUCTIONS, on_list_tools=list_tools,
        on_call_tool=call_tool, on_list_resources=list_resources,
        on_list_resource_templates=list_templates, on_read_resource=read)

    async def note_cancels(ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
        # The SDK cancels the call's handler itself; this remembers that the client asked, so
        # the run it started becomes ``cancelled`` (a server closing leaves it ``interrupted``).
        if ctx.method == "notifications/cancelled" and isinstance(ctx.params, dict):
            cancelled.add(str(ctx.params.get("requestId")))
        return await call_next(ctx)

    server.middleware.append(note_cancels)
    return server


ANSWERS = ("approve", "reject")
"""What a person can answer through the client's form (a modify needs the resume tool's state_updates)."""


async def _ask_person(ctx: Any, runs: Runs, reply: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """While the task waits for a person and the client can show a form (MCP elicitation), ask
    the person there and continue the task with the answer. A person who declines, or a client
    without forms, leaves the pause as it is: the reply says which resume call answers it."""
    from magent import api

    while reply.get("status") == "awaiting_human" and _can_ask(ctx):
        choices = [a for a in reply.get("allowed_actions", ()) if a in ANSWERS]
        if not choices:
            break
        shown = reply.get("output_to_review")
        try:
            answer = await ctx.session.elicit_form(
                message=reply["question"] + (f"\n\n{shown}" if shown else ""),
                requested_schema={"type": "object", "required": ["action"], "properties": {
                    "action": {"type": "string", "enum": choices, "title": "Your answer"},
                    "message": {"type": "string", "title": "A message for the workflow (optional)"}}},
                related_request_id=ctx.request_id)
        except MCPError:
            break  # the client could not ask after all: the reply names the resume call
        content = answer.content or {}
        if answer.action != "accept" or content.get("action") not in choices:
            break
        message = content.get("message")
        start = partial(api.aresume, reply["task_id"], approve=content["action"] == "approve",
                        reject=content["action"] == "reject",
                        message=message if isinstance(message, str) and message.strip() else None)
        reply = await runs.call(start, caller)
    return reply


def _can_ask(ctx: Any) -> bool:
    session = ctx.session
    capabilities = session.client_capabilities
    return bool(session.can_send_request and capabilities is not None and capabilities.elicitation is not None)


class _Server(Server[Any]):
    """The SDK's server, saying on every transport that its resource list changes (as tasks finish)."""

    def create_initialization_options(self, notification_options: NotificationOptions | None = None,
                                      *args: Any, **kwargs: Any) -> Any:
        return super().create_initialization_options(
            notification_options or NotificationOptions(resources_changed=True), *args, **kwargs)


def _wait(args: dict[str, Any]) -> float | None:
    wait = args.get("wait_seconds")
    if wait is not None and (isinstance(wait, bool) or not isinstance(wait, (int, float)) or wait < 0):
        raise UsageError("wait_seconds is a number of seconds, 0 or more")
    return wait


async def serve_stdio(server: Server[Any], runs: Runs) -> None:
    """Serve over stdin/stdout until the client closes them."""
    from mcp.server.stdio import stdio_server

    try:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        await runs.close()


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to HOST:PORT, or a ``UsageError`` saying why there is none (a host that
    does not resolve or is not this machine's, a port in use or not allowed)."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        return socket.create_server((host, port), family=family)
    except OSError as exc:  # socket.gaierror too (its errno is not the C library's)
        reason = os.strerror(exc.errno) if exc.errno and exc.errno > 0 else exc.strerror or str(exc)
        raise UsageError(f"cannot listen on --host {host} --port {port}: {reason[:1].lower()}{reason[1:]}") from None


async def serve_http(server: Server[Any], runs: Runs, host: str, port: int) -> None:
    """Serve streamable HTTP at ``http://HOST:PORT/mcp``; off the loopback, only with a bearer token."""
    import uvicorn

    sock = listen(host, port)
    token = os.environ.get(TOKEN_ENV) or None
    if token is None and not is_loopback(host):
        token = secrets.token_urlsafe(32)
        print(f"magent mcp serve: clients must send 'Authorization: Bearer {token}' "
              f"(set {TOKEN_ENV} to choose the token)", file=sys.stderr, flush=True)
    app: Any = server.streamable_http_app(host=host)
    if token is not None:
        app = bearer_only(app, token)
    print(f"magent mcp serve: listening on http://{_url_host(host)}:{port}/mcp", file=sys.stderr, flush=True)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning")
    try:
        await uvicorn.Server(config).serve(sockets=[sock])
    finally:
        await runs.close()


def bearer_only(app: Any, token: str) -> Any:
    """``app`` answering HTTP requests only when they carry ``Authorization: Bearer TOKEN``."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, expected):
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": b"missing or wrong bearer token\n"})
                return
        await app(scope, receive, send)

    return guarded


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


TRANSPORTS = ("stdio", "streamable-http")


def serve(targets: list[str], *, transport: str = "stdio", host: str | None = None, port: int | None = None,
          wait_seconds: float = 60.0) -> None:
    """Serve ``targets`` (files or installed names; none: everything installed) until the client
    leaves (stdio) or the process is stopped (HTTP). Bad arguments are a ``UsageError`` before
    anything starts; a file that does not load is its ``ConfigError``."""
    import anyio

    from magent.mcpserve.catalog import served

    if transport not in TRANSPORTS:
        raise UsageError(f"--transport must be one of {', '.join(TRANSPORTS)}, not {transport!r}")
    if transport == "stdio" and (host is not None or port is not None):
        raise UsageError("--host and --port go with --transport streamable-http (over stdio the client "
                         "starts magent itself)")
    host, port = host or "127.0.0.1", 8765 if port is None else port
    if not wait_seconds >= 0:  # NaN too
        raise UsageError(f"--wait-seconds must be a number of seconds, 0 or more, not {wait_seconds}")
    if not 0 < port < 65536:
        raise UsageError(f"--port must be between 1 and 65535, not {port}")
    items = served(targets)
    _report_stopped()
    runs = Runs(wait_seconds)
    server = build(items, runs)
    if transport == "stdio":
        anyio.run(serve_stdio, server, runs)
    else:
        anyio.run(serve_http, server, runs, host, port)


def _report_stopped() -> None:
    """Say which tasks a server (or a run) left stopped mid-run, and how to continue them."""
    from magent import api

    stopped = [row.id for row in api.tasks("interrupted")]
    if stopped:
        print(f"magent mcp serve: {len(stopped)} task(s) stopped mid-run; continue one with "
              f"`magent resume ID` or the resume tool: {', '.join(t[:8] for t in stopped[:10])}",
              file=sys.stderr, flush=True)
