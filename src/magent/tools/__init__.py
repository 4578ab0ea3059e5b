"""Tools: the registry agents call through, policy, the MCP client pool, built-in connectors."""
