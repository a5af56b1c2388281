"""The `prep` command line.

Import weight matters: this module imports only click at the top. Each command imports
what it needs when it runs, so `prep --help`, `prep stats` and `prep check` never import
torch or textual.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from collections.abc import Iterator

    from prep.demos.report import Report
    from prep.engine.decks.deck import Collection
    from prep.engine.store import Store
    from prep.engine.study.scheduler import Settings

EXIT_USAGE = 2
EXIT_INTERNAL = 70  # EX_SOFTWARE: a bug in prep, not bad input (1 means a demo check failed)


class UsageError(click.ClickException):
    """A one-line error for bad input: printed as `prep: message`, exit code 2."""

    exit_code = EXIT_USAGE

    def show(self, file: IO[Any] | None = None) -> None:
        from prep.engine.decks.deck import one_line_safe  # a name may hold a newline or an escape

        click.echo(f"prep: {one_line_safe(self.format_message())}", err=True)


class PrepGroup(click.Group):
    """Any StoreError a command lets through (a read-only or busy database, a full disk) is a
    one-line `prep: ...` error with exit 2, not a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as exc:
            # only when storage was imported can exc be a StoreError (keeps --help light)
            storage = sys.modules.get("prep.engine.store")
            if storage is not None and isinstance(exc, storage.StoreError):
                raise UsageError(str(exc)) from None
            raise


class Ctx:
    def __init__(self, db: str | None, questions: tuple[str, ...]) -> None:
        self.db = db
        self.questions = [Path(q) for q in questions]

    def store(self, *, reading: bool = False):
        """The progress database; ``reading``: the command only reads it (stats, export), so
        a read-only database or folder, or a hand-edited schema version, does not stop it."""
        from prep.engine.store import StoreError
        from prep.tui.upgrade import open_store

        try:  # an older database is upgraded first, with a line on stderr
            return open_store(self.db, reading=reading)
        except StoreError as exc:
            raise UsageError(str(exc)) from exc

    def collection(self, *, strict: bool = True, store=None):  # noqa: ANN001 - a Store
        """The bundled decks plus --questions/PREP_QUESTIONS. With ``strict``, any deck error
        is printed as FILE:LINE: message and the command exits 2. With ``store``, through
        the deck cache in its database (only changed files are parsed; progress is reconciled
        only when the decks changed)."""
        from prep.engine.study.present import count

        if store is not None:
            from prep.engine.decks import deckcache
            from prep.tui.upgrade import FillLine

            line = FillLine()  # a first open of a large collection shows how far it is
            try:
                coll = deckcache.load(store, self.questions, demo_names=demo_names(), progress=line)
            finally:
                line.close()
        else:
            from prep.engine.decks.deck import load_collection

            coll = load_collection(self.questions, demo_names=demo_names())
        for warning in coll.warnings:
            click.echo(f"prep: warning: {warning.file}: {warning.message}", err=True)
        if coll.errors and not strict:
            click.echo(
                f"prep: warning: {count(len(coll.errors), 'deck error')} ignored; see `prep check`",
                err=True,
            )
        if coll.errors and strict:
            for error in coll.errors:
                click.echo(str(error), err=True)
            raise UsageError(
                f"{count(len(coll.errors), 'error')} in the decks; fix them (see `prep check`)"
            )
        return coll

    @contextlib.contextmanager
    def cached_collection(self, *, strict: bool = True) -> Iterator[Collection]:
        """The decks through the deck cache, for the commands that read no progress (cram,
        the apkg export, the cards citing a demo): an unchanged collection is not parsed
        again. When the database cannot be opened (a --db that is a folder, a newer schema)
        every deck is parsed instead and the command still runs; a read-only one is read,
        and the decks parsed (deckcache.load)."""
        from prep.engine.store import StoreError
        from prep.tui.upgrade import open_store

        try:
            store = open_store(self.db, reading=True)
        except StoreError:
            yield self.collection(strict=strict)
            return
        with store:
            yield self.collection(strict=strict, store=store)


