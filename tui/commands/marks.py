"""`prep marks`: list the suspended, buried and flagged cards (the review screen's @, - and f):"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from prep.tui.commands.common import (
    Ctx,
)

if TYPE_CHECKING:
    pass


@click.command("marks")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_obj
def marks_cmd(obj: Ctx, as_json: bool) -> None:
    """List the suspended, buried and flagged cards (the review screen's @, - and f):
    id, deck, marks and the prompt's first line. `prep unmark CARD_ID...` clears them."""
    from prep.engine.study.marks import marked_cards
    from prep.engine.study.present import count, shorten
    from prep.engine.timeutil import utcnow

    with obj.store(reading=True, empty_ok=True) as store:
        coll = obj.collection(strict=False, store=store)  # through the deck cache
        cards = marked_cards(store, coll, utcnow())
    totals = {k: sum(k in c.kinds for c in cards) for k in ("suspended", "buried", "flagged")}
    if as_json:
        import json

        click.echo(json.dumps({"cards": [c.to_dict() for c in cards], "counts": totals}, indent=2))
        return
    if not cards:
        click.echo("No suspended, buried or flagged cards.")
        return
    rows = []
    for c in cards:
        words = ["suspended"] if c.suspended else []
        if c.buried_until is not None:
            words.append(f"buried until {c.buried_until.astimezone():%Y-%m-%d %H:%M}")
        if c.flagged:
            words.append("flagged")
        rows.append((c.card_id, c.deck or "-", ", ".join(words), c.prompt or "(in no deck)"))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for r in rows:
        left = "  ".join(text.ljust(w) for text, w in zip(r, widths, strict=False))
        click.echo(f"{left}  {shorten(r[3], 60)}")
    click.echo(
        f"{count(len(cards), 'card')}: "
        + " · ".join(f"{totals[k]} {k}" for k in ("suspended", "buried", "flagged"))
        + ". `prep unmark CARD_ID...` clears them."
    )
