"""`prep cram`: the 60-second bullets of each main card, for the way to the call."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from prep.tui.commands.common import (
    Ctx,
    UsageError,
)

if TYPE_CHECKING:
    pass


@click.command("cram")
@click.option("--deck", metavar="D", help="Only this deck.")
@click.pass_obj
def cram(obj: Ctx, deck: str | None) -> None:
    """The 60-second bullets of each main card, for the way to the call."""
    from prep.engine.store import StoreError
    from prep.engine.study.cram import UnknownDeck, cram_sheet, weakest_first
    from prep.engine.timeutil import utcnow
    from prep.tui.upgrade import open_store

    with obj.cached_collection(strict=False) as coll:
        try:
            sheet = cram_sheet(coll, deck)
        except UnknownDeck as exc:
            raise UsageError(str(exc)) from None
    try:  # the day before an interview and the day itself: weakest first
        with open_store(obj.db, reading=True) as store:
            sheet = weakest_first(sheet, store, utcnow())
    except StoreError:
        pass  # no progress to read: the sheet in deck order
    from prep.tui.reports import cram_text

    click.echo(cram_text(sheet))
