"""magent's version and the name it is installed by (no imports: every layer may use them)."""

__version__ = "0.1.0"
DISTRIBUTION = "magent-runner"
"""The name magent is installed by (``pip install magent-runner``): ``magent`` on the registry is
another project. The command and the import are ``magent``."""
