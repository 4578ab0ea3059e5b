"""The README as a front page and the documentation site (docs/, mkdocs.yml) as a reader meets
them: the site builds strictly, the command-line reference is what the program says, every
link in the README reaches a page, and no internal vocabulary reaches the reader."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"

pytestmark = pytest.mark.slow


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    """A broken link, a missing anchor, a page left out of the nav or a missing include fails."""
    p = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                       cwd=ROOT, capture_output=True, text=True, timeout=240,
                       env={**_env(), "NO_MKDOCS_2_WARNING": "1"})
    assert p.returncode == 0, p.stderr
    tour = (tmp_path / "site" / "tour" / "index.html").read_text()
    assert "note_taker.yaml" in tour and "research_brief.yaml" in tour   # the README's part included, and the rest
    assert "LangGraph" in (tmp_path / "site" / "index.html").read_text()


def test_the_cli_reference_is_what_the_program_says() -> None:
    """docs/reference/cli.md is Typer's own rendering of every command; scripts/cli-reference
    writes it anew after a command changes."""
    p = subprocess.run([sys.executable, str(ROOT / "scripts" / "cli-reference"), "--check"], cwd=ROOT,
                       capture_output=True, text=True, timeout=240, env=_env())
    assert p.returncode == 0, p.stderr
    page = (DOCS / "reference" / "cli.md").read_text()
    from magent.cli.app import _PARTS

    for _, names in _PARTS:
        for name in names:
            assert f"## `magent {name}`" in page, name
    assert "```sh\nmagent run examples/workflows/write_review.yaml" in page   # examples as code


def test_a_stale_cli_reference_is_caught(tmp_path: Path) -> None:
    stale = tmp_path / "cli.md"
    stale.write_text((DOCS / "reference" / "cli.md").read_text().replace("Print the version and exit.", "Print it."))
    p = subprocess.run([sys.executable, str(ROOT / "scripts" / "cli-reference"), "--check", "--page", str(stale)],
                       cwd=ROOT, capture_output=True, text=True, timeout=240, env=_env())
    assert p.returncode == 1 and p.stderr == f"{stale} is stale: run scripts/cli-reference\n"


def test_the_readme_is_a_front_page() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 250
    table = text.split("## Why magent", 1)[1].split("\n## ", 1)[0]
    header = next(line for line in table.splitlines() if line.startswith("| |"))
    assert [c.strip() for c in header.split("|")[2:-1]] == [
        "magent", "LangGraph", "CrewAI", "Goose", "OpenAI Agents SDK"]
    for row in ("plain", "crash", "CLI", "offline", "Retention", "MCP", "You write"):
        assert any(row.lower() in line.lower() for line in table.splitlines() if line.startswith("| ")), row
    assert "Where they are ahead" in table


def test_every_link_in_the_readme_reaches_a_file() -> None:
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README.read_text())
    local = [link for link in links if "://" not in link]
    assert len(local) >= 15
    for link in local:
        assert (ROOT / link).exists(), link


def test_no_internal_vocabulary_reaches_the_reader() -> None:
    """The design's source documents are numbered "seed 000".."seed 004"; readers never see them."""
    pages = [README, *sorted(DOCS.rglob("*.md"))]
    for page in pages:
        for number, line in enumerate(page.read_text().splitlines(), 1):
            allowed = any(word in line for word in ("--seed", "seeded", "`seed`"))   # a random seed
            assert allowed or not re.search(r"\bseeds?\b", line, re.I), f"{page.relative_to(ROOT)}:{number}: {line}"


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
