"""What every `prep` command shares: the context (database, decks), the one-line usage error,
the exit codes and the few checks of the process's surroundings.

Import weight matters: only click at the top (`prep --help` imports this module and no command).
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import click

# (the commands import these from here; the console script's quick way in shares them)
from prep.tui.entry import EXIT_INTERNAL, EXIT_USAGE, line_mode_reason  # noqa: F401

if TYPE_CHECKING:
    from collections.abc import Iterator

    from prep.engine.decks.collection import CachedCollection
    from prep.engine.store import Store


class UsageError(click.ClickException):
    """A one-line error for bad input: printed as `prep: message`, exit code 2."""

    exit_code = EXIT_USAGE

    def show(self, file: IO[Any] | None = None) -> None:
        from prep.engine.decks.deck import one_line_safe  # a name may hold a newline or an escape

        click.echo(f"prep: {one_line_safe(self.format_message())}", err=True)


class NamedPath(click.Path):
    """A path the user names: an empty one (`prep sync "$DIR"` with DIR unset) is refused in
    one line, where it would otherwise mean the current folder."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and value == "":
            self.fail("an empty path; name the file or folder (is a shell variable unset?)")
        return super().convert(value, param, ctx)


NAMED_PATH = NamedPath()  # (str values, as given)


# The commands that may create the progress database where none is yet (a new installation, or
# a --db naming a new file), each once its own input is checked; every other command opens
# through Ctx.store without ``create`` and refuses a missing database in one line (exit 2,
# nothing made): it only reads progress or changes what is saved, so a missing file is a typo
# (`--db ~/prep.bd`) or a database moved away, and an empty one made there would hide that.
# tests/test_missing_db.py walks every command at a missing --db against this table.
CREATES = {
    "quiz": "studying is how progress starts (also `prep` alone, the app)",
    "mock": "a mock interview's grades are ratings, as the quiz's are",
    "serve": "the quiz in a browser",
    "import": "a good export puts its progress in a new database (a new machine's first step)",
    "sync": "an existing sync folder brings the other machines' progress to a new one (not "
    "one whose journal files would all be refused, or all wait for a file not there yet)",
    "config": "a valid setting, set before the first review (no value: shows the defaults)",
    "demo": "a run that finished is recorded (stats' demos verified); a refused one makes none",
}
# Never create one: stats, marks, export, cram, check, sync --status, backup (and --list,
# --restore), unmark, optimize, config --reset, grade, and any command added without a line
# here.


