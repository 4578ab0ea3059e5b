"""The on-disk format version, in a module light enough for the fast paths (no pydantic)."""

SCHEMA_VERSION = 19
"""Version of every on-disk document magent writes. Bump it with a named migration
(``store/migrations.py`` says what each version changed): 18 wrote every record whole again (the
plain form), 19 names each session's progress kind in checkpoints. Older versions are read
through the migrations, never rewritten unless ``magent migrate`` is asked."""


def check_readable(task_id: str, doc: object) -> None:
    """Refuse a task.json that is not an object or was written by a newer magent."""
    from magent.errors import StoreError

    if not isinstance(doc, dict):
        raise StoreError(f"task {task_id}: task.json is not a JSON object")
    version = doc.get("schema_version")
    if type(version) is int and version > SCHEMA_VERSION:
        raise StoreError(f"task {task_id}: task.json was written by a newer magent "
                         f"(schema {version}; this one reads {SCHEMA_VERSION})")
