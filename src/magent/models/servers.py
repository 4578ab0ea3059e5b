"""The MCP servers (seed 002 entity 5) and the MCP servers file (``config/mcp_servers.yaml`` or one a
workflow names): made when a file is read, so a run with built-in tools only creates none of them."""

from typing import Annotated, Literal, Union

from urllib.parse import urlsplit

from pydantic import AfterValidator, Field, PositiveInt

from magent.models.base import Model, shaped
from magent.models.tools import DEFAULT_TOOL_TIMEOUT, Builtins, RateLimit, RetryPolicy, ToolLimits


class ToolSettings(Model):
    """Per-tool settings in an MCP servers file."""

    timeout_seconds: PositiveInt = DEFAULT_TOOL_TIMEOUT
    fallback_tools: list[str] = Field(default_factory=list)
    idempotent: bool | None = None
    needs_approval: bool = False
    rate_limit: RateLimit | None = None
    """``{calls, per_seconds}`` for this tool alone, e.g. ``{calls: 5, per_seconds: 60}``."""
    retry: RetryPolicy | None = None
    """``{max_attempts, backoff, on}``: calls that time out or fail to run are made again. Given
    here it applies even to a tool that is not idempotent (the config says it is safe)."""


def _reachable(url: str) -> str:
    """An address a connection can be made to: a host, a port that is a number, no spaces
    (its scheme is the field's pattern's to check)."""
    if not url.startswith(("http://", "https://")):
        return url
    if any(c.isspace() for c in url):
        raise ValueError(f"{url!r} has a space in it (write it as %20)")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (reading it checks it)
    except ValueError:
        raise ValueError(f"{url!r} has a host or port that cannot be read (a port is a number up to 65535; "
                         "an IPv6 host goes in [ ])") from None
    if not parts.hostname:
        raise ValueError(f"{url!r} names no host")
    return url


class StdioConfig(Model):
    """Connection parameters of a server started as a subprocess speaking MCP on stdin/stdout."""

    command: str = Field(min_length=1)
    """Executable name or path."""
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment variables; values may use ``${VAR}``."""
    cwd: str | None = None
    """Working directory of the server process."""


class OAuthSettings(Model):
    """How magent logs in to an HTTP server that asks for OAuth (``magent mcp login``). Without
    any, a client is registered dynamically, or by ``client_metadata_url`` where the server allows."""

    client_id: str | None = None
    """A client registered with the authorization server beforehand (no dynamic registration)."""
    client_secret: str | None = None
    """The pre-registered client's secret; write it as ``${VAR}`` so it stays off disk."""
    token_endpoint_auth_method: Literal["none", "client_secret_basic", "client_secret_post"] | None = None
    """How the pre-registered client authenticates (default: ``client_secret_basic`` with a secret)."""
    client_metadata_url: Annotated[str, AfterValidator(_reachable)] | None = Field(
        default=None, pattern=shaped(r"^https://[^/]+/.+", "an https:// address with a path"))
    """An HTTPS URL of a client ID metadata document to use as the client ID where the server accepts one."""
    scope: str | None = None
    """Scopes to ask for when the server does not say which (``WWW-Authenticate``, its metadata)."""
    callback_port: int = Field(default=0, ge=0, le=65535)
    """Port on 127.0.0.1 for the login's redirect (0: any free one); a pre-registered client may need a fixed one."""


class HttpConfig(Model):
    """Connection parameters of a server reached over HTTP (SSE or streamable HTTP)."""

    url: Annotated[str, AfterValidator(_reachable)] = Field(
        pattern=shaped(r"^https?://", "an http:// or https:// address"))
    headers: dict[str, str] = Field(default_factory=dict)
    """Extra headers, e.g. ``Authorization: Bearer ${TOKEN}``."""
    oauth: OAuthSettings | None = None
    """OAuth login settings. A server that answers 401 asks for a login either way, unless an
    ``Authorization`` header is given."""


SSEConfig = HttpConfig


class _ServerBase(Model):
    name: str = Field(pattern=shaped(r"^[A-Za-z][A-Za-z0-9_-]*$", "a name of letters, digits, '_' and '-' "
                                                                  "that starts with a letter"))
    """Server identifier; tools are named ``name.tool``."""
    connect_timeout_seconds: float = Field(default=30, gt=0)
    """How long starting and initialising the server may take."""
    call_timeout_seconds: PositiveInt | None = None
    """Default timeout of this server's calls; per-tool ``timeout_seconds`` overrides it."""
    tools: dict[str, ToolSettings] = Field(default_factory=dict)
    """Per-tool settings keyed by the tool's name on this server."""
    rate_limit: RateLimit | None = None
    """Calls allowed per time window to all of this server's tools together."""
    retry: RetryPolicy | None = None
    """Retry policy of this server's idempotent and read-only tools (default: 3 attempts, 1 s
    backoff, on timeout and error); its other tools retry only with a ``retry`` of their own."""
    shared: bool = True
    """The rows of a ``magent batch`` may share one process (or connection) of this server.
    Say ``false`` for a server that keeps state per client: each run then starts its own."""


class StdioServer(_ServerBase):
    transport: Literal["stdio"]
    config: StdioConfig


class HttpServer(_ServerBase):
    transport: Literal["sse", "streamable_http"]
    config: HttpConfig


MCPServer = Annotated[Union[StdioServer, HttpServer], Field(discriminator="transport")]
"""An MCP server connection: ``stdio``, ``sse`` or ``streamable_http``."""


class MCPServersFile(Model):
    """The MCP servers file (``config/mcp_servers.yaml`` or one a workflow names)."""

    servers: list[MCPServer] = Field(default_factory=list)
    builtins: Builtins = Field(default_factory=Builtins)
    limits: ToolLimits = Field(default_factory=ToolLimits)
