"""Command-line options shared by several command groups."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, List, Optional

import typer

McpFiles = Annotated[Optional[List[Path]], typer.Option(
    "--mcp", metavar="FILE", help="An extra MCP servers file (repeatable); later files override servers "
                                  "of the same name from the home's config/mcp_servers.yaml.")]
