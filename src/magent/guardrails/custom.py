"""``custom`` rails: a callable named ``package.module:function`` or ``rails.py:function`` (a file
beside the YAML), maybe ``async``, given the text and a ``RailInput``. It returns ``None``/``False``
(pass), ``True`` or a reason string (trip), or a ``Verdict`` (e.g. with ``masked=``). If it raises,
the rail's ``on_error`` decides."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Any, Callable, Literal

from pydantic import Field

from magent.guardrails.base import Rail, RailConfig, RailConfigError, RailError, RailRun, Verdict


class CustomConfig(RailConfig):
    type: Literal["custom"]
    callable: str = Field(pattern=r"^[^:\s]+:[A-Za-z_][A-Za-z0-9_]*$")
    """``module:function`` or ``file.py:function`` (relative to this file)."""
    options: dict[str, Any] = Field(default_factory=dict)
    """Passed to the callable as ``info.options``."""


class CustomRail(Rail):
    kind = "custom"
    Config = CustomConfig
    can_mask = True

    def __init__(self, config: CustomConfig, **kw):  # type: ignore[no-untyped-def]
        super().__init__(config, **kw)
        self.fn = load_callable(config.callable, self.base_dir)

    async def check(self, text: str, run: RailRun) -> Verdict:
        config: CustomConfig = self.config  # type: ignore[assignment]
        info = dataclasses.replace(run.info, options=dict(config.options))
        try:
            result = self.fn(text, info)
            if inspect.isawaitable(result):
                result = await result
        except Exception as exc:
            raise RailError(f"{config.callable} raised {type(exc).__name__}: {exc}") from None
        if result is None or result is False:
            return Verdict(False)
        if result is True:
            return Verdict(True, config.message or "custom rail tripped")
        if isinstance(result, str):
            return Verdict(True, result)
        if isinstance(result, Verdict):
            if result.triggered and config.action == "mask" and result.masked is None:
                raise RailError(f"{config.callable} tripped but gave no masked text for action: mask")
            return result
        raise RailError(f"{config.callable} returned {type(result).__name__}; expected None, a bool, "
                        "a string or a Verdict")


def load_callable(spec: str, base_dir: Path) -> Callable[..., Any]:
    """The function ``spec`` names; ``RailConfigError`` when it cannot be found."""
    target, _, attr = spec.rpartition(":")
    if target.endswith(".py"):
        path = (base_dir / target).resolve()
        if not path.is_file():
            raise RailConfigError(f"no file {path}", "callable")
        name = f"magent_rail_{abs(hash(str(path)))}"
        module = sys.modules.get(name)
        if module is None:
            module_spec = importlib.util.spec_from_file_location(name, path)
            assert module_spec is not None and module_spec.loader is not None
            module = importlib.util.module_from_spec(module_spec)
            try:
                module_spec.loader.exec_module(module)
            except Exception as exc:
                raise RailConfigError(f"{path} failed to load: {type(exc).__name__}: {exc}", "callable") from None
            sys.modules[name] = module
    else:
        try:
            module = importlib.import_module(target)
        except ImportError as exc:
            raise RailConfigError(f"cannot import {target!r}: {exc}", "callable") from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise RailConfigError(f"{target} has no function {attr!r}", "callable")
    return fn
