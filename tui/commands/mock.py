"""`prep mock`: a timed mock interview, a main question and its follow-up chain."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from prep.tui.commands import common
from prep.tui.commands.common import (
    Ctx,
    UsageError,
    need_stdin,
)

if TYPE_CHECKING:
    pass


@click.command("mock")
@click.option(
    "--minutes",
    type=click.FloatRange(min=0, min_open=True),
    default=10.0,
    show_default=True,
    metavar="N",
    help="Time for the whole chain (the main question counts double).",
)
@click.option("--deck", metavar="D", help="Pick the main question from this deck.")
@click.option("--seed", type=int, metavar="N", help="Seed for picking the main question.")
@click.option(
    "--plain", is_flag=True, help="Line-oriented, on stdin/stdout (also used when not a terminal)."
)
@click.pass_obj
def mock(obj: Ctx, minutes: float, deck: str | None, seed: int | None, plain: bool) -> None:
    """A mock interview: a main question, then its follow-up chain, each with a visible
    timer; answer (typed or aloud), reveal, grade yourself 1-4. Grades feed your schedule."""
    from prep.engine.study.mock import MockError, MockInterview
    from prep.tui.plain import run_mock_plain

    if obj.missing():  # a new database is made only for an interview that can start
        from prep.engine.store import Store

        with Store.memory() as scratch:
            try:
                MockInterview(scratch, obj.collection(), minutes=minutes, deck=deck, seed=seed)
            except MockError as exc:
                raise UsageError(str(exc)) from None
    with obj.store(create=True) as store:  # (its grades are ratings)
        coll = obj.collection(store=store)
        try:
            interview = MockInterview(store, coll, minutes=minutes, deck=deck, seed=seed)
        except MockError as exc:
            raise UsageError(str(exc)) from None
        reason = None if plain else common.line_mode_reason()  # (tests replace it there)
        if reason is not None:
            need_stdin()
            click.echo(f"prep: {reason}; running the line-oriented mock (--plain)", err=True)
        if plain or reason is not None:
            need_stdin()
            sys.exit(run_mock_plain(interview, sys.stdin, sys.stdout))
        from prep.tui.screens.mock import run_mock

        sys.exit(run_mock(interview))
