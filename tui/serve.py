"""`prep serve`: the same Textual app in a browser, through textual-serve.

textual-serve runs a small web server; each browser tab that opens the page starts one app
process (``python -m prep.tui.serve --app ...``) whose screen is drawn in the page by
xterm.js. The server binds to loopback (127.0.0.1) unless told otherwise: the page gives full
use of your progress database, so exposing it is a choice the user makes with ``--host``.
Either way the page and its websocket need the per-launch secret in the address the command
prints, and a websocket from another site's page is refused (tui/webserver.py).
"""

from __future__ import annotations

import argparse
import ipaddress
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000


def is_loopback(host: str) -> bool:
    """True when listening on ``host`` listens on this machine's loopback only: a loopback
    address (127.0.0.0/8, ::1), localhost in any case, or a name every address of which is
    loopback (this machine's own name often maps to 127.0.1.1). Decided by the addresses, not
    the spelling: `--host LOCALHOST` was taken as a network address (a false warning, and the
    loopback Host check against DNS rebinding turned off)."""
    import socket

    name = host.lower().removesuffix(".")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return False  # (listening on it then fails, in one line)
    addresses = {str(info[4][0]).partition("%")[0] for info in found}
    return bool(addresses) and all(ipaddress.ip_address(a).is_loopback for a in addresses)


def public_url(host: str, port: int) -> str:
    """The address the page itself uses for its websocket: a wildcard host (0.0.0.0, ::) is
    named by this machine's host name, so a browser elsewhere can reach it."""
    if host in ("0.0.0.0", "::", ""):
        import socket

        host = socket.gethostname()
    if ":" in host:
        host = f"[{host}]"  # an IPv6 address in a URL
    return f"http://{host}:{port}"


def app_command(
    *, db: str, questions: Sequence[Path] = (), deck: str | None = None, new: int | None = None
) -> str:
    """The shell command textual-serve runs for each browser tab (it takes a string)."""
    argv = [sys.executable, "-m", "prep.tui.serve", "--app", "--db", db]
    for folder in questions:
        argv += ["--questions", str(Path(folder).resolve())]
    if deck is not None:
        argv += ["--deck", deck]
    if new is not None:
        argv += ["--new", str(new)]
    return shlex.join(argv)


def serve(
    *,
    db: str,
    questions: Sequence[Path] = (),
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    deck: str | None = None,
    new: int | None = None,
    max_sessions: int | None = None,
    say: Callable[[str], None] = print,
    listening: Callable[[], None] | None = None,
) -> None:
    """Serve the app on http://host:port until Ctrl+C (blocking). The page and its websocket
    need the per-launch secret in the address printed; a failure to listen raises
    ``prep.tui.webserver.ServeError``."""
    from prep.tui.webserver import DEFAULT_MAX_SESSIONS, GuardedServer

    command = app_command(db=db, questions=questions, deck=deck, new=new)
    server = GuardedServer(
        command,
        host=host,
        port=port,
        local=is_loopback(host),
        max_sessions=max_sessions or DEFAULT_MAX_SESSIONS,
        say=say,
        listening=listening,
    )
    server.serve(url=public_url(host, port) + "/")


def _app_main(argv: Sequence[str]) -> int:
    """One browser tab's app (textual-serve sets TEXTUAL_DRIVER to its web driver)."""
    parser = argparse.ArgumentParser(prog="prep serve --app")
    parser.add_argument("--app", action="store_true")
    parser.add_argument("--db", required=True)
    parser.add_argument("--questions", action="append", default=[])
    parser.add_argument("--deck")
    parser.add_argument("--new", type=int)
    args = parser.parse_args(argv)
    from prep.tui.app import run

    return run(
        db=args.db,
        questions=[Path(q) for q in args.questions],
        deck=args.deck,
        new=args.new,
        limit=None,
    )


if __name__ == "__main__":
    sys.exit(_app_main(sys.argv[1:]))
