"""The model side: a small client interface, the scripted provider, the litellm adapter.

Only ``magent.llm.litellm_client`` imports litellm, and only when a run uses a
real model. Test doubles are in ``magent.testing``.
"""

from magent.llm.base import LLMClient, LLMRequest, LLMResponse, LLMToolCall, TokenSink, ToolSpec
from magent.llm.factory import make_client, preflight, warm_import
from magent.llm.scripted import SCRIPTED, ScriptedClient

__all__ = [
    "LLMClient", "LLMRequest", "LLMResponse", "LLMToolCall", "SCRIPTED", "ScriptedClient",
    "TokenSink", "ToolSpec", "make_client", "preflight", "warm_import",
]
