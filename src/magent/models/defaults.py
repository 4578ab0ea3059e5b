"""Run defaults (``config/defaults.yaml``): the model an agent uses when its file names none."""

from pydantic import Field

from magent.models.base import Model


class RunDefaults(Model):
    """What a run falls back on. Environment variables override the file (``magent config show``)."""

    model: str | None = Field(default=None, min_length=1)
    """The litellm model string of agents whose ``llm_config`` names no model (``MAGENT_MODEL``)."""
    endpoint: str | None = Field(default=None, min_length=1)
    """The API base URL that goes with the default model (``MAGENT_ENDPOINT``), e.g. a local
    OpenAI-compatible server such as llama.cpp's or Ollama's."""
