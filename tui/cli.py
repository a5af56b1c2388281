"""The `prep` command line.

Import weight matters: this module imports only click at the top. Each command imports
what it needs when it runs, so `prep --help`, `prep stats` and `prep check` never import
torch or textual.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from prep.demos.report import Report
    from prep.engine.scheduler import Settings
    from prep.engine.storage import Store

EXIT_USAGE = 2


class UsageError(click.ClickException):
    """A one-line error for bad input: printed as `prep: message`, exit code 2."""

    exit_code = EXIT_USAGE

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"prep: {self.format_message()}", err=True)


class PrepGroup(click.Group):
    """Any StoreError a command lets through (a read-only or busy database, a full disk) is a
    one-line `prep: ...` error with exit 2, not a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as exc:
            # only when storage was imported can exc be a StoreError (keeps --help light)
            storage = sys.modules.get("prep.engine.storage")
            if storage is not None and isinstance(exc, storage.StoreError):
                raise UsageError(str(exc)) from None
            raise


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

    def collection(self, *, strict: bool = True, store=None):  # noqa: ANN001 - a Store
        """The bundled decks plus --questions/PREP_QUESTIONS. With ``strict``, any deck error
        is printed as FILE:LINE: message and the command exits 2. With ``store``, through
        the deck cache in its database (only changed files are parsed; progress is synced
        only when the decks changed)."""
        if store is not None:
            from prep.engine import deckcache

            coll = deckcache.load(store, self.questions, demo_names=demo_names())
        else:
            from prep.engine.deck import load_collection

            coll = load_collection(self.questions, demo_names=demo_names())
        if coll.errors and not strict:
            click.echo(
                f"prep: warning: {len(coll.errors)} deck error(s) ignored; see `prep check`",
                err=True,
            )
        if coll.errors and strict:
            for error in coll.errors:
                click.echo(str(error), err=True)
            raise UsageError(
                f"{len(coll.errors)} error(s) in the decks; fix them (see `prep check`)"
            )
        return coll


def demo_names() -> list[str]:
    from prep.demos.registry import names

    return names()


def _questions_from_env() -> tuple[str, ...]:
    env = os.environ.get("PREP_QUESTIONS", "")
    return tuple(p for p in env.split(os.pathsep) if p)


