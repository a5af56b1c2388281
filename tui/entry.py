"""The `prep` console script: the terminal app's quick way in, and the process boundary.

`prep` alone, or `prep quiz` with only its plain options (``--db``, ``--questions``, ``--deck``,
``--new``, ``--limit``), in a terminal, opens the app without importing click (~7 ms of the
first card's ~60 ms beyond a minimal Textual app, issue 26): this module reads those few
arguments itself. Anything else, or anything it is not sure of (``--help``, ``--plain``, another
command, a value that looks like an option, a number click would read differently, a missing
decks folder, an unusable clock, not a terminal), goes to click's command line (tui/cli.py)
untouched, so every command, its help and every error message are click's, exactly as before.

``guarded`` is the boundary around both: whatever happens, the process ends with one line and
an exit code, never a traceback (tests/test_cli_boundary.py).

Import weight: the standard library and tui/startup.py (the collector's pause) only.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from typing import NoReturn

from prep.tui.startup import pause_gc

EXIT_USAGE = 2
EXIT_INTERNAL = 70  # EX_SOFTWARE: a bug in prep, not bad input (1 means a demo check failed)

# the options `prep` and `prep quiz` take that this module reads (each with one value)
_GLOBAL = ("--db", "--questions")
_QUIZ = ("--deck", "--new", "--limit")


def default_quiz(args: list[str]) -> dict[str, object] | None:
    """The app's arguments (db, questions, deck, new, limit) when ``args`` only open the
    quiz with plain options, read as click reads them; None for anything else (click then
    reads ``args``: another command, help, a bad or unusual value, an option twice)."""
    given: dict[str, str] = {}
    questions: list[str] = []
    allowed: tuple[str, ...] = _GLOBAL
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "quiz" and allowed is _GLOBAL:
            allowed = _QUIZ
            continue
        name, eq, value = arg.partition("=")
        if name not in allowed:
            return None
        if not eq:
            if i == len(args):
                return None
            value = args[i]
            i += 1
        if not value or value.startswith("-"):
            return None  # (click would take it as the value; rare: let click say it)
        if name == "--questions":
            questions.append(value)
        elif name in given:
            return None
        else:
            given[name] = value
    numbers: dict[str, int | None] = {}
    for name, least in (("--new", 0), ("--limit", 1)):
        text = given.get(name)
        if text is not None and not (text.isascii() and text.isdigit() and int(text) >= least):
            return None  # (click's own message for a bad number)
        numbers[name] = None if text is None else int(text)
    return {
        "db": given.get("--db") or os.environ.get("PREP_DB") or None,
        "questions": questions,
        "deck": given.get("--deck"),
        "new": numbers["--new"],
        "limit": numbers["--limit"],
    }


def questions_from_env() -> tuple[str, ...]:
    env = os.environ.get("PREP_QUESTIONS", "")
    return tuple(p for p in env.split(os.pathsep) if p)


def local_time_problem() -> str | None:
    """Why prep cannot tell the time or the day here, or None. Study days follow local time;
    a TZ the C library accepts but Python cannot use (an offset of a day or more, like
    TZ=UTC+25) is a one-line error at start, not a crash later."""
    from datetime import datetime

    try:
        datetime.now().astimezone()
    except (ValueError, OverflowError, OSError) as exc:
        from prep.engine.textsafe import quoted

        tz = os.environ.get("TZ")
        where = f"TZ={quoted(tz[:40])}" if tz is not None else "the local time zone"
        return f"{where} is not a usable time zone ({exc}); fix or unset it"
    import time

    from prep.engine.timeutil import clock_problem, utcnow

    try:
        time.time_ns()
        return clock_problem(utcnow())
    except (OverflowError, OSError, ValueError) as exc:  # past 2262: no clock Python can read
        return f"the system clock cannot be read ({exc}); fix the system clock"


def line_mode_reason() -> str | None:
    """Why the full-screen app cannot run here (so the line mode runs instead), or None."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return "not a terminal"
    if os.environ.get("TERM", "") in ("dumb", "unknown"):
        return f"TERM={os.environ['TERM']} cannot draw the full-screen app"
    return None


