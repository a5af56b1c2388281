"""The `prep` command line.

Import weight matters: this module imports only click at the top. Each command imports
what it needs when it runs, so `prep --help`, `prep stats` and `prep check` never import
torch or textual.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

EXIT_USAGE = 2


class UsageError(click.ClickException):
    """A one-line error for bad input: printed as `prep: message`, exit code 2."""

    exit_code = EXIT_USAGE

    def show(self, file=None) -> None:  # noqa: ANN001 - click's signature
        click.echo(f"prep: {self.format_message()}", err=True)


class Ctx:
    def __init__(self, db: str | None, questions: tuple[str, ...]) -> None:
        self.db = db
        self.questions = [Path(q) for q in questions]

    def store(self):
        from prep.engine.storage import Store, StoreError

        try:
            return Store.open(self.db)
        except StoreError as exc:
            raise UsageError(str(exc)) from exc

    def collection(self, *, strict: bool = True):
        """The bundled decks plus --questions/PREP_QUESTIONS. With ``strict``, any deck error
        is printed as FILE:LINE: message and the command exits 2."""
        from prep.engine.deck import load_collection

        coll = load_collection(self.questions, demo_names=demo_names())
        if coll.errors and not strict:
            click.echo(f"prep: warning: {len(coll.errors)} deck error(s) ignored; see `prep check`", err=True)
        if coll.errors and strict:
            for error in coll.errors:
                click.echo(str(error), err=True)
            raise UsageError(f"{len(coll.errors)} error(s) in the decks; fix them (see `prep check`)")
        return coll


def demo_names() -> list[str] | None:
    try:
        from prep.demos.registry import names
    except ImportError:
        return None
    return names()


def _questions_from_env() -> tuple[str, ...]:
    env = os.environ.get("PREP_QUESTIONS", "")
    return tuple(p for p in env.split(os.pathsep) if p)


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", metavar="PATH", envvar="PREP_DB", help="Progress database (env PREP_DB; default: user data dir).")
@click.option(
    "--questions",
    "questions",
    metavar="DIR",
    multiple=True,
    help="Extra deck folder or file beside the bundled decks (env PREP_QUESTIONS).",
)
@click.version_option(package_name="prep")
@click.pass_context
def main(ctx: click.Context, db: str | None, questions: tuple[str, ...]) -> None:
    """prep: spaced-repetition interview prep on attention's output projection W_O,
    with live PyTorch demos that check every claim.

    Run `prep` alone to open today's queue in the terminal app.
    """
    ctx.obj = Ctx(db, questions or _questions_from_env())
    if ctx.invoked_subcommand is None:
        ctx.invoke(quiz)


@main.command()
@click.option("--deck", metavar="D", help="Only this deck.")
@click.option("--new", "new", type=click.IntRange(min=0), metavar="N", help="New cards today (overrides the setting).")
@click.option("--limit", type=click.IntRange(min=1), metavar="N", help="At most N cards this session.")
@click.option("--plain", is_flag=True, help="Line-oriented session on stdin/stdout (screen readers, pipes).")
@click.pass_obj
def quiz(obj: Ctx, deck: str | None, new: int | None, limit: int | None, plain: bool) -> None:
    """Review today's queue (the default command)."""
    if not plain:
        from prep.tui.app import run

        sys.exit(run(db=obj.db, questions=obj.questions, deck=deck, new=new, limit=limit))
    from prep.engine.plain import run_plain
    from prep.engine.session import ReviewSession

    coll = obj.collection()
    if deck is not None and deck not in coll.decks:
        raise UsageError(f"no deck named {deck!r} (decks: {', '.join(coll.decks)})")
    with obj.store() as store:
        session = ReviewSession(store, coll, deck=deck, new_limit=new, limit=limit)
        sys.exit(run_plain(session, sys.stdin, sys.stdout))


@main.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_obj
def demo(obj: Ctx, args: tuple[str, ...]) -> None:
    """Run one demo: prep demo NAME [--device auto|cpu|cuda|mps] [--scale small|large]
    [--seed N] [--json]; `prep demo --list` lists them."""
    from prep.demos.cli import main as demo_main

    def linked_cards(name: str) -> list[str]:
        coll = obj.collection(strict=False)
        return [c.id for c in coll.cards_for_demo(name)]

    from prep.engine.storage import resolve_db_path

    sys.exit(demo_main(list(args), db=str(resolve_db_path(obj.db)), linked_cards=linked_cards))


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.pass_obj
def check(obj: Ctx, paths: tuple[Path, ...]) -> None:
    """Validate decks: the bundled ones, --questions, and any PATHs given.

    Errors are printed as FILE:LINE: message (all at once), exit 2."""
    from prep.engine.deck import load_collection

    coll = load_collection([*obj.questions, *paths], demo_names=demo_names())
    for error in coll.errors:
        click.echo(str(error), err=True)
    if coll.errors:
        sys.exit(EXIT_USAGE)
    kinds: dict[str, int] = {}
    for card in coll.cards:
        kinds[card.kind] = kinds.get(card.kind, 0) + 1
    linked = sum(1 for c in coll.cards if c.demos)
    by_kind = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    click.echo(f"ok: {len(coll.cards)} cards in {len(coll.decks)} deck(s) ({by_kind}); {linked} linked to demos")


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--since", metavar="DATE", help="Count reviews from this date (YYYY-MM-DD) on.")
@click.pass_obj
def stats(obj: Ctx, as_json: bool, since: str | None) -> None:
    """Progress: reviews, retention, due forecast, mastery per deck, streak, demos verified."""
    from prep.engine import stats as stats_mod
    from prep.engine.timeutil import to_utc, utcnow

    since_dt = None
    if since is not None:
        from datetime import datetime

        try:
            since_dt = to_utc(datetime.fromisoformat(since).astimezone())
        except ValueError:
            raise UsageError(f"--since {since!r} is not a date (expected YYYY-MM-DD)") from None
    coll = obj.collection(strict=False)
    with obj.store() as store:
        store.sync(coll.cards)
        result = stats_mod.compute(store, coll, utcnow(), since=since_dt)
    if as_json:
        import json

        click.echo(json.dumps(result, indent=2))
    else:
        click.echo(stats_mod.render(result))


_SETTING_TYPES = {
    "desired_retention": float,
    "new_per_day": int,
    "review_limit": int,
    "leech_threshold": int,
    "maximum_interval": int,
}


@main.command()
@click.argument("key", required=False)
@click.argument("value", required=False)
@click.pass_obj
def config(obj: Ctx, key: str | None, value: str | None) -> None:
    """Show settings, or set one: prep config new_per_day 10."""
    from dataclasses import replace

    with obj.store() as store:
        settings = store.settings()
        if key is None:
            for k, v in settings.to_dict().items():
                click.echo(f"{k} = {'default' if v is None else v}")
            return
        if key not in _SETTING_TYPES:
            raise UsageError(f"unknown setting {key!r} (settings: {', '.join(_SETTING_TYPES)})")
        if value is None:
            click.echo(f"{key} = {getattr(settings, key)}")
            return
        try:
            typed = _SETTING_TYPES[key](value)
            updated = replace(settings, **{key: typed}).validated()
        except ValueError as exc:
            raise UsageError(f"{key}: {exc}" if str(exc) else f"{key}: bad value {value!r}") from None
        store.save_settings(updated)
        click.echo(f"{key} = {typed}")


if __name__ == "__main__":
    main()
