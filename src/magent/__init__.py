"""magent: a local-first command-line agent runner."""

__version__ = "0.1.0"
