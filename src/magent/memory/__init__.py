"""Long-term memory across tasks: one SQLite database under ``$MAGENT_HOME/memory/``. Nothing here
imports litellm unless an embedding model is configured."""
