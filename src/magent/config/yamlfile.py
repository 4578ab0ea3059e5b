"""Reading YAML the safe way, keeping where every value came from.

The document is composed with PyYAML's ``SafeLoader`` (the loader behind
``yaml.safe_load``: no Python tags) and built into plain Python objects by hand,
so that duplicate keys are caught and every field path keeps its line and column
for error messages.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from magent.errors import ConfigError

FieldPath = tuple[Any, ...]


@dataclass
class SourceFile:
    """A parsed config file: raw data as written, data with ``${VAR}`` resolved, and marks."""

    path: Path
    raw: Any
    """Data exactly as written (``${VAR}`` kept): what may be stored on disk."""
    data: Any
    """Data with environment variables resolved: what is used in memory, never written."""
    marks: dict[FieldPath, tuple[int, int]] = field(default_factory=dict)
    """Field path → (line, column), both 1-based."""
    secrets: set[str] = field(default_factory=set)
    """Values that came from the environment (for redaction)."""

    def where(self, path: FieldPath) -> tuple[int | None, int | None]:
        """Line and column of the deepest known prefix of ``path``."""
        for n in range(len(path), -1, -1):
            mark = self.marks.get(tuple(path[:n]))
            if mark:
                return mark
        return None, None

    def error(self, message: str, path: FieldPath = ()) -> ConfigError:
        line, col = self.where(path)
        return ConfigError(message, path=display_path(self.path), line=line, column=col,
                           field=dotted(path) or None)


def dotted(path: FieldPath) -> str:
    """``('nodes', 'review', 'agent')`` → ``nodes.review.agent``; list indexes as ``[0]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def display_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


class _Loader(yaml.SafeLoader):
    """SafeLoader, used only to compose nodes and construct scalars."""


def load_file(path: Path | str) -> SourceFile:
    """Parse ``path`` (YAML or JSON). Raises ``ConfigError`` naming file, line and column."""
    path = Path(path)
    shown = display_path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("file not found", path=shown) from None
    except IsADirectoryError:
        raise ConfigError("is a directory, not a config file", path=shown) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read: {exc}", path=shown) from None
    return load_text(text, path)


def load_text(text: str, path: Path) -> SourceFile:
    shown = display_path(path)
    loader = _Loader(text)
    marks: dict[FieldPath, tuple[int, int]] = {}
    try:
        node = loader.get_single_node()
        raw = {} if node is None else _build(loader, node, (), marks, shown)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        if "could not determine a constructor" in problem:
            tag = problem.rsplit("the tag", 1)[-1].strip().strip("'")
            tag = tag.replace("tag:yaml.org,2002:", "!!")
            problem = f"YAML tag {tag} is not allowed (only plain YAML data is accepted)"
        raise ConfigError(problem, path=shown, line=mark.line + 1 if mark else None,
                          column=mark.column + 1 if mark else None) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"invalid YAML: {exc}", path=shown) from None
    finally:
        loader.dispose()
    source = SourceFile(path=path, raw=raw, data=None, marks=marks)
    source.data = _interpolate(raw, (), source)
    return source


def _build(loader: _Loader, node: yaml.Node, path: FieldPath,
           marks: dict[FieldPath, tuple[int, int]], shown: str) -> Any:
    marks.setdefault(path, (node.start_mark.line + 1, node.start_mark.column + 1))
    if isinstance(node, yaml.MappingNode):
        if node.tag != "tag:yaml.org,2002:map":
            raise yaml.constructor.ConstructorError(
                None, None, f"could not determine a constructor for the tag {node.tag}",
                node.start_mark)
        loader.flatten_mapping(node)
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, (str, int, float, bool)) or key is None:
                raise ConfigError("mapping keys must be plain scalars", path=shown,
                                  line=key_node.start_mark.line + 1,
                                  column=key_node.start_mark.column + 1)
            if key in result:
                first = marks.get(path + (key,), (None, None))[0]
                raise ConfigError(
                    f"duplicate key {key!r} (first defined on line {first})", path=shown,
                    line=key_node.start_mark.line + 1, column=key_node.start_mark.column + 1,
                    field=dotted(path + (key,)))
            marks[path + (key,)] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            result[key] = _build(loader, value_node, path + (key,), marks, shown)
        return result
    if isinstance(node, yaml.SequenceNode):
        if node.tag != "tag:yaml.org,2002:seq":
            raise yaml.constructor.ConstructorError(
                None, None, f"could not determine a constructor for the tag {node.tag}",
                node.start_mark)
        return [_build(loader, item, path + (i,), marks, shown) for i, item in enumerate(node.value)]
    return loader.construct_object(node, deep=True)


_VAR = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def _interpolate(value: Any, path: FieldPath, source: SourceFile) -> Any:
    if isinstance(value, dict):
        return {k: _interpolate(v, path + (k,), source) for k, v in value.items()}
    if isinstance(value, list):
        return [_interpolate(v, path + (i,), source) for i, v in enumerate(value)]
    if isinstance(value, str) and "$" in value:
        return expand(value, lambda name: source.error(
            f"environment variable {name} is not set (write ${{{name}:-default}} for a default)", path),
            source.secrets)
    return value


def expand(text: str, missing, secrets: set[str] | None = None) -> str:
    """Expand ``${VAR}``/``${VAR:-default}`` (``$$`` is a literal ``$``).

    ``missing(name)`` returns the exception to raise for an unset variable.
    Values taken from the environment are added to ``secrets``.
    """

    def sub(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name, default = match.group(1), match.group(2)
        value = os.environ.get(name)
        if value is None or (value == "" and default is not None):
            if default is None:
                raise missing(name)
            return default
        if secrets is not None and value:
            secrets.add(value)
        return value

    return _VAR.sub(sub, text)
