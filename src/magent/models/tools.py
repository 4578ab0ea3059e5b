"""Tool (seed 002 entity 4), rate limits, the built-in tools' settings and the tool limits.

The MCP servers' models and the MCP servers file (seed 002 entity 5) are in ``models.servers``,
imported when a file names a server: a run of built-in tools only creates none of their classes.
Their names can still be imported from here."""

from typing import Any, Literal

from pydantic import Field, PositiveInt

from magent.models.base import Model

DEFAULT_TOOL_TIMEOUT = 300


class RateLimit(Model):
    """At most ``calls`` calls in any ``per_seconds`` window (seed 004's per-tool request rate limit).

    Counted per run, across concurrent calls; a call counts when it starts.
    """

    calls: PositiveInt
    """Calls allowed in one window."""
    per_seconds: float = Field(gt=0)
    """Length of the sliding window, in seconds."""
    on_limit: Literal["wait", "refuse"] = "wait"
    """Over the limit: ``wait`` for a free slot (up to ``max_wait_seconds``), or ``refuse`` at once.
    A refused call becomes an ERROR observation the model sees."""
    max_wait_seconds: float = Field(default=60, ge=0)
    """Longest a call waits; one that would have to wait longer is refused."""


class RetryPolicy(Model):
    """When a tool call that did not succeed is made again, and how long to wait before it."""

    max_attempts: int = Field(default=3, ge=1, le=10)
    """Attempts in all, the first included (1: never again)."""
    backoff: float = Field(default=1.0, ge=0, le=300)
    """Seconds before the second attempt, doubled before each later one."""
    on: list[Literal["timeout", "error", "failure"]] = Field(default_factory=lambda: ["timeout", "error"],
                                                            min_length=1)
    """Outcomes that are tried again: ``timeout``, ``error`` (the call could not run: a crash, a
    server down) and ``failure`` (the tool ran and said no: off unless listed)."""


class Tool(Model):
    """An invocable capability, from an MCP server or a built-in connector."""

    name: str
    """Tool name as the server gives it (without the ``server.`` prefix)."""
    server: str
    """Server providing the tool (``kv``, ``http``, ``shell`` for the built-ins)."""
    description: str = ""
    """What the tool does; the model reads it to choose tools."""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    """JSON Schema of the arguments."""
    output_schema: dict[str, Any] | None = None
    """JSON Schema of the result, when the server declares one."""
    timeout_seconds: PositiveInt = DEFAULT_TOOL_TIMEOUT
    """Execution timeout; a call that takes longer is cancelled and reported as TIMEOUT."""
    fallback_tools: list[str] = Field(default_factory=list)
    """Tools (``server.tool``) tried in order when this one fails."""
    idempotent: bool | None = None
    """Safe to run twice. From the config, else the server's ``idempotentHint``; unknown means no."""
    needs_approval: bool = False
    """A person must approve each call before it runs."""
    rate_limit: RateLimit | None = None
    """Calls allowed per time window (besides its server's own ``rate_limit``)."""
    read_only: bool | None = None
    """Changes nothing (the server's ``readOnlyHint``): its calls may be tried again like an
    idempotent tool's. Recovery after a crash still goes by ``idempotent``."""
    retry: RetryPolicy | None = None
    """This tool's own retry policy, from the config. None: its server's, for a tool that is
    idempotent or read-only; a tool that is neither is not tried again unless it has its own."""

    @property
    def full_name(self) -> str:
        return f"{self.server}.{self.name}"


class HttpBuiltin(Model):
    enabled: bool = False
    allow_hosts: list[str] = Field(default_factory=list)
    """Hosts the fetch tool may reach; empty means none."""
    timeout_seconds: float = Field(default=10, gt=0)
    max_bytes: PositiveInt = 1_000_000
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    """How a GET or HEAD is tried again (a POST never is): ``timeout``, and ``error`` for a
    connection that fails or a 429, 502, 503 or 504 answer; a ``Retry-After`` sets the wait."""


class ShellBuiltin(Model):
    enabled: bool = False
    """Off unless set: the shell tool runs commands on this machine."""
    allow_commands: list[str] = Field(default_factory=list)
    """Executables the shell tool may run (the first word of the command)."""
    timeout_seconds: float = Field(default=30, gt=0)


class KVBuiltin(Model):
    enabled: bool = True


class MemoryBuiltin(Model):
    enabled: bool = True
    """The long-term memory tools (``memory.search``, ``memory.remember``, ``memory.forget``)."""


class Builtins(Model):
    kv: KVBuiltin = Field(default_factory=KVBuiltin)
    memory: MemoryBuiltin = Field(default_factory=MemoryBuiltin)
    http: HttpBuiltin = Field(default_factory=HttpBuiltin)
    shell: ShellBuiltin = Field(default_factory=ShellBuiltin)

    @classmethod
    def defaults(cls) -> "Builtins":
        """``Builtins()``, made without a validator: every field is its default, which needs no
        checking, so a run with no MCP servers file builds none for it or its four sections."""
        return cls.model_construct(_fields_set=set(), kv=KVBuiltin.model_construct(),
                                   memory=MemoryBuiltin.model_construct(), http=HttpBuiltin.model_construct(),
                                   shell=ShellBuiltin.model_construct())


class ToolLimits(Model):
    max_output_chars: PositiveInt = 20_000
    """Tool output longer than this reaches the model truncated, with a marker."""
    artifacts_max_bytes: PositiveInt = 100_000_000
    """Cap on a task's ``artifacts/`` directory."""

    @classmethod
    def defaults(cls) -> "ToolLimits":
        """``ToolLimits()`` without building its validator (as ``Builtins.defaults``)."""
        return cls.model_construct()
