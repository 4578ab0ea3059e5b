"""The prompt store (seed 004's PromptStore): ``$MAGENT_HOME/prompts/NAME/VERSION.yaml`` holds
``text`` (a template) and an optional ``description``. A version is never changed once written,
so an agent naming ``{prompt: triage, version: 2}`` gets the same text on every run and resume."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from magent import paths
from magent.config.yamlfile import MAX_BYTES_ENV, max_config_bytes
from magent.errors import ConfigError, UsageError

NAME = re.compile(r"^[a-z][a-z0-9_-]*$")
VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(eq=False)
class PromptTemplate:
    """One version of a stored prompt (seed 004 ``PromptTemplate``)."""

    name: str
    version: str
    text: str
    description: str = ""
    path: Path | None = None
    required: list[str] = field(default_factory=list)
    """``metadata`` keys the text needs (no default)."""
    names: list[str] = field(default_factory=list)
    """Top-level names it uses (``task``, ``metadata``...)."""

    def as_dict(self, *, text: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "version": self.version, "description": self.description,
                               "required": self.required, "names": self.names,
                               "path": str(self.path) if self.path else None}
        if text:
            out["text"] = self.text
        return out


def store_dir(root: Path | None = None) -> Path:
    return (root or paths.home()) / "prompts"


def _version_key(version: str) -> tuple:
    """Versions sort as numbers where they are numbers (2 before 10)."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"[._-]", version))


def versions(name: str, root: Path | None = None) -> list[str]:
    folder = store_dir(root) / name
    if not folder.is_dir():
        return []
    found = [p.stem for p in folder.iterdir() if p.suffix in (".yaml", ".yml") and VERSION.fullmatch(p.stem)]
    return sorted(found, key=_version_key)


def names(root: Path | None = None) -> list[str]:
    folder = store_dir(root)
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and NAME.fullmatch(p.name) and versions(p.name, root))


def load(name: str, version: str | None = None, root: Path | None = None) -> PromptTemplate:
    """Version ``version`` of prompt ``name`` (the latest when None); ``ConfigError`` naming what
    exists when there is no such prompt or version, or when its file or template is broken."""
    from magent.config.templates import TemplateProblem, check, is_template
    from magent.config.validate import validate
    from magent.config.yamlfile import load_file

    if not NAME.fullmatch(name):
        raise UsageError(f"{name!r} is not a prompt name (lowercase letters, digits, - and _)")
    known = versions(name, root)
    if not known:
        have = names(root)
        raise ConfigError(f"no prompt {name!r} in {store_dir(root)}"
                          + (f" (prompts: {', '.join(have)})" if have else " (it has none)"))
    version = str(version) if version is not None else known[-1]
    if version not in known:
        raise ConfigError(f"prompt {name!r} has no version {version!r} (versions: {', '.join(known)})")
    folder = store_dir(root) / name
    path = next(p for p in (folder / f"{version}.yaml", folder / f"{version}.yml") if p.is_file())
    source = load_file(path)
    doc = validate(source, PromptFile)
    template = PromptTemplate(name=name, version=version, text=doc.text, description=doc.description, path=path)
    if is_template(doc.text):
        try:
            needs = check(doc.text)
        except TemplateProblem as exc:
            at, _ = source.where(("text",))
            raise ConfigError(exc.message, path=str(path), line=(at or 0) + exc.line if at else None,
                              field="text") from None
        template.required, template.names = sorted(needs.metadata), sorted(needs.names)
    return template


def add(name: str, version: str, text: str, description: str = "", root: Path | None = None) -> PromptTemplate:
    """Store a new version; an existing one is never replaced."""
    import yaml

    from magent.store.files import create_immutable

    if not NAME.fullmatch(name):
        raise UsageError(f"{name!r} is not a prompt name (lowercase letters, digits, - and _)")
    if not VERSION.fullmatch(version):
        raise UsageError(f"{version!r} is not a version (letters, digits, '.', '-' and '_')")
    if not text.strip():
        raise UsageError("the prompt text is empty")
    if version in versions(name, root):
        raise UsageError(f"prompt {name!r} already has version {version!r}: versions are never changed; "
                         "add a new one")
    doc = ({"description": description} if description else {}) | {"text": text}
    data = yaml.safe_dump(doc, allow_unicode=True, sort_keys=False).encode()
    if len(data) > (limit := max_config_bytes()):  # it could not be read back: refuse it now
        raise UsageError(f"the prompt is {len(data):,} bytes as stored, over the limit of {limit:,} bytes for a "
                         f"config file ({MAX_BYTES_ENV} sets the limit); nothing was stored")
    folder = store_dir(root) / name
    folder.mkdir(parents=True, exist_ok=True)
    create_immutable(folder / f"{version}.yaml", data)
    return load(name, version, root)


def resolve_ref(source: Any, data: dict[str, Any], key: str, at: tuple[Any, ...]) -> dict[str, Any]:
    """``data`` with ``data[key]`` — a reference ``{prompt: NAME, version: V}`` — replaced by the
    stored text; errors point at the reference in ``source`` (file:line)."""
    ref = data.get(key)
    if not isinstance(ref, dict):
        return data
    unknown = sorted(set(ref) - {"prompt", "version"})
    if unknown or not isinstance(ref.get("prompt"), str) or ref.get("version") is None:
        raise source.error("a text, or a stored prompt referred to as {prompt: NAME, version: V}"
                           + (f" (unknown field {unknown[0]!r})" if unknown else ""), at + (key,))
    try:
        template = load(ref["prompt"], str(ref["version"]))
    except (ConfigError, UsageError) as exc:
        raise source.error(getattr(exc, "reason", exc.message), at + (key,)) from None
    return {**data, key: template.text}


from magent.models.base import Model  # noqa: E402  (kept below: the module's API reads first)


class PromptFile(Model):
    """A stored prompt version's file."""

    text: str
    """The template."""
    description: str = ""
