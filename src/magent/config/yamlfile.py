"""Reading YAML with ``SafeLoader``, built by hand to catch duplicate keys and keep each value's position."""

from __future__ import annotations

import os
import re
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import yaml

from magent.errors import ConfigError

FieldPath = tuple[Any, ...]


@dataclass(eq=False)
class SourceFile:
    """A parsed config file: raw data as written, data with ``${VAR}`` resolved, and marks."""

    path: Path
    raw: Any
    """Data exactly as written (``${VAR}`` kept): what may be stored on disk."""
    data: Any
    """Data with environment variables resolved: what is used in memory, never written."""
    secrets: set[str] = field(default_factory=set)
    """Values that came from the environment (for redaction)."""
    text: str | None = None
    """The YAML text, from which ``marks`` are found when an error needs them."""
    _marks: dict[FieldPath, tuple[int, int]] | None = field(default=None, repr=False)

    @property
    def marks(self) -> dict[FieldPath, tuple[int, int]]:
        """Field path → (line, column), 1-based; found on first use, since only an error needs them."""
        if self._marks is None:
            self._marks = {}
            if self.text is not None:
                _build(self.text, self.path, self._marks)
        return self._marks

    def where(self, path: FieldPath) -> tuple[int | None, int | None]:
        """Line and column of the deepest known prefix of ``path``."""
        marks = self.marks
        for n in range(len(path), -1, -1):
            mark = marks.get(tuple(path[:n]))
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
        return str(resolved(path).relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def resolved(path: Path) -> Path:
    """``path`` made absolute, its links followed; a link that leads back to itself is left for
    reading it to report (``resolve`` raises RuntimeError on one before Python 3.13)."""
    try:
        return path.resolve()
    except (RuntimeError, OSError):
        return path.absolute()


class _Loader(yaml.SafeLoader):
    """SafeLoader, used only to compose nodes and construct scalars; it refuses deep nesting."""

    depth = 0

    def compose_sequence_node(self, anchor: Any) -> yaml.SequenceNode:
        with self._nested():
            return super().compose_sequence_node(anchor)

    def compose_mapping_node(self, anchor: Any) -> yaml.MappingNode:
        with self._nested():
            return super().compose_mapping_node(anchor)

    @contextmanager
    def _nested(self) -> Iterator[None]:
        if self.depth >= MAX_DEPTH:
            mark = self.peek_event().start_mark
            raise yaml.composer.ComposerError(
                None, None, f"collections are nested more than {MAX_DEPTH} levels deep (the limit "
                "for a config file)", mark)
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1


_FAST = getattr(yaml, "CSafeLoader", None)
"""libyaml's SafeLoader when PyYAML has it: a long file composes in milliseconds, not a second."""


def _compose(text: str) -> tuple[Any, Any]:
    """The loader and the document's root node (``None`` for an empty document).

    libyaml composes plain text, after measuring nesting from its events (its composer recurses in
    C); any problem is left to the pure-Python loader, whose messages users see."""
    if _FAST is not None and not yaml.reader.Reader.NON_PRINTABLE.search(text):
        with suppress(yaml.YAMLError):
            if _nesting(text) <= MAX_DEPTH:
                return _root(_FAST(text))
    return _root(_Loader(text))


def _root(loader: Any) -> tuple[Any, Any]:
    try:
        return loader, loader.get_single_node()
    except BaseException:
        loader.dispose()
        raise


def _nesting(text: str) -> int:
    """How deep collections nest in ``text``, read from libyaml's events."""
    depth = deepest = 0
    for event in yaml.parse(text, Loader=_FAST):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_DEPTH:
                break
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
    return deepest


MAX_CONFIG_BYTES = 1_000_000
"""The largest config file read (``MAGENT_MAX_CONFIG_BYTES``): a bigger one is a mistake or an attack."""
MAX_BYTES_ENV = "MAGENT_MAX_CONFIG_BYTES"
MAX_DEPTH = 100
"""How deep collections may nest: PyYAML recurses, so 50,000 ``[`` would exhaust the stack."""


def max_config_bytes() -> int:
    """The size limit for config files: ``$MAGENT_MAX_CONFIG_BYTES`` or 1,000,000 bytes."""
    raw = os.environ.get(MAX_BYTES_ENV, "").strip()
    if not raw:
        return MAX_CONFIG_BYTES
    try:
        value = int(raw.replace("_", ""))
    except ValueError:
        value = 0
    if value <= 0:
        raise ConfigError(f"{MAX_BYTES_ENV}={raw!r} is not a number of bytes (for example 5000000)")
    return value


def load_file(path: Path | str, *, cached: bool = False) -> SourceFile:
    """Parse ``path`` (YAML or JSON); ``ConfigError`` names file, line and column. ``cached``: a
    big file's data is kept under the home for the next process (``parsecache``)."""
    path = Path(path)
    shown = display_path(path)
    limit = max_config_bytes()
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            data = b"" if size > limit else fh.read(limit + 1)
    except FileNotFoundError:
        raise ConfigError("file not found", path=shown) from None
    except IsADirectoryError:
        raise ConfigError("is a directory, not a config file", path=shown) from None
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror or exc}", path=shown) from None
    if size > limit or len(data) > limit:
        what = f"{size:,} bytes" if size > limit else f"more than {limit:,} bytes"
        raise ConfigError(f"the file is {what}, over the limit of {limit:,} bytes for a config file "
                          f"({MAX_BYTES_ENV} sets the limit)", path=shown)
    if not cached:
        return load_text(decode(data, shown), path)
    from magent.config import parsecache

    text = decode(data, shown)
    entry = parsecache.get(data)
    found, raw = parsecache.raw(entry) if entry is not None else (False, None)
    if not found:
        source = load_text(text, path)
        parsecache.put(data, source.raw)
        return source
    source = SourceFile(path=path, raw=raw, data=None, text=text)
    # Without a "$" nothing is resolved: the data is a second copy of the entry (quicker
    # than walking every value of a thousand replies looking for one).
    source.data = parsecache.raw(entry)[1] if b"$" not in data else _interpolate(raw, (), source)
    return source


