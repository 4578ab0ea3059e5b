"""Typer's parameter conversion, built only for a value that needs it.

Typer (from 0.2x) converts each parameter's value through a pydantic ``TypeAdapter`` that it
builds on the parameter's first value, for every parameter of the command that runs (its
group's, the completion options, ``--help``), even for a value that was not given (``None``)
or a string that stays a string. Building the first one imports pydantic and its plugin
loader (``importlib.metadata``): about half of what ``magent tasks list`` cost.

``install()`` hands typer a stand-in for that converter which answers the two cases whose
result needs no conversion the way typer's converter answers them: a value that was not
given (``None``; ``()`` for a parameter that takes several values) and a plain string for a
``str`` parameter (which typer's ``str`` conversion returns as it is). Any other value (a
number, a path, a choice, a list, a wrong value and its error message) goes to the converter
typer builds, exactly as before. With a typer that converts otherwise (no
``get_runtime_param``: click's types), nothing is changed.
"""

from __future__ import annotations

from typing import Any

_MARK = "_magent_deferred"


class _Deferred:
    """Stands in for typer's ``RuntimeParam`` of one parameter until a value needs converting."""

    __slots__ = ()

    @staticmethod
    def coerce(value: Any, param: Any, ctx: Any) -> Any:
        several = param.multiple or param.nargs == -1
        if value is None:   # typer's RuntimeParam.coerce answers None so, before converting
            return () if several else None
        if type(value) is str and not several and param.type_descriptor.annotation is str:
            return value
        from typer._coercion import build_runtime_param

        real = param._runtime_param = build_runtime_param(param.type_descriptor)
        return real.coerce(value, param=param, ctx=ctx)


_STAND_IN = _Deferred()


def install() -> None:
    """Give typer's parameters the stand-in, for the rest of this process (the program's CLI;
    a second call, or a typer without ``get_runtime_param``, changes nothing).

    It is handed out where typer asks a parameter for its converter, as some of the
    parameters (``--help``) are made only while the arguments are parsed."""
    try:
        from typer.core import _TyperParameter
    except ImportError:
        return
    if not callable(getattr(_TyperParameter, "get_runtime_param", None)) or _TyperParameter.__dict__.get(_MARK):
        return

    def get_runtime_param(self: Any) -> Any:
        return self._runtime_param if self._runtime_param is not None else _STAND_IN

    _TyperParameter.get_runtime_param = get_runtime_param
    setattr(_TyperParameter, _MARK, True)
