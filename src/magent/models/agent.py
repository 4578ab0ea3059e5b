"""Agent and LLMConfig (seed 002 entity 2, seed 000 ``llm_config``)."""

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from magent.models.base import Model, shaped
from magent.models.budget import Budget
from magent.models.guardrails import Guardrails
from magent.models.memory import AgentMemory

AGENT_NAME_PATTERN = r"^[a-z][a-z0-9_]*$"


ENDPOINT_NAMES = ("endpoint", "api_base", "base_url")
"""``endpoint`` and the names litellm and the OpenAI SDK give the same setting."""


def _one_endpoint(data: Any) -> Any:
    """Accept litellm's ``api_base`` and the OpenAI SDK's ``base_url`` as ``endpoint``."""
    if not isinstance(data, dict):
        return data
    given = [name for name in ENDPOINT_NAMES if name in data]
    if len(given) > 1:
        raise ValueError(f"{' and '.join(given)} are the same setting (the endpoint): give it once")
    if given and given[0] != "endpoint":
        data = {("endpoint" if k == given[0] else k): v for k, v in data.items()}
    return data


class FallbackModel(Model):
    """A fallback model with its own endpoint and key (another provider, another server)."""

    model: str = Field(min_length=1)
    """A litellm model string."""
    endpoint: str | None = None
    """API base URL; none: the provider's own. (``api_base`` and ``base_url`` are accepted too.)"""
    api_key: str | None = None
    """API key; write it as ``${ENV_VAR}``. None: the provider's variable in the environment."""

    ACCEPTED_NAMES: ClassVar[dict[str, str]] = {name: "endpoint" for name in ENDPOINT_NAMES[1:]}
    """Other names accepted for a field (did-you-mean suggests the field's own name)."""
    _endpoint_names = model_validator(mode="before")(_one_endpoint)


