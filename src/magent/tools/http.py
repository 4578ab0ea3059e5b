"""The built-in HTTP connector (seed 004): ``http.fetch``, off unless the config enables it.

Only hosts in ``allow_hosts`` are reached (``example.com``, ``*.example.com``,
or ``host:port``), redirects included: each hop is checked before it is
followed. A body longer than ``max_bytes`` is cut there, with a marker.
"""

from __future__ import annotations

import fnmatch
from typing import Any
from urllib.parse import urljoin, urlsplit

from magent.models.tools import HttpBuiltin
from magent.tools.function import FunctionProvider, ToolFailure

MAX_REDIRECTS = 5
TEXT_TYPES = ("text/", "application/json", "application/xml", "application/javascript", "+json", "+xml")


def host_allowed(url: str, allow_hosts: list[str]) -> bool:
    """Whether ``url``'s host (or ``host:port``) matches an entry of ``allow_hosts``."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if parts.scheme not in ("http", "https") or not host:
        return False
    port = parts.port or (443 if parts.scheme == "https" else 80)
    for entry in allow_hosts:
        entry = entry.lower().strip()
        if ":" in entry and not entry.startswith("["):
            name, _, want = entry.rpartition(":")
            if fnmatch.fnmatchcase(host, name) and want == str(port):
                return True
        elif fnmatch.fnmatchcase(host, entry):
            return True
    return False


def http_provider(settings: HttpBuiltin) -> FunctionProvider:
    async def fetch(url: str, method: str = "GET", body: str | None = None,
                    headers: dict[str, str] | None = None) -> str:
        import httpx2

        method = method.upper()
        if method not in ("GET", "POST", "HEAD"):
            raise ToolFailure(f"method {method!r} is not supported (GET, POST or HEAD)")
        timeout = httpx2.Timeout(settings.timeout_seconds)
        async with httpx2.AsyncClient(timeout=timeout, follow_redirects=False) as client:
            for _ in range(MAX_REDIRECTS + 1):
                if not host_allowed(url, settings.allow_hosts):
                    allowed = ", ".join(settings.allow_hosts) or "none"
                    raise ToolFailure(f"host of {url!r} is not in the allowed hosts ({allowed})")
                try:
                    result = await _one(client, method, url, body, headers or {}, settings.max_bytes)
                except httpx2.TimeoutException:
                    raise ToolFailure(f"no answer from {url} within {settings.timeout_seconds:g}s") from None
                except httpx2.HTTPError as exc:
                    raise ToolFailure(f"cannot fetch {url}: {type(exc).__name__}: {exc}") from None
                if result["status"] in (301, 302, 303, 307, 308) and result.get("location"):
                    url = urljoin(url, result["location"])
                    if result["status"] == 303:
                        method, body = "GET", None
                    continue
                if result["status"] >= 400:
                    raise ToolFailure(f"HTTP {result['status']} from {url}: {result['body'][:500]}")
                return f"HTTP {result['status']} {result['content_type'] or '-'} {result['url']}\n\n{result['body']}"
            raise ToolFailure(f"more than {MAX_REDIRECTS} redirects from {url}")

    p = FunctionProvider("http")
    p.add("fetch", fetch, "Fetch a URL over HTTP(S): returns a status line, then the body "
          f"(at most {settings.max_bytes} bytes). Only some hosts are allowed.",
          {"type": "object", "properties": {
              "url": {"type": "string", "description": "http:// or https:// URL."},
              "method": {"type": "string", "enum": ["GET", "POST", "HEAD"], "default": "GET"},
              "body": {"type": "string", "description": "Request body (POST)."},
              "headers": {"type": "object", "additionalProperties": {"type": "string"}}},
           "required": ["url"]}, idempotent=False)
    return p


async def _one(client: Any, method: str, url: str, body: str | None, headers: dict[str, str],
               max_bytes: int) -> dict[str, Any]:
    async with client.stream(method, url, content=body, headers=headers) as response:
        data = b""
        truncated = False
        async for chunk in response.aiter_bytes():
            data += chunk
            if len(data) > max_bytes:
                data, truncated = data[:max_bytes], True
                break
        ctype = response.headers.get("content-type", "")
        if any(t in ctype for t in TEXT_TYPES) or not ctype:
            text = data.decode(response.encoding or "utf-8", errors="replace")
        else:
            text = f"[{ctype} content, {len(data)} bytes]"
        if truncated:
            text += f"\n[... truncated at {max_bytes} bytes]"
        return {"status": response.status_code, "url": str(response.url), "content_type": ctype,
                "location": response.headers.get("location"), "body": text}
