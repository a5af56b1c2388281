"""The `prep` command line: its table of contents.

Every command lives in its own module under tui/commands/ and is imported only when it runs
(or its help is shown): click's documented lazy group. Adding a command is one line in
``COMMANDS`` (name -> "module:function") and one module; `tests/test_cli_commands.py` runs
every command's --help and holds `prep --help` to importing neither torch nor textual.

This module keeps what is around every command: the group and its options (--db,
--questions), and ``run``, the process boundary (one line and an exit code, never a traceback).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from pathlib import Path
from typing import Any

import click

from prep.tui.commands import common
from prep.tui.commands.common import (
    EXIT_INTERNAL,
    EXIT_USAGE,
    Ctx,
    UsageError,
    demo_names,
    line_mode_reason,
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


def run(argv: list[str] | None = None) -> None:
    """The `prep` command (the console script): `main` with a boundary around it. Whatever
    happens, the process ends with one line and an exit code, never a traceback: 130 on
    Ctrl-C, 2 when standard output is closed or cannot be written (a full disk), 70 on a bug
    of ours (PREP_DEBUG=1 shows its traceback)."""
    import errno

    pause_gc()  # until the first frame (the app) or the command's start (tui/startup.py)
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


if __name__ == "__main__":
    run()