class RouteRule(Model):
    """One rule of ``llm_config.routing``: when it matches a model turn, the turn goes to
    ``llm_config.models[model]``. Each rule gives one of ``turn``, ``when`` or ``budget``."""

    turn: Literal["first", "tool_result", "final"] | None = None
    """The kind of turn: ``first`` (the agent's first turn at a node), ``tool_result`` (the
    model reads the results of the tools it called), ``final`` (the last turn
    ``max_iterations`` allows, or a turn asked to give its answer again)."""
    when: str | None = None
    """A condition over State, in the language of edge conditions (``metadata.draft == true``)."""
    budget: float | None = Field(default=None, gt=0, lt=100)
    """A percentage: matches once a usage limit that applies to the agent (the task's or its
    own ``budget:``) is at least this far used, so the agent goes on with a cheaper model
    before the limit pauses the task."""
    model: int | str
    """Which model: an index into ``models`` (0 is the primary) or one of its model strings."""

    @model_validator(mode="after")
    def _one_test(self) -> "RouteRule":
        given = [name for name in ("turn", "when", "budget") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError("a routing rule gives exactly one of turn, when or budget"
                             + (f" (this one gives {' and '.join(given)})" if given else ""))
        return self


def _models_name_the_primary(data: Any) -> Any:
    """``models: [a, b]`` without ``model``: the primary is the first."""
    if isinstance(data, dict) and data.get("model") is None and isinstance(data.get("models"), list) \
            and data["models"]:
        first = data["models"][0]
        data = {**data, "model": first.get("model") if isinstance(first, dict) else first}
    return data


class LLMConfig(Model):
    """Which model an agent talks to and how."""

    model: str = Field(min_length=1)
    """A litellm model string (``openai/gpt-4o-mini``, ``ollama/llama3``...) or ``scripted``.
    With ``models``, the first of them (it may be left out)."""
    models: list[str | FallbackModel] = Field(default_factory=list)
    """The models the agent may use, the primary first; ``routing`` chooses one per turn. A
    model string uses the primary's endpoint and key when it has the same provider; a
    mapping (``model``, ``endpoint``, ``api_key``) uses exactly what it says."""
    routing: list[RouteRule] = Field(default_factory=list)
    """Which model each turn uses: rules tried in order, the first that matches chooses;
    when none does, the primary. Each model call records the rule that chose its model."""
    endpoint: str | None = None
    """API base URL, for self-hosted or OpenAI-compatible servers (``http://127.0.0.1:8080/v1``).
    ``api_base`` (litellm's name) and ``base_url`` (the OpenAI SDK's) are accepted too."""
    api_key: str | None = None
    """API key; write it as ``${ENV_VAR}`` so it is never stored in the file or on disk."""
    fallback_model: str | FallbackModel | None = None
    """Model tried after the primary one has used up its retries. As a model string it uses
    the primary's endpoint and key when it has the same provider (another model on the same
    server), else its provider's defaults; as a mapping (``model``, ``endpoint``,
    ``api_key``) it uses exactly what it says."""
    script: str | None = None
    """For ``model: scripted``: the YAML file of responses to play, relative to the agent file."""
    max_tokens: int | None = Field(default=None, gt=0)
    """Maximum output tokens per call."""
    timeout_seconds: float = Field(default=120, gt=0)
    """Per-call timeout."""
    max_retries: int = Field(default=3, ge=0, le=10)
    """Retries on rate limits, server errors and timeouts before falling back."""

    ACCEPTED_NAMES: ClassVar[dict[str, str]] = {name: "endpoint" for name in ENDPOINT_NAMES[1:]}
    """Other names accepted for a field (did-you-mean suggests the field's own name)."""
    _endpoint_names = model_validator(mode="before")(_one_endpoint)
    _primary = model_validator(mode="before")(_models_name_the_primary)


class ShortTermMemory(Model):
    """An agent's context budget (seed 000 ``memory_config.short_term``)."""

    max_tokens: int | None = Field(default=None, ge=256)
    """Most tokens one request may send (system prompt, tools and messages). None: derived from
    the model's context window where litellm knows it (90% of its input tokens), else no limit."""
    strategy: Literal["fifo", "summarize", "hybrid"] = "fifo"
    """``fifo`` leaves the oldest turns out; ``summarize`` has the model summarize what is left
    out; ``hybrid`` keeps the last ``keep_turns`` turns whole and summarizes the rest."""
    keep_turns: int = Field(default=3, ge=1)
    """For ``hybrid``: how many of the latest turns stay whole."""
    attempts: bool = False
    """For ``fifo``: the turns left out are replaced by seed 003's compressed ``attempts``, one
    line per tool call (``server.tool(arguments) → the start of its result``), made without a
    model call; the latest lines are kept within a fifth of the budget."""


def unique_tools(names: list[str]) -> list[str]:
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"tool names must be unique; repeated: {', '.join(dupes)}")
    return names


class ToolSelection(Model):
    """Dynamic tool selection (seed 000): each request carries the allowed tools that fit the
    task and the recent turns best, not all of them; the model can ask for more with
    ``tools.search``."""

    top_k: int = Field(default=8, gt=0)
    """How many of the ranked tools each request carries (besides ``always``)."""
    min_score: float = Field(default=0.0, ge=0, le=1)
    """Leave out tools scoring below this (0.0 - 1.0: 0.8 x relevance, relative to the best
    match, + 0.2 x the tool's past success rate in this home)."""
    always: list[str] = Field(default_factory=list)
    """Tools every request carries whatever they score (``server.tool``, among the agent's tools)."""

    @field_validator("always")
    @classmethod
    def _unique(cls, names: list[str]) -> list[str]:
        return unique_tools(names)


class MemoryConfig(Model):
    """Seed 000 ``memory_config`` (long-term memory is the agent's ``memory:`` block)."""

    short_term: ShortTermMemory = Field(default_factory=ShortTermMemory)


