"""The model side: a small client interface, the scripted provider, the litellm adapter.

Only ``magent.llm.litellm_client`` imports litellm, and only when a run uses a
real model.
"""

from magent.llm.base import LLMClient, LLMRequest, LLMResponse, LLMToolCall, ToolSpec

__all__ = ["LLMClient", "LLMRequest", "LLMResponse", "LLMToolCall", "ToolSpec"]
