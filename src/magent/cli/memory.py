"""``magent memory``: look at, search, add to and tidy the memory tasks share (reads create nothing)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, List, Optional

import typer

from magent.cli.helpfmt import examples
from magent.cli.usage import CommandGroup
from magent.vocabulary import plural, short

app = typer.Typer(
    cls=CommandGroup,
    help="Search, add to and tidy the memory that tasks share.\n\n"
         "Agents use it with memory: in their config and the memory.* tools; these commands let "
         "you look at it and manage it.",
    no_args_is_help=True)

ScopeOpt = Annotated[Optional[str], typer.Option(
    "--scope", "-s", metavar="SCOPE",
    help="Only this scope: agent:NAME, workflow:NAME, global, or agent / workflow for any name.")]
TypeOpt = Annotated[Optional[List[str]], typer.Option(
    "--type", "-t", metavar="TYPE", help="Only this memory type: episodic, semantic or procedural (repeatable).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def _status(archived: bool, everything: bool) -> str:
    if archived and everything:
        from magent.errors import UsageError

        raise UsageError("--archived and --all cannot be used together")
    return "all" if everything else "archived" if archived else "active"


def _entry_dict(entry: Any) -> dict:
    return entry.model_dump(mode="json")


@app.command("list", epilog=examples(
    "magent memory list",
    "magent memory list --scope workflow:office_memory --type semantic",
    "magent memory list --archived --json"))
def list_memories(
    scope: ScopeOpt = None,
    memory_type: TypeOpt = None,
    archived: Annotated[bool, typer.Option("--archived", help="Archived memories instead of active ones.")] = False,
    everything: Annotated[bool, typer.Option("--all", help="Active and archived memories.")] = False,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, metavar="N", help="At most this many, newest first.")] = 50,
    json_out: JsonOpt = False,
) -> None:
    """List memories, newest first."""
    from magent.api.remembering import memories
    from magent.cli.output import print_json
    from magent.tools.catalog import format_table

    listed = memories(scope=scope, types=memory_type, status=_status(archived, everything), limit=limit)
    entries, total, size = listed.entries, listed.total, listed.size_bytes
    if json_out:
        print_json([_entry_dict(e) for e in entries])
        return
    if not entries:
        print("no memories" + (" in that scope" if scope else "") + " (magent memory add TEXT stores one)")
        return
    rows = [[e.id[:8], e.memory_type, e.scope_label, f"{e.importance:.2f}", str(e.access_count),
             _date(e.last_accessed), e.content if e.status == "active" else f"[archived] {e.content}"]
            for e in entries]
    print(format_table(["ID", "TYPE", "SCOPE", "IMPORTANCE", "USED", "LAST USED", "CONTENT"], rows, 70))
    from magent.cli.retention import human_bytes

    shown = f"showing {len(entries)} of " if len(entries) < total else ""
    print(f"{shown}{plural(total, 'memory', 'memories')} · memory.db {human_bytes(size)}")


@app.command("search", epilog=examples(
    "magent memory search \"where is the weekly sync\"",
    "magent memory search '\"weekly sync\" NOT cancelled' --top-k 3",
    "magent memory search deploy --scope global --min-score 0.5 --json"))
def search(
    query: Annotated[str, typer.Argument(metavar="QUERY", help="Words to look for, or full-text syntax (\"exact phrase\", a AND b, pre*).")],
    scope: ScopeOpt = None,
    memory_type: TypeOpt = None,
    top_k: Annotated[int, typer.Option("--top-k", "-k", min=1, metavar="N", help="How many to show.")] = 10,
    min_score: Annotated[float, typer.Option("--min-score", min=0.0, max=1.0, metavar="SCORE", help="Leave out scores below this (0 to 1).")] = 0.0,
    json_out: JsonOpt = False,
) -> None:
    """Search memories: best matches first, with score and why.

    Plain words match memories containing any of them; the score (0 to 1) is the share of
    the words a memory contains, rare words weighing more."""
    from magent.api.remembering import search_memory
    from magent.cli.output import print_json, warn

    result = search_memory(query, scope=scope, types=memory_type, top_k=top_k, min_score=min_score)
    if json_out:
        print_json(result.as_dict())
        return
    for note in result.notes:
        warn(note)
    if not result.hits:
        print("no memories match")
        return
    for hit in result.hits:
        e = hit.entry
        print(f"{hit.score:.2f}  {e.id[:8]}  {e.memory_type:<10} {e.scope_label:<24} {short(e.content, 90)}")
        print(f"      {hit.why()}")


@app.command("show", epilog=examples("magent memory show 3f2a", "magent memory show 3f2a --json"))
def show(
    memory_id: Annotated[str, typer.Argument(metavar="ID", help="Memory id or unique prefix (at least 4 characters).")],
    json_out: JsonOpt = False,
) -> None:
    """Show one memory whole, with every field."""
    from magent.api.remembering import memory_entry
    from magent.cli.output import print_json

    entry = memory_entry(memory_id)
    if json_out:
        print_json(_entry_dict(entry))
        return
    data = _entry_dict(entry)
    content = data.pop("content")
    for key, value in data.items():
        if value not in (None, [], ""):
            print(f"{key:<16} {', '.join(value) if isinstance(value, list) else value}")
    print()
    print(content)


@app.command("add", epilog=examples(
    "magent memory add \"Deploys happen on Thursdays\"",
    "magent memory add \"Tests use the staging key\" --scope workflow:release",
    "magent memory add \"To rotate logs: ...\" --type procedural --importance 0.8"))
def add(
    content: Annotated[str, typer.Argument(metavar="TEXT", help="The memory: one self-contained statement.")],
    memory_type: Annotated[str, typer.Option("--type", "-t", metavar="TYPE", help="episodic, semantic or procedural.")] = "semantic",
    scope: Annotated[str, typer.Option("--scope", "-s", metavar="SCOPE", help="agent:NAME, workflow:NAME or global.")] = "global",
    importance: Annotated[float, typer.Option("--importance", min=0.0, max=1.0, metavar="X", help="0 to 1.")] = 0.5,
    tags: Annotated[Optional[List[str]], typer.Option("--tag", metavar="TAG", help="A tag (repeatable).")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Store a memory by hand (secrets are masked first)."""
    from magent.api.remembering import add_memory
    from magent.cli.output import print_json, warn

    stored = add_memory(content, memory_type=memory_type, scope=scope, importance=importance, tags=tags)
    for note in stored.notes:
        warn(note)
    if json_out:
        print_json(_entry_dict(stored.entry))
        return
    print(f"memory {stored.entry.id} stored ({stored.entry.memory_type}, {stored.entry.scope_label})")


