"""`prep check`: validate decks: the bundled ones, --questions, and any PATHs given."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from prep.tui.commands.common import (
    EXIT_USAGE,
    Ctx,
    NamedPath,
    demo_names,
)

if TYPE_CHECKING:
    pass


@click.command("check")
@click.argument("paths", nargs=-1, type=NamedPath(path_type=Path))
@click.option("--rubrics", is_flag=True, help="List every card that has no usable rubric.")
@click.pass_obj
def check(obj: Ctx, paths: tuple[Path, ...], rubrics: bool) -> None:
    """Validate decks: the bundled ones, --questions, and any PATHs given.

    Errors are printed as FILE:LINE: message (all at once), exit 2."""
    from prep.engine.decks.checks import parse_decks
    from prep.engine.decks.deck import one_line_safe
    from prep.engine.decks.deckcache import gc_paused
    from prep.engine.study.present import count

    with gc_paused():  # every file parsed, as always: no cache here
        coll = parse_decks([*obj.questions, *paths], demo_names=demo_names())
    for warning in coll.warnings:
        click.echo(one_line_safe(f"warning: {warning.file}: {warning.message}"), err=True)
    for error in coll.errors:
        click.echo(str(error), err=True)
    if coll.errors:
        sys.exit(EXIT_USAGE)
    kinds: dict[str, int] = {}
    for card in coll.cards:
        kinds[card.kind] = kinds.get(card.kind, 0) + 1
    linked = sum(1 for c in coll.cards if c.demos)
    by_kind = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    click.echo(
        f"ok: {count(len(coll.cards), 'card')} in {count(len(coll.decks), 'deck')} ({by_kind}); "
        f"{linked} linked to demos"
    )
    from prep.tui.commands.grade import rubric_notes

    for line in rubric_notes(coll.cards, every=rubrics):
        click.echo(line)
