"""The program's garbage collector: seldom while it starts, as Python sets it once a run is going.

Start-up makes many long-lived objects and almost no cyclic garbage, so the program raises the
thresholds while it starts and, at the run's first event, freezes what exists (``gc.freeze``)
and restores Python's. ``import magent`` leaves a host program's collector alone."""

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
    """A command that reads, prints and ends: no collections while it reads (what it makes is in
    no cycle). Only in the program, as everything here."""
    if gc.get_threshold() == _STARTING:
        gc.disable()


def keep(value: object) -> None:
    """Leave ``value`` for ``os._exit`` instead of freeing it object by object as the command returns."""
    if gc.get_threshold() == _STARTING:
        _kept.append(value)
