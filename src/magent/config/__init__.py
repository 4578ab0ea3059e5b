"""YAML config loading: safe parsing, ``${VAR}`` interpolation, errors with file:line:col and field path."""

from magent.config.files import (
    ConfigKind, LoadedAgent, LoadedMCP, detect_kind, load_agent, load_mcp_servers,
    load_retention_policy, load_workflow_file,
)
from magent.config.validate import validate
from magent.config.yamlfile import SourceFile, dotted, expand, load_file, load_text

__all__ = [
    "ConfigKind", "LoadedAgent", "LoadedMCP", "SourceFile", "detect_kind", "dotted", "expand",
    "load_agent", "load_file", "load_mcp_servers", "load_retention_policy", "load_text",
    "load_workflow_file", "validate",
]