def _check_local_time() -> None:
    """Study days follow local time; a TZ the C library accepts but Python cannot use (an
    offset of a day or more, like TZ=UTC+25) is a one-line error here, not a crash later."""
    from datetime import datetime

    try:
        datetime.now().astimezone()
    except (ValueError, OverflowError, OSError) as exc:
        tz = os.environ.get("TZ")
        where = f"TZ={tz[:40]!r}" if tz is not None else "the local time zone"
        raise UsageError(f"{where} is not a usable time zone ({exc}); fix or unset it") from None
    import time

    from prep.engine.timeutil import clock_problem, utcnow

    try:
        time.time_ns()
        why = clock_problem(utcnow())
    except (OverflowError, OSError, ValueError) as exc:  # past 2262: no clock Python can read
        why = f"the system clock cannot be read ({exc}); fix the system clock"
    if why is not None:
        raise UsageError(why)


def demo_names() -> list[str]:
    from prep.demos.registry import names

    return names()


def line_mode_reason() -> str | None:
    """Why the full-screen app cannot run here (so the line mode runs instead), or None."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return "not a terminal"
    if os.environ.get("TERM", "") in ("dumb", "unknown"):
        return f"TERM={os.environ['TERM']} cannot draw the full-screen app"
    return None


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

    Run `prep` alone (or `prep quiz`) to open the terminal app on today's first card; Esc
    goes home, to the decks and what each would serve today.
    """
    _check_local_time()
    given = "--questions"
    if not questions:
        questions, given = _questions_from_env(), "PREP_QUESTIONS"
    for folder in questions:
        if not Path(folder).expanduser().exists():
            raise UsageError(f"{given} {folder}: no such folder or file (it names your own decks)")
    ctx.obj = Ctx(db, questions)
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
    """Review today's queue, starting on its first card (the default command)."""
    reason = None if plain else line_mode_reason()
    if reason is not None:
        _need_stdin()
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
    from prep.tui.plain import run_plain

    with obj.store() as store:
        coll = obj.collection(store=store)
        if deck is not None and deck not in coll.decks:
            raise UsageError(f"no deck named {deck!r} (decks: {', '.join(coll.decks)})")
        session = ReviewSession(store, coll, deck=deck, new_limit=new, limit=limit)
        _need_stdin()
        sys.exit(run_plain(session, sys.stdin, sys.stdout))


@main.command()
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on (loopback: only this machine can open the page).",
)
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True, metavar="N")
@click.option(
    "--max-sessions",
    type=click.IntRange(1, 64),
    default=4,
    show_default=True,
    metavar="N",
    help="At most N browser tabs (app processes) at once.",
)
@click.pass_obj
def serve(obj: Ctx, host: str, port: int, max_sessions: int) -> None:
    """The same app in a browser (textual-serve): open the address it prints (it carries a
    per-launch secret) and study."""
    from prep.engine.store import resolve_db_path
    from prep.tui.serve import is_loopback
    from prep.tui.serve import serve as run_server
    from prep.tui.webserver import ServeError

    with obj.store():  # a database that cannot open is one line here, not a blank page
        pass
    if not is_loopback(host):
        click.echo(
            f"prep: warning: listening on {host}: anyone who can reach this machine on port "
            f"{port} and has the address printed below can study with (and change) your "
            "progress database",
            err=True,
        )
    db = str(resolve_db_path(obj.db).resolve())
    try:
        run_server(
            db=db,
            questions=obj.questions,
            host=host,
            port=port,
            max_sessions=max_sessions,
            say=lambda line: click.echo(line),
        )
    except ServeError as exc:
        raise UsageError(str(exc)) from None


@main.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_obj
def demo(obj: Ctx, args: tuple[str, ...]) -> None:
    """Run one demo: prep demo NAME [--device auto|cpu|cuda|mps] [--scale small|large]
    [--seed N] [--json] [--model PATH_OR_NAME]; `prep demo --list [--json]` lists them."""
    from prep.demos.cli import run as run_demo

    with contextlib.ExitStack() as stack:
        loaded: list[Collection] = []  # read once (`--list` asks for every demo's cards)

        def linked_cards(name: str) -> list[str]:
            if not loaded:
                loaded.append(stack.enter_context(obj.cached_collection(strict=False)))
            return loaded[0].ids_for_demo(name)  # from an index: no card is built

        code, report = run_demo(list(args), linked_cards=linked_cards)
    if report is not None:
        _record(obj.db, report)
    sys.exit(code)


