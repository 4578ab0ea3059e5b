"""Error types a user can act on; the CLI maps them to exit codes in one place (``cli.app``) and
prints a ``MagentError`` as its message alone (a traceback only with ``MAGENT_DEBUG=1``)."""

from __future__ import annotations

from magent.vocabulary import plural

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_PAUSED = 3
EXIT_SERVERS_DOWN = 4
"""``magent tools list``: a listed tool server did not start (the others' tools are still listed)."""
EXIT_INTERRUPTED = 130


class MagentError(Exception):
    """Base of every error meant for the user. ``exit_code`` is what the CLI returns."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UsageError(MagentError):
    """Bad command-line input: a wrong flag combination, a malformed value."""


class ConfigError(MagentError):
    """A YAML/JSON config that cannot be used. The message names file:line:col and field path."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 column: int | None = None, field: str | None = None):
        where = ""
        if path:
            where = path
            if line is not None:
                where += f":{line}"
                if column is not None:
                    where += f":{column}"
            where += ": "
        if field:
            where += f"{field}: "
        super().__init__(where + message)
        self.path, self.line, self.column, self.field = path, line, column, field
        self.reason = message
        self.errors: list[ConfigError] = [self]
        """Every mistake found in the file, each on its own (``magent validate`` shows them all);
        this error's own message names the first and counts the rest."""

    @classmethod
    def of_all(cls, errors: list["ConfigError"]) -> "ConfigError":
        """One error standing for ``errors``: the first one's message with a count of the rest."""
        first = errors[0]
        if len(errors) == 1:
            return first
        more = len(errors) - 1
        combined = cls(f"{first.reason} (and {plural(more, 'more error')})",
                       path=first.path, line=first.line, column=first.column, field=first.field)
        combined.errors = list(errors)
        return combined


class TaskNotFoundError(MagentError):
    """No task matches the id or prefix given."""


class AmbiguousTaskIdError(MagentError):
    """A prefix matches more than one task."""


class InvalidTaskIdError(MagentError):
    """A string that cannot be a task id (and must never become a path)."""


class TaskLockedError(MagentError):
    """Another live process holds the task's lock."""


class TaskStateError(MagentError):
    """The task is not in a state that allows the operation (e.g. resuming a completed task)."""


class CheckpointCorruptError(MagentError):
    """A checkpoint failed its hash or schema check. The store moves it aside."""


class CheckpointNotFoundError(MagentError):
    """No checkpoint with that number (or no valid checkpoint at all)."""


class StoreError(MagentError):
    """The home directory cannot be used (unwritable, not a directory...)."""


class LLMError(MagentError):
    """A model call failed after retries and fallback."""

    exit_code = EXIT_FAILED


class ToolError(MagentError):
    """A tool could not be run (used outside a run, e.g. by ``magent tools call``)."""

    exit_code = EXIT_FAILED


class SymlinkError(StoreError):
    """A file or directory under the home is a symbolic link: magent never reads or writes through one."""


class CheckpointSequenceError(StoreError, ValueError):
    """A checkpoint write out of order, or of a number that already exists (never overwritten)."""


class EntriesCorruptError(StoreError, ValueError):
    """The conversation cannot be rebuilt: an entry on the path to a leaf is missing, or a cycle."""


class ExportError(MagentError):
    """Traces could not be sent where they were asked to go (an OpenTelemetry endpoint)."""


class MemoryStoreError(StoreError):
    """The memory database cannot be used: unreadable, made by a newer magent, or not ours.
    It is never deleted or rewritten to recover; the message says what to do."""


class MemoryLockedError(MemoryStoreError):
    """Another process held the memory database's write lock for longer than the busy timeout."""


class MemoryNotFoundError(MagentError):
    """No memory matches the id or prefix given (or it matches several)."""


class BatchNotFoundError(MagentError):
    """No batch matches the id or prefix given (or several do)."""


class RayUnavailableError(MagentError):
    """Ray is not installed, or the cluster cannot be reached (``executor="ray"``)."""
