"""``magent mcp serve``: magent as an MCP server.

Each served workflow or agent is a tool; a call starts an ordinary task in the home, so
``magent tasks list``, ``trace`` and ``resume`` see and continue it. ``catalog`` says what
is served and with what input schema, ``runs`` starts and waits for tasks, ``verbs`` answers
the task tools (``tasks_list``, ``task_status``, ``resume``, ``chat``, ``trace``) and
``server`` is the only module here that imports the mcp SDK.
"""