@click.group(
    cls=PrepGroup,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option(
    "--db",
    metavar="PATH",
    envvar="PREP_DB",
    help="Progress database (env PREP_DB; default: user data dir).",
)
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
    """Review today's queue (the default command)."""
    if not plain and not (sys.stdin.isatty() and sys.stdout.isatty()):
        click.echo("prep: not a terminal; running the line-oriented session (--plain)", err=True)
        plain = True
    if not plain:
        from prep.tui.app import run

        sys.exit(run(db=obj.db, questions=obj.questions, deck=deck, new=new, limit=limit))
    from prep.engine.session import ReviewSession
    from prep.tui.plain import run_plain

    with obj.store() as store:
        coll = obj.collection(store=store)
        if deck is not None and deck not in coll.decks:
            raise UsageError(f"no deck named {deck!r} (decks: {', '.join(coll.decks)})")
        session = ReviewSession(store, coll, deck=deck, new_limit=new, limit=limit)
        sys.exit(run_plain(session, sys.stdin, sys.stdout))


@main.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_obj
def demo(obj: Ctx, args: tuple[str, ...]) -> None:
    """Run one demo: prep demo NAME [--device auto|cpu|cuda|mps] [--scale small|large]
    [--seed N] [--json]; `prep demo --list` lists them."""
    from prep.demos.cli import run as run_demo

    def linked_cards(name: str) -> list[str]:
        coll = obj.collection(strict=False)
        return [c.id for c in coll.cards_for_demo(name)]

    code, report = run_demo(list(args), linked_cards=linked_cards)
    if report is not None:
        _record(obj.db, report)
    sys.exit(code)


def _record(db: str | None, report: Report) -> None:
    """Record the run in the progress database; a failure here is only a warning (the demo's
    own verdict and exit code stand)."""
    from prep.engine.storage import Store, StoreError, resolve_db_path
    from prep.tui.runs import record_run

    try:
        with Store.open(db) as store:
            record_run(store, report)
    except StoreError as exc:
        click.echo(
            f"prep demo: warning: run not recorded in {resolve_db_path(db)}: {exc}", err=True
        )


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.pass_obj
def check(obj: Ctx, paths: tuple[Path, ...]) -> None:
    """Validate decks: the bundled ones, --questions, and any PATHs given.

    Errors are printed as FILE:LINE: message (all at once), exit 2."""
    from prep.engine.deck import load_collection
    from prep.engine.deckcache import gc_paused

    with gc_paused():  # every file parsed, as always: no cache here
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
    click.echo(
        f"ok: {len(coll.cards)} cards in {len(coll.decks)} deck(s) ({by_kind}); {linked} linked to demos"
    )


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option(
    "--since",
    metavar="DATE",
    help="Total reviews and true retention from this date (YYYY-MM-DD) on; the daily "
    "history, streak and forecast are unchanged.",
)
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
        except (ValueError, OverflowError):  # OverflowError: no UTC form (year 0 or 10000)
            raise UsageError(f"--since {since!r} is not a date (expected YYYY-MM-DD)") from None
    with obj.store() as store:
        coll = obj.collection(strict=False, store=store)
        coll.sync(store)
        result = stats_mod.compute(store, coll, utcnow(), since=since_dt)
    if as_json:
        import json

        click.echo(json.dumps(result, indent=2))
    else:
        click.echo(stats_mod.render(result))


def _minutes(text: str) -> tuple[float, ...]:
    """Learning steps as minutes, comma-separated: "1,10" (Anki's default is 1m 10m)."""
    return tuple(float(part) for part in text.replace(" ", "").split(",") if part)


_SETTING_TYPES = {
    "desired_retention": float,
    "new_per_day": int,
    "review_limit": int,
    "leech_threshold": int,
    "maximum_interval": int,
    "learning_steps_min": _minutes,
    "relearning_steps_min": _minutes,
}


@main.command()
@click.argument("key", required=False)
@click.argument("value", required=False)
@click.option("--reset", is_flag=True, help="Restore every setting to its default.")
@click.pass_obj
def config(obj: Ctx, key: str | None, value: str | None, reset: bool) -> None:
    """Show settings, or set one: prep config new_per_day 10.

    FSRS parameters: `prep config parameters` shows them, `prep config parameters default`
    goes back to fsrs's defaults, `prep config parameters "w0,w1,...,w20"` sets all 21
    (fit them to your own reviews with `prep optimize`)."""
    from dataclasses import replace

    with obj.store() as store:
        if reset:
            from prep.engine.scheduler import Settings

            store.save_settings(Settings())
            click.echo("settings reset to their defaults")
            return
        settings = store.settings()
        if key is None:
            for k, v in settings.to_dict().items():
                click.echo(f"{k} = {'default' if v is None else v}")
            return
        if key == "parameters":
            _config_parameters(store, settings, value)
            return
        if key not in _SETTING_TYPES:
            known = ", ".join([*_SETTING_TYPES, "parameters"])
            raise UsageError(f"unknown setting {key!r} (settings: {known})")
        if value is None:
            click.echo(f"{key} = {getattr(settings, key)}")
            return
        convert = _SETTING_TYPES[key]
        try:
            typed = convert(value)
        except ValueError:
            expected = {int: "a whole number", float: "a number"}.get(convert, "minutes like 1,10")
            raise UsageError(f"{key}: {value!r} is not {expected}") from None
        try:
            updated = replace(settings, **{key: typed}).validated()
        except ValueError as exc:
            message = str(exc) if str(exc).startswith(key) else f"{key}: {exc}"
            raise UsageError(message) from None
        store.save_settings(updated)
        click.echo(f"{key} = {typed}")


def _config_parameters(store: Store, settings: Settings, value: str | None) -> None:
    """`prep config parameters [default | "w0,w1,...,w20"]`."""
    from dataclasses import replace

    from prep.engine.optimize import current_parameters

    if value is None:
        shown = ", ".join(f"{w:.4f}" for w in current_parameters(settings))
        origin = "fsrs defaults" if settings.parameters is None else "your own"
        click.echo(f"parameters = {shown} ({origin})")
        return
    if value.strip().lower() in ("default", "defaults"):
        store.save_settings(replace(settings, parameters=None))
        click.echo("parameters = default (fsrs defaults)")
        return
    parts = value.replace(",", " ").split()
    weights = []
    for part in parts:
        try:
            weights.append(float(part))
        except ValueError:
            raise UsageError(f"parameters: {part!r} is not a number") from None
    try:
        updated = replace(settings, parameters=tuple(weights)).validated()
    except ValueError as exc:
        message = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())
        raise UsageError(f"parameters: {message}") from None
    store.save_settings(updated)
    click.echo(f"parameters = {', '.join(f'{w:.4f}' for w in weights)} (your own)")


_EXPORT_FORMATS = {".json": "json", ".csv": "csv", ".apkg": "apkg"}