class Agent(Model):
    """An AI entity with a prompt, a model and access to specific tools."""

    name: str = Field(pattern=shaped(AGENT_NAME_PATTERN, "a name of lowercase letters, digits and '_' "
                                                         "that starts with a letter"))
    """Unique agent identifier, snake case."""
    role: str = Field(min_length=1)
    """The agent's role or purpose, one line."""
    system_prompt: str = Field(min_length=1)
    """System instruction for the model."""
    tools: list[str] = Field(default_factory=list)
    """Tools the agent may call: ``server.tool`` names or ``server.*``. This is the allow list."""
    deny_tools: list[str] = Field(default_factory=list)
    """Tools removed from ``tools`` even if a ``server.*`` pattern admits them."""
    max_calls_per_turn: int | None = Field(default=None, gt=0)
    """At most this many tool calls run from one model response; the rest are refused."""
    max_iterations: int = Field(default=10, gt=0)
    """Maximum reasoning iterations (model turns) of one ReAct run."""
    temperature: float = Field(default=0.7, ge=0, le=2)
    """Sampling temperature."""
    tool_calling: Literal["auto", "native", "text"] = "auto"
    """``native`` function calling, the ``text`` Thought/Action format, or ``auto`` (native when the model supports it)."""
    llm_config: LLMConfig
    """The model endpoint."""
    mcp_servers: str | None = None
    """An MCP servers file of this agent's own, relative to the agent file."""
    sub_agents: list[str] = Field(default_factory=list)
    """Agents this one may delegate to: each is offered as a tool ``agents.NAME`` taking a
    ``task``, and runs in a child session of its own (agents as tools)."""
    guardrails: Guardrails | None = None
    """Input rails (task text, tool results) and output rails (final answers) of this agent,
    run after the workflow's own."""
    memory: AgentMemory | None = None
    """Long-term memory across tasks: retrieval before each turn, default scope, summaries."""
    memory_config: MemoryConfig | None = None
    """The context budget: how many tokens a request may send, and what gives way when the
    conversation grows past it (the full history stays on disk)."""
    output_schema: dict[str, Any] | str | None = None
    """The final answer must be JSON that fits this JSON Schema: written inline, or the path of
    a JSON/YAML file holding it, relative to the agent file. The parsed value is the node's
    output in State (``metadata.outputs[node]``), so edge conditions can route on its fields."""
    output_retries: int = Field(default=2, ge=0, le=10)
    """How many times an answer that does not fit ``output_schema`` goes back to the model
    (with what is wrong) before the node fails with the validation error."""
    on_truncation: Literal["continue", "fail"] = "continue"
    """A reply cut at the output limit (``llm_config.max_tokens`` or the model's own): ``continue``
    asks the model to go on where it stopped (up to twice; the parts are joined into one
    answer) and then fails naming the limit; ``fail`` fails the node at once."""
    on_refusal: Literal["fail", "pause"] = "fail"
    """A reply the model refused or the provider's content filter stopped: ``fail`` the node at
    once with the provider's reason, or ``pause`` for a person (approve: ask the model again,
    with the person's message; reject: fail)."""
    budget: Budget | None = None
    """Limits on this agent's usage in a task (its model calls and tool calls, in every session)."""
    tool_selection: ToolSelection | None = None
    """Offer each model request only the tools that fit the task best (top-K by relevance and
    past success, plus ``always``) and a ``tools.search`` tool to find the others. None: every
    allowed tool goes into every request."""
    elicitation: Literal["decline", "cancel", "defaults"] = "decline"
    """How a question an MCP server asks during this agent's call (``elicitation/create``) is
    answered when no person is at the terminal (``--no-input``, a batch): ``decline``,
    ``cancel``, or ``defaults`` (accept the server's form with its default values)."""

    @field_validator("sub_agents")
    @classmethod
    def _agent_names(cls, names: list[str]) -> list[str]:
        import re

        for name in names:
            if not re.fullmatch(AGENT_NAME_PATTERN, name):
                raise ValueError(f"{name!r} is not an agent name (lowercase letters, digits, _)")
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"sub-agent names must be unique; repeated: {', '.join(dupes)}")
        return names

    @field_validator("tools", "deny_tools")
    @classmethod
    def _unique(cls, names: list[str]) -> list[str]:
        return unique_tools(names)
