"""The on-disk format version, in a module light enough for the fast paths (no pydantic)."""

SCHEMA_VERSION = 19
"""Version of every on-disk document magent writes. Bump with a named migration
(``store/migrations.py``): 2 stopped storing checkpoints' derived ``total_usage``; 3 added
sessions (checkpoints list the open ones, trace steps and sessions name theirs); 4 dropped
tasks' ``steps`` (``usage.calls`` counts model calls), added the ``interrupted`` status and
checkpoints' ``journals``; 5 leaves out of checkpoints what can be put back (defaults at any
depth, the task id, empty journals, an agent's ``spent`` equal to the task's); 6 leaves out of
trace.json what a model turn's step and action record can be told from, and long results that
are entries (``models.tracedisk``); 7: ``llm_call`` events name their parameters by hash
(``params``, in ``requests.jsonl``); 8 leaves out of trace.json a turn step's agent when it
is its node, and its model calls' model and provider when they are the previous turn's, and stop
reason when the step tells it; 9 leaves out of checkpoints what their other fields tell (a
model turn's ``reason``, ``state.current_agent`` equal to the position, ``turn_index`` equal to
the node's iteration, the task's spent tokens, calls and cost equal to the usage's sums); 10
leaves out of events.jsonl what a line can be told from, itself or the line before it (UTC
``ts`` as ``Z``, an llm_call's agent equal to its node, zero latency and the leaf the line
before names, a tool_result's SUCCESS and the call, tool and node of the tool_call just before
it: ``store.events``); 11 leaves out of trace.json a turn step's node when it is the
previous turn step's; 12 leaves out of entries.jsonl a tool result's ``tool_call_id`` and
``name`` when they are those of its parent's one tool call (``store.entries.restore``); 13 its
``node`` too, when it is that parent's; 14 leaves out of checkpoints ``node_progress.entered``
and ``started`` when they are true past a node's first turn; 15 leaves out of trace.json a
turn step's iteration when it follows the previous turn's at its node, and writes steps' times
in milliseconds when they are; 16 leaves out of an events.jsonl line the ``ts`` the line before
wrote; 17 leaves a checkpoint's ``sequence`` to its file's name (still hashed); 18 writes every
record whole again, the plain form: nothing is left out because another record, the line before,
the file's name or other fields say it (only optional fields at their published defaults are);
19 names the kind of each session's progress in checkpoints (``node_progress.kind``: the model
that reads it, ``models/progress.py``); versions 5-18 are read through the migrations, never
rewritten unless ``magent migrate`` is asked."""


def check_readable(task_id: str, doc: object) -> None:
    """Refuse a task.json that is not an object or was written by a newer magent."""
    from magent.errors import StoreError

    if not isinstance(doc, dict):
        raise StoreError(f"task {task_id}: task.json is not a JSON object")
    version = doc.get("schema_version")
    if type(version) is int and version > SCHEMA_VERSION:
        raise StoreError(f"task {task_id}: task.json was written by a newer magent "
                         f"(schema {version}; this one reads {SCHEMA_VERSION})")
