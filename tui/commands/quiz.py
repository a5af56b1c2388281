"""`prep quiz`: review today's queue, starting on its first card (the default command)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from prep.engine.textsafe import quoted
from prep.tui.commands import common
from prep.tui.commands.common import (
    Ctx,
    UsageError,
    need_stdin,
)

if TYPE_CHECKING:
    from datetime import datetime

    from prep.engine.decks.collection import CachedCollection


@click.command("quiz")
@click.option("--deck", metavar="D", help="Only this deck.")
@click.option(
    "--new",
    "new",
    type=click.IntRange(min=0),
    metavar="N",
    help="New cards today (overrides the setting).",
)
@click.option(
    "--limit", type=click.IntRange(min=1), metavar="N", help="At most N cards this session."
)
@click.option(
    "--plain", is_flag=True, help="Line-oriented session on stdin/stdout (screen readers, pipes)."
)
@click.pass_obj
def quiz(obj: Ctx, deck: str | None, new: int | None, limit: int | None, plain: bool) -> None:
    """Review today's queue, starting on its first card (the default command)."""
    reason = None if plain else common.line_mode_reason()  # (tests replace it there)
    if reason is not None:
        need_stdin()
        click.echo(f"prep: {reason}; running the line-oriented session (--plain)", err=True)
        plain = True
    if not plain:
        from prep.tui.app import run

        sys.exit(
            run(
                db=obj.db,
                questions=obj.questions,
                deck=deck,
                new=new,
                limit=limit,
                review_first=True,
            )
        )
    from prep.engine.study.session import ReviewSession
    from prep.tui.plain import run_plain, today_lines
    from prep.tui.startup import resume_gc

    resume_gc()  # (paused for the app's start-up: tui/startup.py)

    if obj.missing():  # a new database is made only for a session that can start
        _known_deck(obj.collection(), deck)
    with obj.store(create=True) as store:  # (studying makes a new database)
        coll = obj.collection(store=store)
        _known_deck(coll, deck)
        session = ReviewSession(store, coll, deck=deck, new_limit=new, limit=limit)
        need_stdin()
        from prep.engine.study.clockback import clock_behind

        behind = clock_behind(store, session.clock())
        if behind is not None:
            click.echo(f"prep: {behind.line()}", err=True)
        today = today_lines(store, coll, session.clock(), deck, new)

        def today_at(now: datetime) -> list[str]:  # (a study day begun while it is open)
            return today_lines(store, coll, now, deck, new)

        sys.exit(run_plain(session, sys.stdin, sys.stdout, today=today, today_at=today_at))


def _known_deck(coll: CachedCollection, deck: str | None) -> None:
    if deck is not None and deck not in coll.decks:
        raise UsageError(f"no deck named {quoted(deck)} (decks: {', '.join(coll.decks)})")