def _record(db: str | None, report: Report) -> None:
    """Record the run in the progress database; a failure here is only a warning (the demo's
    own verdict and exit code stand)."""
    from prep.engine.store import StoreError, resolve_db_path
    from prep.tui.runs import record_run
    from prep.tui.upgrade import open_store

    try:
        with open_store(db) as store:
            record_run(store, report)
    except StoreError as exc:
        click.echo(
            f"prep demo: warning: run not recorded in {resolve_db_path(db)}: {exc}", err=True
        )


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--rubrics", is_flag=True, help="List every card that has no usable rubric.")
@click.pass_obj
def check(obj: Ctx, paths: tuple[Path, ...], rubrics: bool) -> None:
    """Validate decks: the bundled ones, --questions, and any PATHs given.

    Errors are printed as FILE:LINE: message (all at once), exit 2."""
    from prep.engine.decks.deck import load_collection
    from prep.engine.decks.deckcache import gc_paused
    from prep.engine.study.present import count

    with gc_paused():  # every file parsed, as always: no cache here
        coll = load_collection([*obj.questions, *paths], demo_names=demo_names())
    for warning in coll.warnings:
        click.echo(f"warning: {warning.file}: {warning.message}", err=True)
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
    from prep.tui.grade_cmd import rubric_notes

    for line in rubric_notes(coll.cards, every=rubrics):
        click.echo(line)


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
    from prep.engine.study import stats as stats_mod
    from prep.engine.timeutil import to_utc, utcnow

    since_dt = None
    if since is not None:
        from datetime import datetime

        try:
            since_dt = to_utc(datetime.fromisoformat(since).astimezone())
        except (ValueError, OverflowError):  # OverflowError: no UTC form (year 0 or 10000)
            raise UsageError(f"--since {since!r} is not a date (expected YYYY-MM-DD)") from None
    with obj.store(reading=True) as store:
        # through the deck cache; a read-only database falls back to parsing the decks
        coll = obj.collection(strict=False, store=store)
        if not store.read_only:
            coll.reconcile(store)
        result = stats_mod.compute(store, coll, utcnow(), since=since_dt, known_demos=demo_names())
    if as_json:
        import json

        click.echo(json.dumps(result, indent=2))
    else:
        click.echo(stats_mod.render(result))


def _minutes(text: str) -> tuple[float, ...]:
    """Learning steps as minutes, comma-separated: "1,10" (Anki's default is 1m 10m)."""
    return tuple(float(part) for part in text.replace(" ", "").split(",") if part)


def _none_or(convert):
    """A setting that `none` clears (interview_date, plan_decks)."""

    def read(text: str):
        return None if text.strip().lower() in ("none", "all", "") else convert(text.strip())

    return read


def _deck_names(text: str) -> tuple[str, ...]:
    return tuple(part for part in text.replace(" ", "").split(",") if part)


_SETTING_TYPES = {
    "desired_retention": float,
    "new_per_day": int,
    "review_limit": int,
    "leech_threshold": int,
    "maximum_interval": int,
    "learn_ahead_min": int,
    "learning_steps_min": _minutes,
    "relearning_steps_min": _minutes,
    # the interview plan (engine/study/plan.py); `none` clears the date (and the deck list)
    "interview_date": _none_or(str),
    "plan_decks": _none_or(_deck_names),
    "plan_level": str,
}


