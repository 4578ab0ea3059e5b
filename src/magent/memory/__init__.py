"""Long-term memory across tasks: one SQLite database under ``$MAGENT_HOME/memory/``.

- ``store``: the database (WAL, FTS5, idempotent writes) and MemoryEntry rows;
- ``search``: full-text search (BM25), vectors when an embedding model is configured, both combined;
- ``consolidate``: near-duplicate merging, importance decay, archiving;
- ``run``: what a run does with it (retrieval before a model turn, tools, summaries);
- ``service``: the operations the CLI and the tools share.

Nothing here imports litellm unless an embedding model is configured.
"""
