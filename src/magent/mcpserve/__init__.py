"""``magent mcp serve``: each served workflow or agent is a tool whose call starts an ordinary task
in the home. ``server`` is the only module here that imports the mcp SDK."""