@main.command(context_settings={"ignore_unknown_options": True})  # `new_per_day -1` is a value
@click.argument("key", required=False)
@click.argument("value", required=False)
@click.option("--reset", is_flag=True, help="Restore every setting to its default.")
@click.pass_obj
def config(obj: Ctx, key: str | None, value: str | None, reset: bool) -> None:
    """Show settings, or set one: prep config new_per_day 10.

    FSRS parameters: `prep config parameters` shows them, `prep config parameters default`
    goes back to fsrs's defaults, `prep config parameters "w0,w1,...,w20"` sets all 21
    (fit them to your own reviews with `prep optimize`)."""

    with obj.store() as store:
        if reset:
            from prep.engine.study.scheduler import Settings

            store.save_settings(Settings())
            click.echo("settings reset to their defaults")
            return
        settings = store.settings()
        if key is None:
            cleared = {"interview_date": "none", "plan_decks": "all"}  # what None means there
            for k, v in settings.to_dict().items():
                v = ",".join(v) if k == "plan_decks" and v is not None else v
                click.echo(f"{k} = {cleared.get(k, 'default') if v is None else v}")
            return
        if key == "parameters":
            _config_parameters(store, settings, value)
            return
        if key == "sync_dir":  # a setting of this machine: never synced
            if value is not None:
                store.set_meta("sync_dir", str(Path(value).expanduser().resolve()))
            click.echo(f"sync_dir = {store.get_meta('sync_dir') or 'none'}")
            return
        if key not in _SETTING_TYPES:
            known = ", ".join([*_SETTING_TYPES, "parameters"])
            raise UsageError(f"unknown setting {key!r} (settings: {known})")
        if value is None:
            shown = getattr(settings, key)
            if key == "plan_decks":
                shown = "all" if shown is None else ",".join(shown)
            elif key == "interview_date" and shown is None:
                shown = "none"
            click.echo(f"{key} = {shown}")
            return
        convert = _SETTING_TYPES[key]
        try:
            typed = convert(value)
        except ValueError:
            expected = {int: "a whole number", float: "a number"}.get(convert, "minutes like 1,10")
            raise UsageError(f"{key}: {value!r} is not {expected}") from None
        if key == "plan_decks" and typed is not None:
            decks = obj.collection(strict=False, store=store).decks
            unknown = [d for d in typed if d not in decks]
            if unknown:
                raise UsageError(
                    f"plan_decks: no deck named {', '.join(map(repr, unknown))} "
                    f"(decks: {', '.join(decks) or 'none'})"
                )
        try:
            # this one setting, against the settings saved now (another prep may have changed
            # others since they were read)
            store.update_settings(**{key: typed})
        except ValueError as exc:
            message = str(exc) if str(exc).startswith(key) else f"{key}: {exc}"
            raise UsageError(message) from None
        if key == "interview_date":
            _say_plan(obj, store, store.settings())
            return
        if key == "plan_decks":
            typed = "all" if typed is None else ",".join(typed)
        click.echo(f"{key} = {typed}")


def _say_plan(obj: Ctx, store: Store, settings: Settings) -> None:
    """What `prep config interview_date ...` did: the date, and the plan in one line."""
    from prep.engine.study.plan import plan_day
    from prep.engine.timeutil import utcnow

    if settings.interview_date is None:
        click.echo("interview_date = none (no plan: scheduling is plain FSRS, nothing lost)")
        return
    day = plan_day(store, obj.collection(strict=False, store=store), utcnow(), settings)
    if day is None:
        click.echo(f"interview_date = {settings.interview_date} (past: scheduling is plain FSRS)")
        return
    click.echo(f"interview_date = {settings.interview_date}")
    click.echo(f"{day.plan.header()}. {day.line()}")


def _config_parameters(store: Store, settings: Settings, value: str | None) -> None:
    """`prep config parameters [default | "w0,w1,...,w20"]`."""
    from dataclasses import replace

    from prep.engine.study.optimize import current_parameters

    if value is None:
        shown = ", ".join(f"{w:.4f}" for w in current_parameters(settings))
        origin = "fsrs defaults" if settings.parameters is None else "your own"
        click.echo(f"parameters = {shown} ({origin})")
        return
    if value.strip().lower() in ("default", "defaults"):
        store.update_settings(parameters=None)
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
    try:
        store.update_settings(parameters=updated.parameters)
    except ValueError as exc:  # with the settings saved now (changed since they were read)
        raise UsageError(f"parameters: {exc}") from None
    click.echo(f"parameters = {', '.join(f'{w:.4f}' for w in weights)} (your own)")


_EXPORT_FORMATS = {".json": "json", ".csv": "csv", ".apkg": "apkg"}


def _refuse_database_target(obj: Ctx, path: Path, fmt: str) -> None:
    """An export never writes over the progress database or the files SQLite keeps beside it."""
    from prep.engine.store import resolve_db_path
    from prep.engine.transfer.dbfiles import database_target
    from prep.engine.transfer.export import csv_paths

    targets = list(csv_paths(path).values()) if fmt == "csv" else [path]
    hit = database_target(targets, resolve_db_path(obj.db))
    if hit is not None:
        target, kept = hit
        raise UsageError(
            f"-o {target}: that is the progress database's own file ({kept}); exporting over "
            "it would replace your progress. Name another file"
        )


