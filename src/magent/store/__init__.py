"""The file layout under the home: tasks, checkpoints, entries, events, traces, locks.

Knows no LLM and no engine; everything else reaches the disk through here. Import each name
from its module (``magent.store.tasks``...): importing one light module of the store
(``magent.store.listing``, ``magent.store.locks``) loads no pydantic, so ``magent tasks list``
stays fast.
"""
