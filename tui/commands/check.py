"""`prep check`: validate decks: the bundled ones, --questions, and any PATHs given."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from prep.tui.commands.common import (
    EXIT_USAGE,
    NAMED_PATH,
    Ctx,
    UsageError,
    demo_names,
)

if TYPE_CHECKING:
    pass


@click.command("check")
@click.argument("paths", nargs=-1, type=NAMED_PATH)  # (as given: ./- is not -)
@click.option("--rubrics", is_flag=True, help="List every card that has no usable rubric.")
@click.pass_obj
def check(obj: Ctx, paths: tuple[str, ...], rubrics: bool) -> None:
    """Validate decks: the bundled ones, --questions, and any PATHs given (- reads a deck
    from standard input).

    Errors are printed as FILE:LINE: message (all at once), exit 2."""
    from prep.engine.decks.checks import parse_decks
    from prep.engine.decks.deck import one_line_safe
    from prep.engine.decks.deckcache import gc_paused
    from prep.engine.study.present import count

    piped = _piped_deck(paths)
    # only the argument "-" itself is standard input: ./- (a Path of it is Path("-")) is the
    # file named -, and its errors are labelled ./-:LINE: (files.display_path)
    files = [Path(p) for p in paths if p != "-"]
    with gc_paused():  # every file parsed, as always: no cache here
        coll = parse_decks([*obj.questions, *files], demo_names=demo_names(), piped=piped)
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


def _piped_deck(paths: tuple[str, ...]) -> str | None:
    """The deck on standard input when a PATH is ``-`` (once): UTF-8 text of at most a deck's
    size, read as `prep grade --answers -` reads (`< /dev/zero` refused once past it)."""
    from prep.engine.decks.deck import MAX_DECK_BYTES
    from prep.tui.commands import common

    given = sum(1 for p in paths if p == "-")
    if not given:
        return None
    if given > 1:
        raise UsageError("- (standard input) given twice; it holds one deck")
    stdin = common.piped_stdin("prep check -", "a deck", "prep check - < DECK.yaml")
    data = stdin.read(MAX_DECK_BYTES + 1)
    if len(data) > MAX_DECK_BYTES:
        raise UsageError(f"standard input: more than {MAX_DECK_BYTES:,} bytes; too big to be read")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"standard input: not UTF-8 text (byte {exc.start + 1})") from None