@main.command("export")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "csv", "apkg"]),
    help="json, csv or apkg (default: from the file name's extension).",
)
@click.option(
    "-o", "--output", metavar="FILE", required=True, help="The file to write (- for stdout)."
)
@click.option("--deck", metavar="D", help="apkg only: just this deck.")
@click.pass_obj
def export_cmd(obj: Ctx, fmt: str | None, output: str, deck: str | None) -> None:
    """Export your progress (json, csv) or the decks as an Anki package (apkg).

    \b
    json  one file: {"format": "prep-export", "version": 1, "exported_at",
          "settings", "cards": [...], "reviews": [...], "demo_runs": [...],
          "marks": [...]}
    csv   FILE.csv is the review log, one row per review, with columns
            card_id, reviewed_at (UTC ISO-8601), rating (1 Again .. 4 Easy),
            duration_ms, prev_state (1 learning, 2 review, 3 relearning),
            prev, next (the card state before/after, JSON)
          beside it FILE.cards.csv holds the card states (id, deck, state, step,
          stability, difficulty, due, last_review, reps, lapses, leech,
          content_hash, changed, removed), FILE.demo_runs.csv the demo runs,
          FILE.marks.csv the suspended, buried and flagged cards (card_id,
          suspended, buried_until, flagged) and FILE.settings.csv the settings
          (key, JSON value).
    apkg  the decks for Anki: one note per card (Front/Back), tags kept.

    `prep import FILE` reads a json or csv export back; every file is written
    whole or not at all. `-o -` writes json (or apkg) to standard output; a
    device or FIFO (/dev/null, a pipe) is written directly, never replaced;
    a symlink is followed; an existing file keeps its mode and hard links.
    """
    from prep.engine.study.present import count
    from prep.engine.timeutil import utcnow
    from prep.engine.transfer.atomic import is_stdout
    from prep.engine.transfer.export import ExportError

    to_stdout = is_stdout(output)  # "-" or /dev/stdout: the report goes to stderr
    path = Path(output).expanduser()
    if fmt is None:
        # `-o -` alone is json, as the help and README say (stdout has no extension to go by)
        fmt = "json" if to_stdout else _EXPORT_FORMATS.get(path.suffix.lower())
        if fmt is None:
            raise UsageError(
                f"{output}: give --format json, csv or apkg (or name the file .json/.csv/.apkg)"
            )
    if deck is not None and fmt != "apkg":
        raise UsageError("--deck only applies to --format apkg (progress exports hold everything)")
    if to_stdout and fmt == "csv":
        raise UsageError(
            f"-o {output}: a csv export is five files; give a file name (or --format json)"
        )
    if to_stdout and fmt == "apkg" and sys.stdout.isatty():
        raise UsageError(
            f"-o {output}: an apkg is binary; redirect it to a file, or give a file name"
        )
    report = (lambda text: click.echo(text, err=True)) if to_stdout else click.echo
    shown = "standard output" if to_stdout else str(path)
    if not to_stdout:
        _refuse_database_target(obj, path, fmt)
    try:
        if fmt == "apkg":
            from prep.engine.transfer.anki import write_apkg

            with obj.cached_collection() as coll:
                if deck is not None and deck not in coll.decks:
                    raise UsageError(f"no deck named {deck!r} (decks: {', '.join(coll.decks)})")
                notes = write_apkg(coll, path, deck=deck)
            report(f"Wrote {shown}: {count(notes, 'note')} for Anki (File > Import).")
            return
        from prep.engine.transfer.export import export_csv, export_json

        with obj.store(reading=True) as store:
            if fmt == "json":
                export_json(store, path, utcnow())
                written = [shown]
            else:
                written = [str(p) for p in export_csv(store, path)]
            damaged = list(store.damaged_reviews)
            n = store.count_reviews() - len(damaged)
        report(f"Wrote {', '.join(written)}: {count(n, 'review')}.")
        _say_damaged(damaged, "exported")
    except ExportError as exc:
        raise UsageError(str(exc)) from None


def _say_damaged(damaged: list, what: str) -> None:
    """Name the review rows that could not be read and were left out (at most five)."""
    from prep.engine.study.present import count as count_text

    if not damaged:
        return
    click.echo(
        f"prep: warning: {count_text(len(damaged), 'damaged review')} left out (the rest "
        f"{what}): "
        + "; ".join(str(d) for d in damaged[:5])
        + (f"; ... and {len(damaged) - 5:,} more" if len(damaged) > 5 else ""),
        err=True,
    )