def decode(data: bytes, shown: str) -> str:
    """``data`` as UTF-8 text; ``ConfigError`` at the line and column of the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        line = data.count(b"\n", 0, exc.start) + 1
        column = len(data[line_start:exc.start].decode("utf-8", errors="replace")) + 1
        raise ConfigError(f"byte 0x{data[exc.start]:02x} is not valid UTF-8 (save the file as UTF-8)",
                          path=shown, line=line, column=column) from None


MAX_NODES = 100_000
"""Values a config file may hold once aliases are expanded (stops "billion laughs" files)."""


def load_text(text: str, path: Path) -> SourceFile:
    """Parse YAML ``text`` read from ``path``; ``ConfigError`` names file, line and column."""
    try:
        raw = _build(text, path, None)
    except ConfigError:
        # Said again with every value's position known (a duplicate key names the line of
        # the first one): the same checks, so the same error, in more words.
        _build(text, path, {})
        raise
    source = SourceFile(path=path, raw=raw, data=None, text=text)
    source.data = _interpolate(raw, (), source)
    return source


def _build(text: str, path: Path, marks: dict[FieldPath, tuple[int, int]] | None) -> Any:
    """The plain data of ``text``, recording each value's position in ``marks`` unless None."""
    shown = display_path(path)
    loader: Any = None
    try:
        loader, node = _compose(text)
        return {} if node is None else _Builder(loader, marks, shown).build(node, ())
    except yaml.MarkedYAMLError as exc:
        raise _marked_error(exc, shown) from None
    except yaml.reader.ReaderError as exc:
        # Raised for control characters and bad encodings; it knows a position, not a line.
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        char = chr(exc.character) if isinstance(exc.character, int) else exc.character
        raise ConfigError(f"character {char!r} (U+{ord(char):04X}) is not allowed in YAML",
                          path=shown, line=line, column=column) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"invalid YAML: {exc}", path=shown) from None
    finally:
        if loader is not None:
            loader.dispose()


def _marked_error(exc: yaml.MarkedYAMLError, shown: str) -> ConfigError:
    from magent.config.yamlhints import syntax_words

    mark = exc.problem_mark or exc.context_mark
    problem = exc.problem or exc.context or "invalid YAML"
    if said := syntax_words(exc):
        problem = said
    elif "could not determine a constructor" in problem:
        tag = problem.rsplit("the tag", 1)[-1].strip().strip("'")
        tag = tag.replace("tag:yaml.org,2002:", "!!")
        problem = f"YAML tag {tag} is not allowed (only plain YAML data is accepted)"
    elif problem == "but found another document":
        problem = "found a second YAML document (a config file holds one; remove the '---')"
    elif exc.problem and exc.context and exc.context_mark is not None:
        # The context says what was open when the problem was found, often lines earlier
        # (an unclosed bracket or quote): that is where the mistake usually is.
        problem = f"{problem} ({exc.context} started on line {exc.context_mark.line + 1})"
    return ConfigError(problem, path=shown, line=mark.line + 1 if mark else None,
                       column=mark.column + 1 if mark else None)


_MERGE = "tag:yaml.org,2002:merge"


