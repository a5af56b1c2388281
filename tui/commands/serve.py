"""`prep serve`: the same app in a browser (textual-serve): open http://HOST:PORT and study."""

from __future__ import annotations

import click

from prep.tui.commands.common import (
    Ctx,
    UsageError,
)


@click.command("serve")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on (loopback: only this machine can open the page).",
)
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True, metavar="N")
@click.pass_obj
def serve(obj: Ctx, host: str, port: int) -> None:
    """The same app in a browser (textual-serve): open http://HOST:PORT and study."""
    import socket

    from prep.engine.store import resolve_db_path
    from prep.tui.serve import is_loopback
    from prep.tui.serve import serve as run_server

    with obj.store():  # a database that cannot open is one line here, not a blank page
        pass
    try:
        with socket.create_server((host, port)):
            pass
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    if not is_loopback(host):
        click.echo(
            f"prep: warning: listening on {host}: anyone who can reach this machine on port "
            f"{port} can study with (and change) your progress database",
            err=True,
        )
    db = str(resolve_db_path(obj.db).resolve())
    run_server(db=db, questions=obj.questions, host=host, port=port)