@main.command("import")
@click.argument("file", metavar="FILE")
@click.pass_obj
def import_cmd(obj: Ctx, file: str) -> None:
    """Import a json or csv export (from `prep export`) into this database.

    All or nothing: on a corrupt file or a conflicting review nothing changes. A card whose
    history went on both here and in the file is merged as `prep sync` merges; a card marked
    differently here keeps this database's mark. Importing the same file twice adds nothing
    twice. The database is backed up first."""
    from prep.engine.store import backup
    from prep.engine.transfer.export import ExportError
    from prep.engine.transfer.importer import import_file

    # an export that names a merged-away card's id lands on the card that kept it (the
    # decks are read, not synced: a refused import changes nothing)
    aliases = obj.collection(strict=False).aliases()
    with obj.store() as store:
        try:
            backup.make(store, "import")
            result = import_file(store, Path(file).expanduser(), aliases)
        except (ExportError, backup.BackupError) as exc:
            raise UsageError(str(exc)) from None
    click.echo(f"Imported {file}: {result.summary()}.")


@main.command("marks")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_obj
def marks_cmd(obj: Ctx, as_json: bool) -> None:
    """List the suspended, buried and flagged cards (the review screen's @, - and f):
    id, deck, marks and the prompt's first line. `prep unmark CARD_ID...` clears them."""
    from prep.engine.study.marks import marked_cards
    from prep.engine.study.present import count, shorten
    from prep.engine.timeutil import utcnow

    with obj.store(reading=True) as store:
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


@main.command()
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


class _ProgressLine:
    """Progress of long work on stderr: one line redrawn in place on a terminal (at most five
    times a second), else a line at every tenth, so a log or a pipe shows it too."""

    def __init__(self, label: str) -> None:
        import time

        self.label = label
        self.clock = time.monotonic
        self.started = self.clock()
        self.drawn_at = -1.0
        self.shown = -1  # the last tenth printed (not a terminal)
        self.tty = sys.stderr is not None and sys.stderr.isatty()

    def text(self, fraction: float) -> str:
        from datetime import timedelta

        from prep.engine.study.present import human_interval

        elapsed = self.clock() - self.started
        line = f"{self.label}: {100 * fraction:3.0f}%  {human_interval(timedelta(seconds=elapsed))}"
        if 0.02 < fraction < 1:
            left = elapsed * (1 - fraction) / fraction
            line += f", about {human_interval(timedelta(seconds=left))} left"
        return line

    def __call__(self, fraction: float) -> None:
        if self.tty:
            now = self.clock()
            if now - self.drawn_at >= 0.2 or fraction >= 1:
                self.drawn_at = now
                click.echo("\r\x1b[2K" + self.text(fraction), err=True, nl=False)
            return
        tenth = int(fraction * 10)
        if tenth > self.shown:
            self.shown = tenth
            click.echo(self.text(fraction), err=True)

    def done(self) -> None:
        if self.tty and self.drawn_at >= 0:
            click.echo("", err=True)


@main.command()
@click.option("--yes", "-y", is_flag=True, help="Save the new parameters without asking.")
@click.option("--dry-run", is_flag=True, help="Show the new parameters; never save.")
@click.pass_obj
def optimize(obj: Ctx, yes: bool, dry_run: bool) -> None:
    """Fit FSRS parameters to your own review log (fsrs's optimizer).

    Needs 512 reviews made a day or more after the card's previous review. Shows the
    old and new parameters and the estimated effect, then asks before saving
    (`prep config parameters default` goes back to the defaults)."""

    from prep.engine.study import optimize as opt
    from prep.engine.timeutil import utcnow

    with obj.store() as store:
        settings = store.settings()
        damaged: list = []
        logs = opt.review_logs(store.reviews(damaged=damaged))
        _say_damaged(damaged, "are fitted")
        try:
            n = opt.check_enough(logs)
        except opt.OptimizeError as exc:
            raise UsageError(str(exc)) from None
        click.echo(f"Fitting FSRS parameters to {n} of your reviews...", err=True)
        meter = _ProgressLine("Fitting")
        result = opt.fit(store, progress=meter, damaged=damaged)
        meter.done()
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
            # only the parameters, against the settings saved now: a `prep config` made
            # during the fit or at the prompt stays
            try:
                store.update_settings(parameters=result.new)
            except ValueError as exc:
                raise UsageError(f"not saved: {exc}") from None
            click.echo("Saved. `prep config parameters default` goes back to the defaults.")
        else:
            click.echo("Not saved.")


