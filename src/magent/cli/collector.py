"""The program's garbage collector: seldom while it starts, as Python sets it once a run is going.

Start-up makes hundreds of thousands of objects that live as long as the process (modules,
pydantic's validators, a parsed script, a resumed history) and frees almost none in cycles,
yet the collector, run every 700 new objects, walked them again and again: a sixth of a run's
start-up CPU. So the program raises its thresholds while it starts (garbage in cycles still
goes, a hundred times less often), and when the run's first event arrives it moves everything
made so far out of the collector's view (``gc.freeze``) and restores Python's thresholds.
Only the ``magent`` program does this; ``import magent`` leaves a host program's collector alone.
"""

from __future__ import annotations

import gc

_USUAL = gc.get_threshold()
_STARTING = (70_000, 20, 100)


def starting() -> None:
    """Collect seldom: the program is importing and reading what it needs."""
    gc.set_threshold(*_STARTING)


def running() -> None:
    """The run is going: what start-up made stays for good, and collections are as usual."""
    if gc.get_threshold() == _STARTING:
        gc.freeze()
        gc.set_threshold(*_USUAL)


def after_first(handler):  # type: ignore[no-untyped-def]
    """``handler`` for a run's events, which first says the run is going (``running``)."""
    def on_event(event):  # type: ignore[no-untyped-def]
        running()
        return handler(event)
    return on_event


_kept: list[object] = []


def reading() -> None:
    """A command that reads and prints, then ends: no collections at all while it reads.

    What it makes (ten thousand rows for ``tasks list``) is in no cycle, yet a collection walks
    all of it; and the program ends with ``os._exit``, which frees nothing one object at a time.
    Only in the program (``starting`` ran): ``import magent`` leaves a host's collector alone.
    """
    if gc.get_threshold() == _STARTING:
        gc.disable()


def keep(value: object) -> None:
    """Leave ``value`` for the program's end (``os._exit``) instead of freeing it, object by
    object, as the command returns: for ``tasks list``'s ten thousand rows, 28 M instructions
    after the answer is printed and before the prompt comes back. Only in the program, as
    ``reading``."""
    if gc.get_threshold() == _STARTING:
        _kept.append(value)
