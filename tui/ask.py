"""A yes/no question on standard input that never reads more than an answer's line.

click.confirm reads a whole line with ``input()``: `prep optimize < /dev/zero` (or any endless
stream without a newline) was read until the memory ran out. Here one line is read, at most
``MAX_ANSWER`` characters; a longer one, or (when standard input is not a terminal, where nobody
can type again) an answer that is not yes or no, is one line, exit code 2. On a terminal a wrong
answer asks again, as click does; the end of input is "no".
Ctrl-C cancels the command: it is not an answer (it read as "no", exit 0, so a shell or a
script saw a cancelled `config --reset` succeed); the interrupt goes on to the boundary
(entry.guarded), which says `prep: interrupted` and exits 130, as Ctrl-C at any other moment
of a command does; nothing was saved.
"""

from __future__ import annotations

import sys

import click

from prep.engine.textsafe import quoted
from prep.tui.commands.common import UsageError  # (exit 2, one line)

MAX_ANSWER = 1000  # characters: "yes" with room to spare, never a whole stream
YES, NO = ("y", "yes"), ("n", "no")


def confirm(question: str, default: bool = False) -> bool:
    """``question [y/N]:`` answered on standard input (y, yes, n, no; Enter: ``default``)."""
    stdin = sys.stdin
    if stdin is None or stdin.closed:
        click.echo("")
        return False
    tty = stdin.isatty()
    while True:
        click.echo(f"{question} {'[Y/n]' if default else '[y/N]'}: ", nl=False)
        try:
            line = stdin.readline(MAX_ANSWER + 1)
        except KeyboardInterrupt:
            click.echo("")  # (the prompt's line ended; then `prep: interrupted`, exit 130)
            raise
        except UnicodeDecodeError:
            raise UsageError(
                "standard input: the answer is not UTF-8 text (expected y or n)"
            ) from None
        if line == "":  # end of input: no
            click.echo("")
            return False
        if len(line.rstrip("\r\n")) > MAX_ANSWER:
            click.echo("")
            raise UsageError(
                f"standard input: an answer longer than {MAX_ANSWER:,} characters "
                "(expected y or n); nothing saved"
            )
        answer = line.strip().lower()
        if not tty:
            click.echo(line.rstrip("\r\n"))  # (what was read, as a terminal would show it)
        if answer == "":
            return default
        if answer in YES or answer in NO:
            return answer in YES
        if not tty:
            raise UsageError(f"standard input: {quoted(answer[:40])} is not y or n; nothing saved")
        click.echo("Error: answer y or n", err=True)
