"""The tool registry: every tool a run can call, by ``server.tool`` name, with argument checks,
timeouts, ``fallback_tools`` and truncation of large outputs (the full copy in ``artifacts/``)."""

from __future__ import annotations

import asyncio
import fnmatch
import hashlib
import os
import time
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable

from magent.config.schemas import first_problem
from magent.models import Tool
from magent.models.tools import RetryPolicy, ToolLimits
from magent.tools.attempts import policy_for, with_retries
from magent.tools.base import ToolProvider, ToolResult
from magent.tools.ratelimit import RateLimited, RateLimiter
from magent.tools.validation import checks_for

PROVIDER_GRACE_SECONDS = 15.0
"""Slack past a tool's timeout for its provider to cancel the call and stop a hung server."""


class ToolRegistry:
    def __init__(self, providers: list[ToolProvider] | None = None, *,
                 limits: ToolLimits | None = None, artifacts_dir: Path | None = None,
                 settings: dict[str, dict[str, Any]] | None = None,
                 limiter: RateLimiter | None = None, retries: dict[str, RetryPolicy] | None = None):
        self.providers: dict[str, ToolProvider] = {}
        self.limits = limits or ToolLimits()
        self.artifacts_dir = artifacts_dir
        self.settings = settings or {}
        """``server.tool`` → overrides (timeout_seconds, fallback_tools, idempotent, needs_approval,
        rate_limit)."""
        self.limiter = limiter or RateLimiter()
        """Rate limits of tools and servers, shared by every call of the run."""
        self.retries = retries or {}
        """Server name → the retry policy its file gives it (``tools.attempts.policy_for``)."""
        self.secrets: set[str] = set()
        """Values taken from the environment by the MCP files (never to be written to disk)."""
        self.redact: Callable[[str], str] | None = None
        """Applied to a tool's full output before it is kept in ``artifacts/``."""
        self._tools: dict[str, Tool] = {}
        self._started: set[str] = set()
        self._validators: dict[str, tuple[Any, Any, Any]] = {}
        """By tool name: the input schema a validator was made for, the validator and its quick
        check; used only for that same schema (a server may change a tool's schema mid-run)."""
        self._generations: dict[str, int] = {}
        self._ready_notes: dict[str, list[str]] = {}
        """By server: what ``ready`` did to get it ready (a restart), for its next call's result."""
        self.start_errors: dict[str, str] = {}
        self._retried: dict[str, float] = {}
        """By server that failed to start: how long ``ready`` spent trying it again, for the next call
        that finds it still down (that call waited so long: its duration says so)."""
        self.start_seconds: dict[str, float] = {}
        """How long each provider took to start (for the trace and the start-up benchmark)."""
        self.shared: set[str] = set()
        """Providers that belong to a batch's pool (``tools.shared``): left running by ``close``."""
        self.memory: Any = None
        """The run's long-term memory (``memory.run.RunMemory``): the ``memory.*`` tools and
        retrieval before model turns share it; closed with the registry."""
        for p in providers or []:
            self.add(p)

    def add(self, provider: ToolProvider) -> None:
        self.providers[provider.name] = provider
        self._started.discard(provider.name)

    @property
    def started(self) -> set[str]:
        return set(self._started)

    async def start(self, only: Iterable[str] | None = None) -> None:
        """Start providers (only ``only``'s, if given) concurrently and collect their tools;
        started ones are left as they are. A failure is kept in ``start_errors``, and calls to
        its tools become ERROR observations."""
        wanted = set(self.providers) if only is None else set(only) & set(self.providers)
        names = sorted(n for n in wanted if n not in self._started)
        if not names:
            return
        results = await asyncio.gather(*(self._start_one(n) for n in names), return_exceptions=True)
        for name, res in zip(names, results):
            self._started.add(name)
            if isinstance(res, BaseException):
                if not isinstance(res, Exception):
                    raise res  # cancellation and interrupts are not a server's failure
                self.start_errors[name] = str(res) or type(res).__name__
                continue
            self.start_errors.pop(name, None)
            self._set_tools(name, res)

    def _set_tools(self, name: str, tools: list[Tool]) -> None:
        for key in [k for k, t in self._tools.items() if t.server == name]:
            del self._tools[key]
        for tool in tools:
            self._tools[tool.full_name] = self._with_settings(tool)
        self._generations[name] = getattr(self.providers[name], "generation", 0)

    async def _start_one(self, name: str) -> list[Tool]:
        provider = self.providers[name]
        began = time.perf_counter()
        try:
            await provider.start()
            return await provider.list_tools()
        finally:
            self.start_seconds[name] = time.perf_counter() - began

    def _with_settings(self, tool: Tool) -> Tool:
        extra = self.settings.get(tool.full_name)
        return tool.model_copy(update=extra) if extra else tool

    def all_tools(self) -> list[Tool]:
        return sorted(self._tools.values(), key=lambda t: t.full_name)

    def get(self, full_name: str) -> Tool | None:
        return self._tools.get(full_name)

    def resolve(self, patterns: list[str], deny: list[str] | None = None) -> list[Tool]:
        """Tools matching any of ``patterns`` (``server.tool`` or ``server.*``) and none of ``deny``."""
        return [tool for tool in self.all_tools() if matches(tool.full_name, patterns, deny or [])]

    def down_reason(self, server: str) -> str:
        """Why ``server`` failed to start, and when it is tried again (for warnings and results)."""
        retry = getattr(self.providers[server], "retry", None)
        return self.start_errors[server] + (retry.note() if retry is not None else "")

    def unavailable(self, full_name: str) -> ToolResult | None:
        """The ERROR result of a call to ``full_name`` when its server failed to start (None
        otherwise): the cause, when the server is tried again, and as its duration the time
        ``ready`` just spent trying it."""
        server = full_name.split(".", 1)[0]
        if full_name in self._tools or server not in self.start_errors:
            return None
        msg = f"tool {full_name!r} is unavailable: {self.down_reason(server)}"
        waited = self._retried.pop(server, 0.0)
        return ToolResult(outcome="ERROR", content=msg, error=msg, tool=full_name, duration_ms=int(waited * 1000))

    def servers_for(self, patterns: Iterable[str]) -> set[str]:
        """Provider names that tool patterns can reach: ``fs.read`` → ``fs``; ``*`` → all."""
        out: set[str] = set()
        for pattern in patterns:
            server = pattern.split(".", 1)[0]
            out |= {n for n in self.providers if fnmatch.fnmatchcase(n, server)}
        return out

    def unknown_servers(self, patterns: Iterable[str]) -> list[str]:
        """Patterns whose server part names no configured server (a config mistake)."""
        return [p for p in patterns if not any(
            fnmatch.fnmatchcase(n, p.split(".", 1)[0]) for n in self.providers)]

    async def call(self, full_name: str, arguments: Any, *, allowed: set[str] | None = None,
                   artifact_key: str = "",
                   screen: Callable[[ToolResult], Awaitable[None]] | None = None) -> ToolResult:
        """Call a tool; every failure comes back as a result, never raised. A call refused before
        it ran does not fall back; one that ran and failed tries ``fallback_tools`` in order.
        ``screen`` (input rails) sees and may change the whole output before truncation."""
        result, ran = await self._call_retried(full_name, arguments, allowed)
        tool = self._tools.get(full_name)
        if not result.ok and ran and tool is not None and tool.fallback_tools:
            tried = [f"{full_name}: {result.outcome.lower()}: {result.error or result.content}"]
            for alt in tool.fallback_tools:
                alt_result, _ = await self._call_retried(alt, arguments, None)
                if alt_result.ok:
                    alt_result.notes = [f"fell back from {full_name} to {alt}", *tried, *alt_result.notes]
                    result = alt_result
                    break
                tried.append(f"{alt}: {alt_result.outcome.lower()}: {alt_result.error or alt_result.content}")
            else:
                result.notes.append("fallbacks failed too: " + "; ".join(tried[1:]))
        if screen is not None and ran:
            await screen(result)
        return self._limit(result, artifact_key or full_name)

    async def _call_retried(self, full_name: str, arguments: Any,
                            allowed: set[str] | None) -> tuple[ToolResult, bool]:
        """One call, made again as its retry policy says when it times out or cannot run."""
        tool = self._tools.get(full_name)
        server = full_name.split(".", 1)[0]
        if tool is None and server in self.providers and server not in self._started:
            await self.start(only={server})  # a server this run did not expect to need
            tool = self._tools.get(full_name)
        policy = policy_for(tool, self.retries.get(tool.server)) if tool is not None else None
        return await with_retries(lambda: self._call_once(full_name, arguments, allowed), policy)

    async def _call_once(self, full_name: str, arguments: Any,
                         allowed: set[str] | None) -> tuple[ToolResult, bool]:
        started = time.perf_counter()
        tool = self._tools.get(full_name)
        if allowed is not None and full_name not in allowed:
            choices = ", ".join(sorted(allowed)) or "none"
            why = "is not allowed for this agent" if tool else "does not exist"
            return ToolResult(outcome="ERROR", tool=full_name,
                              content=f"tool {full_name!r} {why}; allowed tools: {choices}",
                              error=f"tool {full_name} {why}"), False
        if tool is None:
            down = self.unavailable(full_name)
            if down is not None:
                return down, False
            msg = f"tool {full_name!r} does not exist"
            return ToolResult(outcome="ERROR", content=msg, error=msg, tool=full_name), False
        if not isinstance(arguments, dict):
            msg = "arguments must be a JSON object"
            return ToolResult(outcome="ERROR", content=msg, error=msg, tool=full_name), False
        provider = self.providers[tool.server]
        prepare = getattr(provider, "prepare", None)
        # what getting the server ready did (a restart, here or in ``ready``): the result says it
        prepared: list[str] = self._ready_notes.pop(tool.server, []) if self._ready_notes else []
        if prepare is not None:
            # (an MCP server that crashed since, or said its tools changed: the arguments are
            # checked against the tools the call will reach)
            unreachable = await prepare(prepared)
            if unreachable is not None:
                unreachable.tool = full_name
                return unreachable, True
            tool = await self._current(tool.server, full_name)
            if tool is None:
                msg = f"tool {full_name!r} does not exist (its server no longer offers it)"
                return ToolResult(outcome="ERROR", content=msg, error=msg, tool=full_name, notes=prepared), False
        problem = self._check(tool, arguments)
        if problem:
            msg = f"invalid arguments for {full_name}: {problem}"
            return ToolResult(outcome="ERROR", content=msg, error=msg, tool=full_name, notes=prepared), False
        try:
            slot = await self.limiter.acquire(self.limiter.limits_for(full_name, tool.server, tool.rate_limit))
        except RateLimited as exc:
            return ToolResult(outcome="ERROR", content=str(exc), error=str(exc), tool=full_name, notes=prepared), False
        timeout = float(tool.timeout_seconds)
        try:
            # Providers enforce the timeout themselves (and clean up after it); this
            # outer bound only guards against one that does not (an in-process provider's
            # call is bounded by its own wait, or is a plain function nothing can interrupt:
            # awaited as it is, with no task and timer of its own).
            if getattr(provider, "bounds_its_calls", False):
                result = await provider.call(tool.name, arguments, timeout)
            else:
                result = await asyncio.wait_for(provider.call(tool.name, arguments, timeout),
                                                timeout + PROVIDER_GRACE_SECONDS)
        except asyncio.TimeoutError:
            msg = f"timed out after {timeout:g}s"
            result = ToolResult(outcome="TIMEOUT", content=msg, error=msg)
        except Exception as exc:  # a provider bug must not crash the run
            msg = f"{type(exc).__name__}: {exc}"
            result = ToolResult(outcome="ERROR", content=msg, error=msg)
        if getattr(provider, "generation", 0) != self._generations.get(tool.server, 0):
            # The server was restarted during this call: it may offer changed definitions now
            # (the engine's pin check sees them on the next ``get``).
            self._set_tools(tool.server, await provider.list_tools())
        result.tool = full_name
        if prepared:
            result.notes[:0] = prepared
        if slot.wait > 0:
            result.notes.insert(0, f"waited {slot.wait:.1f}s for the rate limit of {', '.join(slot.limits)}")
        if not result.duration_ms:
            result.duration_ms = int((time.perf_counter() - started) * 1000)
        return result, True

    async def ready(self, full_names: list[str]) -> None:
        """Get these tools' servers ready before the engine's pin check: restart a crashed one,
        relist one whose tools changed, retry a failed one when due, so a changed definition is
        seen before the call. What was done goes on the server's next result."""
        for server in {name.split(".", 1)[0] for name in full_names}:
            if server in self.start_errors and hasattr(self.providers.get(server), "retry"):
                began = time.perf_counter()
                self._started.discard(server)
                await self.start(only={server})  # at once while the retry is not due
                if server in self.start_errors:
                    self._retried[server] = time.perf_counter() - began
                continue
            prepare = getattr(self.providers.get(server), "prepare", None)
            if prepare is None or server not in self._started:
                continue
            notes: list[str] = []
            if await prepare(notes) is None:
                await self._current(server, "")
            if notes:
                self._ready_notes.setdefault(server, []).extend(notes)

    async def _current(self, server: str, full_name: str) -> Tool | None:
        """``full_name`` as its server offers it now (its tools are read again when they moved)."""
        provider = self.providers[server]
        if getattr(provider, "generation", 0) != self._generations.get(server, 0):
            self._set_tools(server, await provider.list_tools())
        return self._tools.get(full_name)

    def _check(self, tool: Tool, arguments: dict[str, Any]) -> str | None:
        schema = tool.input_schema
        cached = self._validators.get(tool.full_name)
        if cached is None or (cached[0] is not schema and cached[0] != schema):
            cached = self._validators[tool.full_name] = (schema, *checks_for(schema))
        _, validator, quick = cached
        if quick is not None and quick(arguments):
            return None
        return first_problem(validator, arguments)

    def _limit(self, result: ToolResult, key: str) -> ToolResult:
        limit = self.limits.max_output_chars
        if len(result.content) <= limit:
            return result
        full = result.content
        note = ""
        if self.artifacts_dir is not None:
            stored = self._store_artifact(full)
            if stored:
                result.artifact = stored
                note = f"; full output in {stored}"
            else:
                note = "; full output not kept (artifacts cap reached)"
        result.content = (full[:limit] + f"\n[... truncated: showing {limit} of {len(full)} characters{note}]")
        return result

    def _store_artifact(self, text: str) -> str | None:
        from magent.store.files import atomic_write, ensure_dir, refuse_link

        if self.redact is not None:
            text = self.redact(text)
        data = text.encode()
        digest = hashlib.sha256(data).hexdigest()[:16]
        assert self.artifacts_dir is not None
        refuse_link(self.artifacts_dir)  # never written through a planted link (SymlinkError)
        ensure_dir(self.artifacts_dir)
        name = f"{digest}.txt"
        target = self.artifacts_dir / name
        refuse_link(target)
        if not target.exists():
            used = sum(e.stat(follow_symlinks=False).st_size for e in os.scandir(self.artifacts_dir)
                       if e.is_file(follow_symlinks=False))
            if used + len(data) > self.limits.artifacts_max_bytes:
                return None
            atomic_write(target, data)
        return f"artifacts/{name}"

    async def close(self) -> None:
        """Close every provider (stop the servers); safe to call more than once."""
        self._started.clear()
        # All of them, not only those started here: a call can start a server lazily.
        await asyncio.gather(*(p.close() for name, p in self.providers.items() if name not in self.shared),
                             return_exceptions=True)
        if self.memory is not None:
            self.memory.close()


def matches(name: str, patterns: Iterable[str], deny: Iterable[str] = ()) -> bool:
    """Whether ``name`` matches one of ``patterns`` (``server.tool``, ``server.*``) and none of ``deny``."""
    return any(fnmatch.fnmatchcase(name, p) for p in patterns) and \
        not any(fnmatch.fnmatchcase(name, d) for d in deny)
