"""The prompt store from Python: ``magent.prompts``, ``prompt`` and ``add_prompt``. A stored
version (``$MAGENT_HOME/prompts/NAME/VERSION.yaml``) is never changed."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from magent import paths
from magent.config.prompts import PromptTemplate
from magent.errors import UsageError

if TYPE_CHECKING:
    from magent.api.reading import PathLike


@dataclass
class StoredPrompt(PromptTemplate):
    """One version of a stored prompt (``required``: ``metadata`` keys for ``set=``) and its siblings."""

    versions: list[str] = field(default_factory=list)
    """Every version of this name, oldest first (2 before 10)."""

    def as_dict(self, *, text: bool = True) -> dict[str, Any]:
        """What ``magent prompts show --json`` prints (``text=False``: an item of ``prompts list --json``)."""
        return {**super().as_dict(text=text), "versions": self.versions}


def prompts(*, home: PathLike | None = None) -> list[StoredPrompt]:
    """Every stored prompt, as its latest version; a file that no longer validates is a ``ConfigError``."""
    from magent.config import prompts as store

    with paths.using_home(home):
        return [_stored(store.load(name)) for name in store.names()]


def prompts_folder(*, home: PathLike | None = None) -> Path:
    """The folder the prompt store keeps its files in (``$MAGENT_HOME/prompts``)."""
    from magent.config import prompts as store

    with paths.using_home(home):
        return store.store_dir()


def prompt(name: str, version: str | None = None, *, home: PathLike | None = None) -> StoredPrompt:
    """Version ``version`` of prompt ``name`` (the latest when None). An unknown name or version is
    a ``ConfigError`` listing what exists; a malformed name a ``UsageError``."""
    from magent.config import prompts as store

    with paths.using_home(home):
        return _stored(store.load(name, version))


def add_prompt(name: str, version: str, text: str | None = None, *, file: PathLike | None = None,
               description: str = "", home: PathLike | None = None) -> StoredPrompt:
    """Store a new version of a prompt from ``text`` or ``file``. An existing version, or a
    template that does not parse, is a ``UsageError`` and nothing is written."""
    from magent.config import prompts as store
    from magent.config.templates import TemplateProblem, check, is_template

    if (text is None) == (file is None):
        raise UsageError("give the prompt's text or a file, not both" if text is not None
                         else "give the prompt's text or a file")
    if file is not None:
        try:
            text = Path(os.fspath(file)).read_text()
        except OSError as exc:
            raise UsageError(f"cannot read {os.fspath(file)}: {exc.strerror or exc}") from None
        except UnicodeDecodeError as exc:
            raise UsageError(f"{os.fspath(file)}: not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset "
                             f"{exc.start}; save the file as UTF-8)") from None
    assert text is not None
    if is_template(text):
        try:
            check(text)
        except TemplateProblem as exc:
            raise UsageError(f"{os.fspath(file) if file is not None else 'the text'}:{exc.line}: {exc.message}") from None
    with paths.using_home(home):
        added = store.add(name, version, text, description)
        return _stored(added, store.versions(name))


def _stored(template: PromptTemplate, versions: list[str] | None = None) -> StoredPrompt:
    from magent.config import prompts as store

    return StoredPrompt(name=template.name, version=template.version, text=template.text,
                        description=template.description, path=template.path, required=list(template.required),
                        names=list(template.names),
                        versions=versions if versions is not None else store.versions(template.name))