@main.command()
@click.option("--deck", metavar="D", help="Only this deck.")
@click.pass_obj
def cram(obj: Ctx, deck: str | None) -> None:
    """The 60-second bullets of each main card, for the way to the call."""
    from prep.engine.store import StoreError
    from prep.engine.study.cram import UnknownDeck, cram_sheet, render, weakest_first
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
    from prep.engine.study.mock import MockError, MockInterview
    from prep.tui.plain import run_mock_plain

    with obj.store() as store:
        coll = obj.collection(store=store)
        try:
            interview = MockInterview(store, coll, minutes=minutes, deck=deck, seed=seed)
        except MockError as exc:
            raise UsageError(str(exc)) from None
        reason = None if plain else line_mode_reason()
        if reason is not None:
            _need_stdin()
            click.echo(f"prep: {reason}; running the line-oriented mock (--plain)", err=True)
        if plain or reason is not None:
            _need_stdin()
            sys.exit(run_mock_plain(interview, sys.stdin, sys.stdout))
        from prep.tui.screens.mock import run_mock

        sys.exit(run_mock(interview))


_stdin_closed = False


def _need_stdin() -> None:
    """The line modes read the answers from stdin: a closed one is a one-line error."""
    if _stdin_closed:
        raise UsageError("standard input is closed; the line mode reads your answers from it")


def _prepare_streams() -> bool:
    """Make the standard streams safe to use; False when standard output is closed.

    A closed stdin reads as empty input (like ``< /dev/null``) for the commands that do not
    need it; an output encoding that cannot show a character (an ASCII-only locale) shows
    ``?`` instead of failing."""
    global _stdin_closed
    if sys.stdin is None:
        _stdin_closed = True
        sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - for the whole run
    for stream in (sys.stdout, sys.stderr):
        if stream is not None and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")
    return sys.stdout is not None


def _silence_stdout() -> None:
    """After a failed write to stdout, make the final flush at exit a no-op (no second
    error, no 'Exception ignored' traceback)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def _say(message: str) -> None:
    if sys.stderr is not None:
        with contextlib.suppress(OSError, ValueError):
            print(f"prep: {message}", file=sys.stderr, flush=True)


from prep.tui.grade_cmd import grade as _grade  # noqa: E402 - registered after main exists

main.add_command(_grade)


def run(argv: list[str] | None = None) -> None:
    """The `prep` command (the console script): `main` with a boundary around it. Whatever
    happens, the process ends with one line and an exit code, never a traceback: 130 on
    Ctrl-C, 2 when standard output is closed or cannot be written (a full disk), 70 on a bug
    of ours (PREP_DEBUG=1 shows its traceback)."""
    import errno

    if not _prepare_streams():
        _say("standard output is closed; nothing can be shown")
        sys.exit(EXIT_USAGE)
    try:
        code = main.main(args=argv, prog_name="prep", standalone_mode=False)
        code = code if isinstance(code, int) else 0
    except click.exceptions.Abort as exc:
        if isinstance(exc.__cause__, KeyboardInterrupt):
            _say("interrupted")
            code = 130
        else:
            _say("aborted")
            code = 1
    except KeyboardInterrupt:
        _say("interrupted")
        code = 130
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.UsageError as exc:  # click's own (a bad option): one line, not a usage block
        from prep.engine.decks.deck import one_line_safe

        where = exc.ctx.command_path if exc.ctx is not None else "prep"
        _say(f"{one_line_safe(exc.format_message())} (see `{where} --help`)")
        code = exc.exit_code
    except click.ClickException as exc:
        exc.show()
        code = exc.exit_code
    except OSError as exc:
        if exc.errno == errno.EPIPE:  # the reader went away (`prep stats | head -1`)
            _silence_stdout()
            sys.exit(1)
        where = exc.filename if exc.filename else "cannot write the output"
        _say(f"{where}: {exc.strerror or exc}")
        _silence_stdout()
        code = EXIT_USAGE
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except Exception as exc:  # a bug of ours: one line, the traceback on request
        if os.environ.get("PREP_DEBUG"):
            raise
        detail = " ".join(str(exc).split())[:200]
        _say(
            f"internal error ({type(exc).__name__}: {detail}); nothing is lost. "
            "PREP_DEBUG=1 shows the traceback for a bug report"
        )
        code = EXIT_INTERNAL
    try:
        sys.stdout.flush()
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            _say(f"cannot write the output: {exc.strerror or exc}")
            code = EXIT_USAGE
        _silence_stdout()
    except ValueError:  # closed by the command
        pass
    sys.exit(code)


# `prep sync` and `prep backup` live in their own module
from prep.tui import sync_cli  # noqa: E402, F401

if __name__ == "__main__":
    run()