def replace_unshowable() -> None:
    """An output encoding that cannot show a character (an ASCII-only locale) shows ``?``
    instead of failing."""
    for stream in (sys.stdout, sys.stderr):
        if stream is not None and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")


def say(message: str) -> None:
    """One line on stderr; control characters written as escapes (an error quotes paths and
    exception text, which may hold an escape sequence meant for the terminal)."""
    if sys.stderr is not None:
        from prep.engine.decks.deck import one_line_safe

        with contextlib.suppress(OSError, ValueError):
            print(f"prep: {one_line_safe(message)}", file=sys.stderr, flush=True)


def silence_stdout() -> None:
    """After a failed write to stdout, make the final flush at exit a no-op (no second
    error, no 'Exception ignored' traceback)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def guarded(
    call: Callable[[], object], translate: Callable[[Exception], int | None] | None = None
) -> NoReturn:
    """Run ``call`` and end the process with one line and an exit code, never a traceback:
    130 on Ctrl-C, 2 when standard output cannot be written (a full disk), 70 on a bug of
    ours (PREP_DEBUG=1 shows its traceback). ``translate``: the exit code of an exception
    the caller's framework raises on purpose (click's), having said what it means; None for
    the others."""
    import errno

    try:
        code = call()
        code = code if isinstance(code, int) else 0
    except KeyboardInterrupt:
        say("interrupted")
        code = 130
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except OSError as exc:
        if exc.errno == errno.EPIPE:  # the reader went away (`prep stats | head -1`)
            silence_stdout()
            sys.exit(1)
        where = exc.filename if exc.filename else "cannot write the output"
        say(f"{where}: {exc.strerror or exc}")
        silence_stdout()
        code = EXIT_USAGE
    except Exception as exc:
        known = None if translate is None else translate(exc)
        if known is not None:
            code = known
        else:  # a bug of ours: one line, the traceback on request
            if os.environ.get("PREP_DEBUG"):
                raise
            detail = " ".join(str(exc).split())[:200]
            say(
                f"internal error ({type(exc).__name__}: {detail}); nothing is lost. "
                "PREP_DEBUG=1 shows the traceback for a bug report"
            )
            code = EXIT_INTERNAL
    try:
        sys.stdout.flush()
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            say(f"cannot write the output: {exc.strerror or exc}")
            code = EXIT_USAGE
        silence_stdout()
    except ValueError:  # closed by the command
        pass
    sys.exit(code)


def _app_now(args: list[str]) -> dict[str, object] | None:
    """The app's arguments when it can open straight away (see the module's docstring)."""
    quiz = default_quiz(args)
    if quiz is None or sys.stdin is None or sys.stdout is None or line_mode_reason():
        return None
    if any(k.startswith("_") and k.endswith("_COMPLETE") for k in os.environ):
        return None  # click's shell completion (_PREP_COMPLETE=bash_source prep): click answers
    from pathlib import Path

    given = quiz["questions"] or questions_from_env()
    folders = [Path(q) for q in given]  # type: ignore[attr-defined]
    if not all(f.expanduser().exists() for f in folders) or local_time_problem() is not None:
        return None  # click's command line says what is wrong, as it always has
    quiz["questions"] = folders
    return quiz


def run(argv: list[str] | None = None) -> NoReturn:
    """The `prep` command (the console script)."""
    pause_gc()  # until the first frame (the app) or the command's start (tui/startup.py)
    try:
        quiz = _app_now(sys.argv[1:] if argv is None else list(argv))
    except Exception:  # (whatever it is, click's command line meets it again and says so)
        quiz = None
    if quiz is None:
        from prep.tui.cli import run as click_run

        click_run(argv)
    replace_unshowable()

    def app() -> int:
        from prep.tui.app import run as run_app

        return run_app(review_first=True, **quiz)  # type: ignore[arg-type]

    guarded(app)


if __name__ == "__main__":
    run()
