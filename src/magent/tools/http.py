"""The built-in HTTP connector (seed 004): ``http.fetch``, off unless the config enables it. Only
``allow_hosts`` are reached, each redirect hop checked; a body past ``max_bytes`` is cut."""

from __future__ import annotations

import fnmatch
from typing import Any
from urllib.parse import urljoin, urlsplit

from magent.models.tools import HttpBuiltin
from magent.tools.function import FunctionProvider, ToolFailure

MAX_REDIRECTS = 5
IDEMPOTENT_METHODS = ("GET", "HEAD")
"""Requests the connector makes again after a timeout or a busy server (never a POST)."""
RETRY_STATUSES = (429, 502, 503, 504)
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
        tried: list[str] = []  # the attempts made again, for the result's second line
        if method not in ("GET", "POST", "HEAD"):
            raise ToolFailure(f"method {method!r} is not supported (GET, POST or HEAD)")
        timeout = httpx2.Timeout(settings.timeout_seconds)
        async with httpx2.AsyncClient(timeout=timeout, follow_redirects=False) as client:
            for _ in range(MAX_REDIRECTS + 1):
                if not host_allowed(url, settings.allow_hosts):
                    allowed = ", ".join(settings.allow_hosts) or "none"
                    raise ToolFailure(f"host of {url!r} is not in the allowed hosts ({allowed})")
                result = await _retried(client, method, url, body, headers or {}, settings, tried)
                if result["status"] in (301, 302, 303, 307, 308) and result.get("location"):
                    url = urljoin(url, result["location"])
                    if result["status"] == 303:
                        method, body = "GET", None
                    continue
                if result["status"] >= 400:
                    retried = f" [{'; '.join(tried)}]" if tried else ""
                    raise ToolFailure(f"HTTP {result['status']} from {url}{retried}: {result['body'][:500]}")
                retried = f"\n[{'; '.join(tried)}]" if tried else ""
                return (f"HTTP {result['status']} {result['content_type'] or '-'} {result['url']}{retried}"
                        f"\n\n{result['body']}")
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


async def _retried(client: Any, method: str, url: str, body: str | None, headers: dict[str, str],
                   settings: HttpBuiltin, tried: list[str]) -> dict[str, Any]:
    """One request, made again as ``settings.retry`` says when it is a GET or HEAD that timed out,
    could not connect or was answered 429, 502, 503 or 504 (waiting what ``Retry-After`` asks,
    up to a minute: a longer wait is not made). What was tried again is added to ``tried``."""
    import httpx2

    from magent.llm.retry import MAX_DELAY
    from magent.tools import attempts

    policy = settings.retry
    most = policy.max_attempts if method in IDEMPOTENT_METHODS else 1
    for attempt in range(1, most + 1):
        asked: float | None = None
        try:
            result = await _one(client, method, url, body, headers, settings.max_bytes)
            if result["status"] not in RETRY_STATUSES or "error" not in policy.on or attempt == most:
                return result
            why, asked = f"HTTP {result['status']}", result["retry_after"]
        except httpx2.TimeoutException:
            why = f"no answer from {url} within {settings.timeout_seconds:g}s"
            if "timeout" not in policy.on or attempt == most:
                raise ToolFailure(why + (f" [{'; '.join(tried)}]" if tried else "")) from None
        except httpx2.HTTPError as exc:
            why = f"cannot fetch {url}: {type(exc).__name__}: {exc}"
            if "error" not in policy.on or attempt == most:
                raise ToolFailure(why + (f" [{'; '.join(tried)}]" if tried else "")) from None
        if asked is not None and asked > MAX_DELAY:
            tried.append(f"attempt {attempt}: {why}, Retry-After {asked:g}s is too long to wait")
            return result
        wait = asked if asked is not None else attempts.delay(policy, attempt)
        tried.append(f"attempt {attempt}: {why}, tried again after {wait:g}s"
                     + (" (Retry-After)" if asked is not None else ""))
        await attempts.sleep(wait)
    raise AssertionError("unreachable")  # (the last attempt returns or raises)


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
        from magent.llm.retry import retry_after

        return {"status": response.status_code, "url": str(response.url), "content_type": ctype,
                "location": response.headers.get("location"), "body": text,
                "retry_after": retry_after(response)}
