"""Long-term memory across tasks: one SQLite database under ``$MAGENT_HOME/memory/``."""
