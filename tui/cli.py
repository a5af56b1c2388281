"""The `prep` command line: its table of contents.

Every command lives in its own module under tui/commands/ and is imported only when it runs
(or its help is shown): click's documented lazy group. Adding a command is one line in
``COMMANDS`` (name -> "module:function") and one module; `tests/test_cli_commands.py` runs
every command's --help and holds `prep --help` to importing neither torch nor textual.

This module keeps what is around every command: the group and its options (--db,
--questions), and ``run``: click inside the process boundary (entry.guarded: one line and an
exit code, never a traceback). The console script is tui/entry.py's ``run``, which opens the
app on today's first card without click when that is all it is asked to do.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import click

from prep.engine.paths import expand_user
from prep.tui.commands import common
from prep.tui.commands.common import (
    EXIT_INTERNAL,
    EXIT_USAGE,
    NAMED_PATH,
    Ctx,
    UsageError,
    demo_names,
    line_mode_reason,
    not_stdin,
)
from prep.tui.entry import (
    guarded,
    local_time_problem,
    questions_from_env,
    replace_unshowable,
    say,
)
from prep.tui.startup import pause_gc, resume_gc

# name -> "module:function" of the click command (`prep --help` lists them by name)
COMMANDS = {
    "quiz": "prep.tui.commands.quiz:quiz",
    "mock": "prep.tui.commands.mock:mock",
    "cram": "prep.tui.commands.cram:cram",
    "demo": "prep.tui.commands.demo:demo",
    "stats": "prep.tui.commands.stats:stats",
    "marks": "prep.tui.commands.marks:marks_cmd",
    "unmark": "prep.tui.commands.unmark:unmark",
    "check": "prep.tui.commands.check:check",
    "config": "prep.tui.commands.config:config",
    "optimize": "prep.tui.commands.optimize:optimize",
    "export": "prep.tui.commands.export:export_cmd",
    "grade": "prep.tui.commands.grade:grade",
    "import": "prep.tui.commands.import_:import_cmd",
    "serve": "prep.tui.commands.serve:serve",
    "sync": "prep.tui.commands.sync:sync_cmd",
    "backup": "prep.tui.commands.sync:backup_cmd",
}

__all__ = [
    "COMMANDS",
    "EXIT_INTERNAL",
    "EXIT_USAGE",
    "Ctx",
    "UsageError",
    "demo_names",
    "line_mode_reason",
    "main",
    "run",
]


class PrepGroup(click.Group):
    """click's lazy group over ``COMMANDS``; and any StoreError a command lets through (a
    read-only or busy database, a full disk) is a one-line `prep: ...` error with exit 2, not
    a traceback."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, name = target.split(":")
        command = getattr(importlib.import_module(module), name)
        if not isinstance(command, click.Command):
            raise TypeError(f"{target} is not a click command")
        return command

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as exc:
            # only when storage was imported can exc be a StoreError (keeps --help light)
            storage = sys.modules.get("prep.engine.store")
            if storage is not None and isinstance(exc, storage.StoreError):
                raise UsageError(str(exc)) from None
            raise


def _check_local_time() -> None:
    """Study days follow local time: a clock or time zone prep cannot use is a one-line
    error here (entry.local_time_problem), not a crash later."""
    why = local_time_problem()
    if why is not None:
        raise UsageError(why)


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
    type=NAMED_PATH,
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
    if db == "":  # `--db "$UNSET"`: never the default database in its place
        raise UsageError("--db '': an empty path; name the database file, or leave --db out")
    if db == "-":  # (named as given: the option, or the environment variable)
        source = ctx.get_parameter_source("db")
        given = "PREP_DB" if source is click.core.ParameterSource.ENVIRONMENT else "--db"
        raise not_stdin(given, "the progress database is a file prep opens and writes")
    if db is not None and os.path.normpath(db) == "-":  # ./-: the file named -, whose Path is
        db = os.path.abspath(db)  # Path("-"): its messages name it whole, never "-: ..."
    given = "--questions"
    if not questions:
        questions, given = questions_from_env(), "PREP_QUESTIONS"
    for folder in questions:
        if folder == "-":
            raise not_stdin(
                given,
                "it names a folder or file of your own decks",
                "`prep check -` checks a deck on it; ",
            )
        if not expand_user(folder).exists():
            raise UsageError(f"{given} {folder}: no such folder or file (it names your own decks)")
    ctx.obj = Ctx(db, questions)
    if ctx.invoked_subcommand not in (None, "quiz"):
        resume_gc()  # only the terminal app keeps it paused, until its first frame
    if ctx.invoked_subcommand is None:
        quiz = ctx.command.get_command(ctx, "quiz")  # type: ignore[attr-defined]
        ctx.invoke(quiz)


def _prepare_streams() -> bool:
    """Make the standard streams safe to use; False when standard output is closed.

    A closed stdin reads as empty input (like ``< /dev/null``) for the commands that do not
    need it; an output encoding that cannot show a character (an ASCII-only locale) shows
    ``?`` instead of failing."""
    if sys.stdin is None:
        common.stdin_closed = True
        sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - for the whole run
    replace_unshowable()
    return sys.stdout is not None


def _click_code(exc: Exception) -> int | None:
    """The exit code of an exception click raises on purpose, having said what it means
    (one line, not a usage block); None for any other exception."""
    if isinstance(exc, click.exceptions.Abort):
        if isinstance(exc.__cause__, KeyboardInterrupt):
            say("interrupted")
            return 130
        say("aborted")
        return 1
    if isinstance(exc, click.exceptions.Exit):
        return exc.exit_code
    if isinstance(exc, click.UsageError):  # click's own (a bad option)
        from prep.engine.decks.deck import one_line_safe

        where = exc.ctx.command_path if exc.ctx is not None else "prep"
        say(f"{one_line_safe(exc.format_message())} (see `{where} --help`)")
        return exc.exit_code
    if isinstance(exc, click.ClickException):
        exc.show()
        return exc.exit_code
    return None


def run(argv: list[str] | None = None) -> None:
    """Every `prep` command through click, with the boundary around it (entry.guarded):
    whatever happens, the process ends with one line and an exit code, never a traceback.
    The console script is entry.run, which opens the app itself when that is all it is
    asked to do and comes here for everything else."""
    pause_gc()  # until the first frame (the app) or the command's start (tui/startup.py)
    if not _prepare_streams():
        say("standard output is closed; nothing can be shown")
        sys.exit(EXIT_USAGE)
    guarded(lambda: main.main(args=argv, prog_name="prep", standalone_mode=False), _click_code)


if __name__ == "__main__":
    run()
