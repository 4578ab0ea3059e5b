"""Translating between MCP's types and magent's: tool definitions, call results, errors."""

from __future__ import annotations

import json
import sys
from typing import Any

from magent.models import Tool
from magent.models.tools import DEFAULT_TOOL_TIMEOUT

if sys.version_info < (3, 11):  # pragma: no cover - anyio brings the backport on 3.10
    from exceptiongroup import BaseExceptionGroup


def to_tool(server: str, tool: Any, call_timeout: int | None) -> Tool:
    """A magent ``Tool`` from an MCP ``Tool``, with ``idempotentHint`` and ``readOnlyHint`` kept."""
    annotations = getattr(tool, "annotations", None)
    hint = getattr(annotations, "idempotent_hint", None) if annotations is not None else None
    read_only = getattr(annotations, "read_only_hint", None) if annotations is not None else None
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {"type": "object"}
    return Tool(name=tool.name, server=server, description=tool.description or "",
                input_schema=schema, output_schema=tool.output_schema,
                timeout_seconds=call_timeout or DEFAULT_TOOL_TIMEOUT,
                idempotent=hint if isinstance(hint, bool) else None,
                read_only=read_only if isinstance(read_only, bool) else None)


def result_text(result: Any) -> str:
    """The text a model sees for a ``CallToolResult``: its content blocks, one after another."""
    parts: list[str] = []
    for block in result.content or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            size = len(getattr(block, "data", "") or "") * 3 // 4
            parts.append(f"[{kind}: {block.mime_type}, about {size} bytes]")
        elif kind == "resource":
            res = block.resource
            text = getattr(res, "text", None)
            parts.append(text if text is not None else f"[resource {res.uri}: {getattr(res, 'mime_type', None) or 'binary'}]")
        elif kind == "resource_link":
            parts.append(f"[resource link {block.uri}: {block.name}]")
        else:
            parts.append(f"[{kind or 'unknown'} content]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, default=str))
    return "\n".join(parts)


def leaf_error(exc: BaseException) -> BaseException:
    """The first real error inside (possibly nested) exception groups from anyio task groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def describe_error(exc: BaseException) -> str:
    """One line for a connect or transport failure, without a traceback."""
    exc = leaf_error(exc)
    name = type(exc).__name__
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    cause = exc.__cause__ or exc.__context__
    if not text and cause is not None:
        return describe_error(cause)
    if isinstance(exc, FileNotFoundError) and text:
        return text
    if isinstance(exc, ConnectionRefusedError) or "refused" in text.lower():
        return "connection refused"
    if "ConnectError" in name:
        # httpx's "All connection attempts failed": every address refused or was unreachable
        return "cannot connect (connection refused or host unreachable)"
    if name == "HTTPStatusError":
        return f"HTTP error: {text}"
    return f"{name}: {text}" if text else name


async def list_all(session: Any) -> list[Any]:
    """Every tool a session's server offers, page by page."""
    from mcp_types import PaginatedRequestParams

    tools: list[Any] = []
    cursor = None
    for _ in range(100):  # a server whose cursor never ends cannot hang the start
        params = PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def is_transport_error(exc: BaseException) -> bool:
    """Whether ``exc`` says the connection failed (not the call)."""
    import anyio

    name = type(exc).__module__
    return isinstance(exc, (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError,
                            anyio.EndOfStream)) or name.startswith("httpx")
