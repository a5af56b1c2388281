"""`prep serve`: the same app in a browser (textual-serve): open the address it prints (it carries a"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from prep.tui.commands.common import (
    Ctx,
    UsageError,
)

if TYPE_CHECKING:
    pass


@click.command("serve")
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

    if not host.strip():  # `--host "$HOST"` with HOST unset: "" would listen on every network
        raise UsageError(
            "--host: an empty address would listen on every network; give one "
            "(127.0.0.1, the default, is this machine only)"
        )
    with obj.store(create=True):  # a database that cannot open is one line here, not a blank page
        pass

    def warn() -> None:  # once listening: a host it cannot listen on is one line, the error
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
            listening=warn,
        )
    except ServeError as exc:
        raise UsageError(str(exc)) from None
