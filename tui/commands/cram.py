"""`prep cram`: the 60-second bullets of each main card, for the way to the call."""

from __future__ import annotations

import click

from prep.tui.commands.common import (
    Ctx,
    UsageError,
)


@click.command("cram")
@click.option("--deck", metavar="D", help="Only this deck.")
@click.pass_obj
def cram(obj: Ctx, deck: str | None) -> None:
    """The 60-second bullets of each main card, for the way to the call."""
    from prep.engine.study.cram import UnknownDeck, cram_sheet
    from prep.tui.reports import cram_text

    with obj.cached_collection(strict=False) as coll:
        try:
            sheet = cram_sheet(coll, deck)
        except UnknownDeck as exc:
            raise UsageError(str(exc)) from None
    click.echo(cram_text(sheet))