@app.command("forget", epilog=examples("magent memory forget 3f2a", "magent memory forget 3f2a 9c1d"))
def forget(
    memory_ids: Annotated[List[str], typer.Argument(metavar="ID...", help="Memory ids or unique prefixes.")],
    json_out: JsonOpt = False,
) -> None:
    """Delete memories for good.

    Every id is checked first: if one is unknown, none is deleted."""
    from magent.api.remembering import forget_memories
    from magent.cli.output import print_json

    entries = forget_memories(memory_ids)
    if json_out:
        print_json({"forgotten": [e.id for e in entries]})
        return
    for e in entries:
        print(f"forgot {e.id[:8]}: {short(e.content, 80)}")


@app.command("export", epilog=examples(
    "magent memory export > memories.jsonl",
    "magent memory export --scope workflow:office_memory -o office.jsonl"))
def export(
    scope: ScopeOpt = None,
    archived: Annotated[bool, typer.Option("--archived", help="Only archived memories.")] = False,
    active: Annotated[bool, typer.Option("--active", help="Only active memories (default: all).")] = False,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", metavar="FILE", help="Write to FILE instead of stdout.")] = None,
) -> None:
    """Write memories as JSON Lines, one memory per line.

    Vectors are not exported: an import embeds again when a model is configured."""
    from magent.api.remembering import export_memories
    from magent.errors import UsageError

    if archived and active:
        raise UsageError("--archived and --active cannot be used together")
    status = "archived" if archived else "active" if active else "all"
    lines = export_memories(output, scope=scope, status=status)
    if output is None:
        for line in lines:
            sys.stdout.write(line)
        return
    count = "".join(lines).count("\n")
    print(f"exported {plural(count, 'memory', 'memories')} to {output}", file=sys.stderr)


@app.command("import", epilog=examples(
    "magent memory import memories.jsonl",
    "ssh other-host magent memory export | magent memory import -"))
def import_(
    source: Annotated[str, typer.Argument(metavar="FILE", help="A JSON Lines file (as magent memory export writes), or - for stdin.")],
    json_out: JsonOpt = False,
) -> None:
    """Add memories from a JSON Lines file.

    Memories whose id is already stored are skipped. Every line is checked first: a bad
    line imports nothing and is named with its line number."""
    from magent.api.remembering import import_memories
    from magent.cli.output import print_json

    report = import_memories(sys.stdin if source == "-" else Path(source))
    if json_out:
        print_json(report.as_dict())
        return
    print(f"imported {report.imported} of {report.read} memories"
          + (f" ({report.skipped} already stored, skipped)" if report.skipped else ""))


@app.command("consolidate", epilog=examples(
    "magent memory consolidate --dry-run",
    "magent memory consolidate",
    "magent memory consolidate --evict --json"))
def consolidate(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what it would do; change nothing.")] = False,
    evict: Annotated[Optional[bool], typer.Option("--evict/--archive", help="Delete what falls below the threshold, or archive it (default: config/memory.yaml, else archive).")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Merge near-duplicates, decay, archive (try --dry-run).

    Importance decays with time unused; what falls below the threshold is archived. The
    settings are in config/memory.yaml under consolidation."""
    from magent.api.remembering import consolidate_memory
    from magent.cli.output import print_json, warn

    report = consolidate_memory(dry_run=dry_run, evict=evict)
    if json_out:
        print_json(report.as_dict())
        return
    for note in report.notes:
        warn(note)
    for m in report.merged:
        print(f"{'would merge' if dry_run else 'merged'}  {m.duplicate[:8]} into {m.keeper[:8]} "
              f"({m.measure} {m.similarity:.2f}): {short(m.content, 70)}")
    gone = "evict" if report.evict else "archive"
    for c in report.archived:
        print(f"{'would ' + gone if dry_run else gone + 'd'}  {c.id[:8]} (importance {c.after:.3f}): "
              f"{short(c.content, 70)}")
    print(report.summary())


def _date(when) -> str:  # type: ignore[no-untyped-def]
    return when.astimezone().strftime("%Y-%m-%d %H:%M")