class Ctx:
    def __init__(self, db: str | None, questions: tuple[str, ...]) -> None:
        self.db = db
        self.questions = [Path(q) for q in questions]

    def store(self, *, reading: bool = False, empty_ok: bool = False, create: bool = False):
        """The progress database; ``reading``: the command only reads it (stats, export), so
        a read-only database or folder, or a hand-edited schema version, does not stop it.
        ``create``: the command may create a database that does not exist yet (only those in
        CREATES, once their input is checked); without it a missing one is one line, exit 2.

        ``empty_ok`` (a reading command that can show nothing: stats, marks): on a new installation, where the default database does not exist
        yet, the command shows an empty one (in memory: nothing is created) with a line on
        stderr. A --db or PREP_DB naming a missing file is still refused (likely a typo)."""
        from prep.engine.store import Store, StoreError
        from prep.tui.upgrade import open_store

        try:  # an older database is upgraded first, with a line on stderr
            return open_store(self.db, reading=reading, create=create and not reading)
        except StoreError as exc:
            if reading and empty_ok and exc.kind == "missing" and self.db is None:
                from prep.engine.store import resolve_db_path

                click.echo(
                    f"prep: nothing studied yet ({resolve_db_path(None)} does not exist; "
                    "`prep` starts the quiz and creates it)",
                    err=True,
                )
                store = Store.memory()
                store.read_only = True  # nothing to reconcile or sync into
                return store
            raise UsageError(str(exc)) from exc

    def missing(self) -> bool:
        """Whether the database the command names does not exist yet (a command that may
        create one checks its input first, so a refused input makes no file)."""
        from prep.engine.store import resolve_db_path

        return not resolve_db_path(self.db).exists()

    @contextlib.contextmanager
    def staged_store(self) -> Iterator[tuple[Store, bool]]:
        """(store, made) for a command that fills a new database in one go (import): where
        none exists yet, the store is a new file beside it under a hidden name, put in place
        when the block ends without an error (a hard link: never over a database another prep
        made meanwhile) and removed when it fails, so a refused file leaves no database.
        ``made``: the database is new (nothing to back up). Else the database itself."""
        import os

        from prep.engine.store import resolve_db_path

        target = resolve_db_path(self.db)
        if not self.missing() or target.is_symlink():  # (a dangling link: made through it)
            with self.store(create=True) as store:
                yield store, False
            return
        stage = target.with_name(f".{target.name}.new-{os.getpid()}")
        made = [p for p in (target.parent, *target.parent.parents) if not p.exists()]
        done = False
        try:
            with Ctx(str(stage), ()).store(create=True) as store:
                yield store, True
            # closed: SQLite moved the log into the file and removed it (the last connection
            # does); a log left behind would not travel with the file linked in place
            if os.path.exists(f"{stage}-wal") and os.path.getsize(f"{stage}-wal") > 0:
                raise UsageError(f"{target}: the new database could not be finished; try again")
            try:
                try:
                    os.link(stage, target)
                except FileExistsError:
                    raise
                except OSError:  # a file system without hard links: a rename, if still free
                    if target.exists():
                        raise FileExistsError(target) from None
                    os.replace(stage, target)
            except FileExistsError:
                raise UsageError(
                    f"{target}: another prep created this database meanwhile; nothing "
                    "imported, run the command again"
                ) from None
            except OSError as exc:
                raise UsageError(f"{target}: cannot create it ({exc.strerror or exc})") from None
            done = True
        finally:
            for suffix in ("", "-wal", "-shm", "-journal"):
                with contextlib.suppress(OSError):
                    os.unlink(f"{stage}{suffix}")
            for folder in [] if done else made:  # (the folders the open made, innermost first)
                with contextlib.suppress(OSError):
                    folder.rmdir()  # (only an empty one)

    def collection(self, *, strict: bool = True, store: Store | None = None) -> CachedCollection:
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
                # FillLine reads a Fill as UpgradeLine reads an Upgrade (done, elapsed, fraction)
                coll = deckcache.load(
                    store,
                    self.questions,
                    demo_names=demo_names(),
                    progress=line,  # type: ignore[arg-type]
                )
            finally:
                line.close()
        else:
            from prep.engine.decks.deckcache import load_collection

            coll = load_collection(self.questions, demo_names=demo_names())
        from prep.engine.decks.deck import one_line_safe  # (a file's name: escaped)

        for warning in coll.warnings:
            click.echo(one_line_safe(f"prep: warning: {warning.file}: {warning.message}"), err=True)
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
    def cached_collection(self, *, strict: bool = True) -> Iterator[CachedCollection]:
        """The decks through the deck cache, for the commands that read no progress (cram,
        the apkg export, the cards citing a demo): an unchanged collection is not parsed
        again. When the database cannot be opened (a --db that is a folder, a newer schema)
        every deck is parsed instead and the command still runs; a read-only one is read,
        through a cache private to the connection (deckcache.load)."""
        from prep.engine.store import StoreError
        from prep.tui.upgrade import open_store

        try:
            store = open_store(self.db, reading=True)
        except StoreError:
            yield self.collection(strict=strict)
            return
        with store:
            yield self.collection(strict=strict, store=store)


def demo_names() -> list[str]:
    from prep.demos.registry import names

    return names()


# set by cli.run when the process started without a standard input (read as empty input)
stdin_closed = False


def not_stdin(given: str, what: str, also: str = "", *, a_path: bool = True) -> UsageError:
    """The one line for ``-`` where prep reads no standard input (grade, import and check
    read it): what the value names instead, and how to name a file or folder called -
    (``a_path``: only where the value is a path; a backup's name is not)."""
    hint = f"{also}a file or folder named - is ./-" if a_path else also.removesuffix("; ")
    return UsageError(f"{given} -: {what}, not standard input" + (f" ({hint})" if hint else ""))


def piped_stdin(command: str, what: str, example: str) -> IO[bytes]:
    """Standard input for ``command -`` (`prep check -`, `prep import -`), which reads
    ``what`` piped in: one line when it is closed, or a terminal (never a wait for a file
    typed by hand; ``example`` shows the pipe)."""
    if stdin_closed:
        raise UsageError(f"standard input is closed; `{command}` reads {what} from it")
    if sys.stdin.isatty():
        raise UsageError(
            f"standard input is a terminal; `{command}` reads {what} piped in ({example}), "
            "or name the file"
        )
    return sys.stdin.buffer


def need_stdin() -> None:
    """The line modes read the answers from stdin: a closed one is a one-line error."""
    if stdin_closed:
        raise UsageError("standard input is closed; the line mode reads your answers from it")


def say_damaged(damaged: list, what: str) -> None:
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
