"""`prep unmark`: clear the marks of cards: with no option all of them (suspended, buried, flagged),"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from prep.tui.commands.common import (
    Ctx,
    UsageError,
)

if TYPE_CHECKING:
    pass


@click.command("unmark")
@click.argument("card_ids", nargs=-1, required=True, metavar="CARD_ID...")
@click.option("--suspend", is_flag=True, help="Unsuspend (the card is served again).")
@click.option("--bury", is_flag=True, help="Unbury (the card is served again today).")
@click.option("--flag", is_flag=True, help="Unflag.")
@click.pass_obj
def unmark(obj: Ctx, card_ids: tuple[str, ...], suspend: bool, bury: bool, flag: bool) -> None:
    """Clear the marks of cards: with no option all of them (suspended, buried, flagged),
    else only those named. `prep marks` lists the marked cards."""
    from prep.engine.study.marks import UnknownCard
    from prep.engine.study.marks import unmark as clear
    from prep.engine.timeutil import utcnow

    chosen = [k for k, on in (("suspended", suspend), ("buried", bury), ("flagged", flag)) if on]
    with obj.store() as store:
        coll = obj.collection(strict=False, store=store)  # through the deck cache
        try:
            done = clear(
                store, coll, card_ids, utcnow(), chosen or ("suspended", "buried", "flagged")
            )
        except UnknownCard as exc:
            raise UsageError(str(exc)) from None
    undo = {"suspended": "unsuspended", "buried": "unburied", "flagged": "unflagged"}
    for cid, cleared in done:
        what = ", ".join(undo[k] for k in cleared) if cleared else "nothing to clear"
        click.echo(f"{cid}: {what}")