class _Builder:
    """Builds plain Python data from composed nodes, recording where every field path is."""

    def __init__(self, loader: Any, marks: dict[FieldPath, tuple[int, int]] | None, shown: str):
        self.loader = loader
        self.marks = marks
        self.shown = shown
        self.count = 0
        self.open: set[int] = set()
        """Ids of the collection nodes being built: meeting one again is a recursive alias."""
        self.written: dict[int, set[int]] = {}

    def _error(self, message: str, node: yaml.Node, field: FieldPath = ()) -> ConfigError:
        return ConfigError(message, path=self.shown, line=node.start_mark.line + 1,
                           column=node.start_mark.column + 1, field=dotted(field) or None)

    def build(self, node: yaml.Node, path: FieldPath) -> Any:
        self.count += 1
        if self.count > MAX_NODES:
            raise self._error(f"more than {MAX_NODES} values once aliases are expanded", node)
        if self.marks is not None:
            self.marks.setdefault(path, (node.start_mark.line + 1, node.start_mark.column + 1))
        if not isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
            return self.loader.construct_object(node, deep=True)
        if id(node) in self.open:
            raise self._error("an alias refers to a value that contains it (recursive)", node, path)
        self.open.add(id(node))
        try:
            if isinstance(node, yaml.MappingNode):
                return self._mapping(node, path)
            if node.tag != "tag:yaml.org,2002:seq":
                raise self._tag_error(node)
            return [self.build(item, path + (i,)) for i, item in enumerate(node.value)]
        finally:
            self.open.discard(id(node))

    @staticmethod
    def _tag_error(node: yaml.Node) -> yaml.constructor.ConstructorError:
        return yaml.constructor.ConstructorError(
            None, None, f"could not determine a constructor for the tag {node.tag}",
            node.start_mark)

    def _mapping(self, node: yaml.MappingNode, path: FieldPath) -> dict[Any, Any]:
        if node.tag != "tag:yaml.org,2002:map":
            raise self._tag_error(node)
        # Keys written in this mapping may repeat keys brought in by a ``<<`` merge
        # (that is what a merge is for); two written keys with one name are a mistake.
        # flatten_mapping rewrites node.value in place, so an aliased mapping met a
        # second time is already flattened: remember what was written the first time.
        written = self.written.get(id(node))
        if written is None:
            written = self.written[id(node)] = {id(k) for k, _ in node.value if k.tag != _MERGE}
        self.loader.flatten_mapping(node)
        result: dict[Any, Any] = {}
        from_merge: set[Any] = set()
        for key_node, value_node in node.value:
            key = self.loader.construct_object(key_node, deep=True)
            if isinstance(key, bool) and not key_node.style:  # (plain: not quoted)
                # A key is a name: YAML 1.1 reads a plain on/off/yes/no as a boolean, and a
                # field such as a retry policy's ``on`` would never be found.
                key = key_node.value
            if not isinstance(key, (str, int, float, bool)) or key is None:
                raise self._error("mapping keys must be plain scalars", key_node, path)
            here = path + (key,)
            if key in result and not (key in from_merge or id(key_node) not in written):
                first = (self.marks or {}).get(here, (None, None))[0]
                raise self._error(f"duplicate key {key!r} (first defined on line {first})",
                                  key_node, here)
            if id(key_node) in written:
                from_merge.discard(key)
                if self.marks is not None:
                    self.marks[here] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            else:
                from_merge.add(key)
                if self.marks is not None:
                    self.marks.setdefault(here, (key_node.start_mark.line + 1, key_node.start_mark.column + 1))
            result[key] = self.build(value_node, here)
        return result


_VAR = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|(?P<bad>\$\{[^}]*\}?)")
VAR_SYNTAX = "write ${NAME} or ${NAME:-default}, and $$ for a literal $"


def _interpolate(value: Any, path: FieldPath, source: SourceFile) -> Any:
    if isinstance(value, dict):
        return {k: _interpolate(v, path + (k,), source) for k, v in value.items()}
    if isinstance(value, list):
        return [_interpolate(v, path + (i,), source) for i, v in enumerate(value)]
    if isinstance(value, str) and "$" in value:
        return expand(value, lambda name: source.error(
            f"environment variable {name} is not set (write ${{{name}:-default}} for a default)", path),
            source.secrets,
            malformed=lambda ref: source.error(f"malformed variable reference {ref!r} ({VAR_SYNTAX})",
                                               path))
    return value


def expand(text: str, missing, secrets: set[str] | None = None, *, malformed=None) -> str:
    """Expand ``${VAR}``/``${VAR:-default}`` (``$$`` is a literal ``$``); values taken from the
    environment are added to ``secrets``. ``missing`` and ``malformed`` make the exceptions to
    raise: a typo such as ``${KEY:default}`` must not pass as literal text."""

    def sub(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        if match.group("bad") is not None:
            ref = match.group("bad")
            raise (malformed(ref) if malformed else
                   ValueError(f"malformed variable reference {ref!r} ({VAR_SYNTAX})"))
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


def from_raw(raw: Any, path: Path) -> SourceFile:
    """A SourceFile for data stored as written (a task's config snapshot); ``${VAR}`` resolved anew."""
    source = SourceFile(path=path, raw=raw, data=None)
    source.data = _interpolate(raw, (), source)
    return source