@main.command("export")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "csv", "apkg"]),
    help="json, csv or apkg (default: from the file name's extension).",
)
@click.option("-o", "--output", metavar="FILE", required=True, help="The file to write.")
@click.option("--deck", metavar="D", help="apkg only: just this deck.")
@click.pass_obj
def export_cmd(obj: Ctx, fmt: str | None, output: str, deck: str | None) -> None:
    """Export your progress (json, csv) or the decks as an Anki package (apkg).

    \b
    json  one file: {"format": "prep-export", "version": 1, "exported_at",
          "settings", "cards": [...], "reviews": [...], "demo_runs": [...]}
    csv   FILE.csv is the review log, one row per review, with columns
            card_id, reviewed_at (UTC ISO-8601), rating (1 Again .. 4 Easy),
            duration_ms, prev_state (1 learning, 2 review, 3 relearning),
            prev, next (the card state before/after, JSON)
          beside it FILE.cards.csv holds the card states (id, deck, state, step,
          stability, difficulty, due, last_review, reps, lapses, leech,
          content_hash, changed, removed), FILE.demo_runs.csv the demo runs and
          FILE.settings.csv the settings (key, JSON value).
    apkg  the decks for Anki: one note per card (Front/Back), tags kept.

    `prep import FILE` reads a json or csv export back; every file is written
    whole or not at all.
    """
    from prep.engine.export import ExportError
    from prep.engine.timeutil import utcnow

    path = Path(output).expanduser()
    if fmt is None:
        fmt = _EXPORT_FORMATS.get(path.suffix.lower())
        if fmt is None:
            raise UsageError(
                f"{output}: give --format json, csv or apkg (or name the file .json/.csv/.apkg)"
            )
    if deck is not None and fmt != "apkg":
        raise UsageError("--deck only applies to --format apkg (progress exports hold everything)")
    try:
        if fmt == "apkg":
            from prep.engine.anki import write_apkg

            coll = obj.collection()
            if deck is not None and deck not in coll.decks:
                raise UsageError(f"no deck named {deck!r} (decks: {', '.join(coll.decks)})")
            notes = write_apkg(coll, path, deck=deck)
            click.echo(f"Wrote {path}: {notes} note(s) for Anki (File > Import).")
            return
        from prep.engine.export import export_csv, export_json

        with obj.store() as store:
            if fmt == "json":
                export_json(store, path, utcnow())
                written = [path]
            else:
                written = export_csv(store, path)
            n = store.count_reviews()
        click.echo(f"Wrote {', '.join(str(p) for p in written)}: {n} review(s).")
    except ExportError as exc:
        raise UsageError(str(exc)) from None


@main.command("import")
@click.argument("file", metavar="FILE")
@click.pass_obj
def import_cmd(obj: Ctx, file: str) -> None:
    """Import a json or csv export (from `prep export`) into this database.

    All or nothing: on a corrupt file or a conflict (a card with a different review
    history here) nothing changes. Importing the same file twice adds nothing twice."""
    from prep.engine.export import ExportError
    from prep.engine.importer import import_file

    with obj.store() as store:
        try:
            result = import_file(store, Path(file).expanduser())
        except ExportError as exc:
            raise UsageError(str(exc)) from None
    click.echo(f"Imported {file}: {result.summary()}.")


@main.command()
@click.option("--yes", "-y", is_flag=True, help="Save the new parameters without asking.")
@click.option("--dry-run", is_flag=True, help="Show the new parameters; never save.")
@click.pass_obj
def optimize(obj: Ctx, yes: bool, dry_run: bool) -> None:
    """Fit FSRS parameters to your own review log (fsrs's optimizer).

    Needs 512 reviews made a day or more after the card's previous review. Shows the
    old and new parameters and the estimated effect, then asks before saving
    (`prep config parameters default` goes back to the defaults)."""
    from dataclasses import replace

    from prep.engine import optimize as opt
    from prep.engine.timeutil import utcnow

    with obj.store() as store:
        settings = store.settings()
        logs = opt.review_logs(store.reviews())
        try:
            n = opt.check_enough(logs)
        except opt.OptimizeError as exc:
            raise UsageError(str(exc)) from None
        click.echo(f"Fitting FSRS parameters to {n} of your reviews...", err=True)
        result = opt.fit(store)
        click.echo(opt.render(result, settings, utcnow()))
        if not result.changed:
            click.echo("The fit gives the parameters you already have; nothing to save.")
            return
        if dry_run:
            click.echo("Not saved (--dry-run).")
            return
        save = yes
        if not yes:
            try:
                save = click.confirm("Save these parameters?", default=False)
            except click.Abort:
                save = False
        if save:
            store.save_settings(replace(settings, parameters=result.new))
            click.echo("Saved. `prep config parameters default` goes back to the defaults.")
        else:
            click.echo("Not saved.")


@main.command()
@click.option("--deck", metavar="D", help="Only this deck.")
@click.pass_obj
def cram(obj: Ctx, deck: str | None) -> None:
    """The 60-second bullets of each main card, for the way to the call."""
    from prep.engine.cram import UnknownDeck, cram_sheet, render

    coll = obj.collection(strict=False)
    try:
        sheet = cram_sheet(coll, deck)
    except UnknownDeck as exc:
        raise UsageError(str(exc)) from None
    click.echo(render(sheet))


@main.command()
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
    from prep.engine.mock import MockError, MockInterview
    from prep.tui.plain import run_mock_plain

    with obj.store() as store:
        coll = obj.collection(store=store)
        try:
            interview = MockInterview(store, coll, minutes=minutes, deck=deck, seed=seed)
        except MockError as exc:
            raise UsageError(str(exc)) from None
        if plain or not (sys.stdin.isatty() and sys.stdout.isatty()):
            sys.exit(run_mock_plain(interview, sys.stdin, sys.stdout))
        from prep.tui.screens.mock import run_mock

        sys.exit(run_mock(interview))


if __name__ == "__main__":
    main()
