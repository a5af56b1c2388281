"""The web server behind `prep serve`: textual-serve's, with its doors locked.

textual-serve's own server answers any page that asks: a script on any web site (or one
reached through DNS rebinding) could open the websocket, read the screen and rate cards. This
server (like Jupyter's) takes, on every request,

- a per-launch secret: the page is served only to the address `prep serve` printed (its
  ``?token=``), and the websocket's path carries the same secret;
- the page's own origin: a websocket whose ``Origin`` is not the ``Host`` it was sent to is
  refused, whatever the host;
- a loopback ``Host`` when it listens on loopback (a rebinding name such as evil.example is
  refused even before the secret is checked);

serves a page that asks nothing of another host (textual-serve's own template fetches its font
from fonts.googleapis.com: tui/serve_page.html takes it from the static folder, and a
Content-Security-Policy lets the browser fetch from this server alone), and bounds what one
client can cost: terminal sizes are clamped (a resize to 100000x100000 would
grow the app process by gigabytes), at most ``max_sessions`` app processes run at once, messages
are small, and a malformed request is ignored or logged in one line, never as a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import os
import secrets
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp_jinja2
import jinja2
from aiohttp import WSMsgType, web
from textual_serve.app_service import AppService
from textual_serve.server import Server

log = logging.getLogger("prep.serve")

PAGE = Path(__file__).with_name("serve_page.html")

MAX_COLUMNS = 400  # wider than a 4K screen at 10 px a cell
MAX_ROWS = 150
MIN_SIZE = 10
MAX_MESSAGE = 64 * 1024  # one websocket message (a paste into the terminal fits)
DEFAULT_MAX_SESSIONS = 4
LOOPBACK_NAMES = ("localhost", "localhost.")


class ServeError(Exception):
    """prep serve cannot start (the port is taken, the host cannot be bound): one line."""


def clamp_size(width: object, height: object) -> tuple[int, int] | None:
    """A terminal size within bounds, or None when the values are not whole numbers."""
    if not _is_int(width) or not _is_int(height):
        return None
    return (
        min(max(int(width), MIN_SIZE), MAX_COLUMNS),  # type: ignore[call-overload]
        min(max(int(height), MIN_SIZE), MAX_ROWS),  # type: ignore[call-overload]
    )


def _is_int(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, str) and value.strip().isdigit() and len(value) < 12


def host_is_loopback(host_header: str) -> bool:
    """True when a Host header (name[:port]) names this machine's loopback."""
    import ipaddress

    name = _host_name(host_header)
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _host_name(host_header: str) -> str:
    """The name of a Host header (name[:port]), lower case, without a final dot; "" when it
    is malformed (`[bad`: urlsplit raises, which answered 500 and logged an error a request)."""
    try:
        return (urlsplit(f"//{host_header}").hostname or "").removesuffix(".")
    except ValueError:
        return ""


def same_origin(origin: str | None, host_header: str) -> bool:
    """True when a websocket's Origin is the page's own origin: the Host it was sent to."""
    if not origin or not host_header:
        return False
    try:
        parts = urlsplit(origin)
    except ValueError:  # (a malformed Origin: `http://[bad`)
        return False
    return parts.scheme in ("http", "https") and parts.netloc.lower() == host_header.lower()


def page_policy(host: str, ws_scheme: str) -> str:
    """The page's Content-Security-Policy: everything from this server, nothing from another
    host (the page's inline script and style are textual-serve's; its websocket is named in
    full, as CSP level 2 browsers do not count ws: as 'self')."""
    return (
        "default-src 'none'; script-src 'self' 'unsafe-inline'; "
        "style-src 'self' 'unsafe-inline'; font-src 'self'; img-src 'self' data:; "
        f"connect-src 'self' {ws_scheme}://{host}; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    )


class _OneLine(logging.Formatter):
    """A log record as one line: an exception is named, its traceback never printed."""

    def format(self, record: logging.LogRecord) -> str:
        text = f"prep serve: {record.getMessage()}"
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            text += f" ({type(error).__name__}: {error})"
        return " ".join(text.split("\n"))[:500]


class GuardedServer(Server):
    """textual-serve's Server with a secret, an origin check, clamped sizes and a session cap."""

    def __init__(
        self,
        command: str,
        *,
        host: str,
        port: int,
        local: bool,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        token: str | None = None,
        say: Callable[[str], None] = print,
        listening: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(command, host=host, port=port, title="prep")
        # listening on loopback: the Host must be loopback too (or the name it listens on,
        # one that maps to loopback)
        self.local = local
        self.max_sessions = max_sessions
        self.token = token or secrets.token_urlsafe(32)
        self.sessions = 0
        self.say = say
        self.listening = listening  # called once the socket is bound, before the address

    # -- the checks ----------------------------------------------------------------------------

    def _token_ok(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.token.encode())

    def _own_name(self, host_header: str) -> bool:
        """The Host names what this server was told to listen on (a name mapping to loopback)."""
        name = _host_name(host_header)
        return bool(name) and name == _host_name(self.host)

    def _refuse(self, request: web.Request, *, websocket: bool) -> web.Response | None:
        """Why this request is refused (a 403), or None when it may go on."""
        host = request.headers.get("Host", "")
        if self.local and not (host_is_loopback(host) or self._own_name(host)):
            return web.Response(status=403, text="prep serve: this page answers on loopback only")
        if websocket:
            if not self._token_ok(request.match_info.get("token")):
                return web.Response(status=403, text="prep serve: wrong secret")
            if not same_origin(request.headers.get("Origin"), host):
                return web.Response(status=403, text="prep serve: another site's page")
        elif not self._token_ok(request.query.get("token")):
            return web.Response(
                status=403,
                text="prep serve: open the address `prep serve` printed (it carries a secret)",
            )
        return None

    # -- the web app ---------------------------------------------------------------------------

    async def _make_app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_MESSAGE)
        aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(PAGE.parent))
        app.add_routes(
            [
                web.get("/", self.handle_index, name="index"),
                web.get("/ws/{token}", self.handle_websocket, name="websocket"),
                web.static("/static", self.statics_path, show_index=False, name="static"),
            ]
        )
        return app

    async def handle_index(self, request: web.Request) -> web.StreamResponse:  # type: ignore[override]
        refused = self._refuse(request, websocket=False)
        if refused is not None:
            return refused
        scheme = "wss" if request.secure else "ws"
        font_size = 16
        with contextlib.suppress(ValueError):
            font_size = min(max(int(request.query.get("fontsize", "16")), 6), 48)
        context: dict[str, Any] = {
            "font_size": font_size,
            # the page's own host: its websocket then always has the page's own origin
            "app_websocket_url": f"{scheme}://{request.host}/ws/{self.token}",
            "config": {"static": {"url": "/static/"}},
            "application": {"name": self.title},
        }
        response = aiohttp_jinja2.render_template(PAGE.name, request, context)
        response.headers["Cache-Control"] = "no-store"  # the page holds the secret
        response.headers["Content-Security-Policy"] = page_policy(request.host, scheme)
        response.headers["Referrer-Policy"] = "no-referrer"
        return response

    async def handle_websocket(self, request: web.Request) -> web.StreamResponse:  # type: ignore[override]
        refused = self._refuse(request, websocket=True)
        if refused is not None:
            return refused
        websocket = web.WebSocketResponse(heartbeat=15, max_msg_size=MAX_MESSAGE)
        await websocket.prepare(request)
        if self.sessions >= self.max_sessions:
            await websocket.send_bytes(
                f"prep serve: {self.max_sessions} sessions are open already (the limit, "
                "--max-sessions); close a tab and reload this one.\r\n".encode()
            )
            await websocket.close()
            return websocket
        size = clamp_size(request.query.get("width", "80"), request.query.get("height", "24"))
        width, height = size or (80, 24)
        self.sessions += 1
        app_service: AppService | None = None
        try:
            app_service = AppService(
                self.command,
                write_bytes=websocket.send_bytes,
                write_str=websocket.send_str,
                close=websocket.close,  # type: ignore[arg-type]  # (its bool result is unused)
                download_manager=self.download_manager,
                debug=False,
            )
            await app_service.start(width, height)
            await self._process_messages(websocket, app_service)
        except asyncio.CancelledError:
            await websocket.close()
        except Exception as error:  # one line: a session's end is not the server's
            log.warning("a session ended: %s: %s", type(error).__name__, error)
        finally:
            try:
                if app_service is not None:
                    await app_service.stop()
            finally:
                self.sessions -= 1
        return websocket

    async def _process_messages(
        self, websocket: web.WebSocketResponse, app_service: AppService
    ) -> None:
        """The browser's messages; anything malformed is ignored, sizes are clamped."""
        async for message in websocket:
            if message.type != WSMsgType.TEXT:
                continue
            try:
                envelope = json.loads(message.data)
            except ValueError:
                continue
            if not isinstance(envelope, list) or not envelope or not isinstance(envelope[0], str):
                continue
            kind, data = envelope[0], (envelope[1] if len(envelope) > 1 else None)
            if kind == "stdin" and isinstance(data, str):
                await app_service.send_bytes(data.encode("utf-8", "replace"))
            elif kind == "resize" and isinstance(data, dict):
                size = clamp_size(data.get("width"), data.get("height"))
                if size is not None:
                    await app_service.set_terminal_size(*size)
            elif kind == "ping" and isinstance(data, str | int | float):
                await websocket.send_json(["pong", data])
            elif kind == "blur":
                await app_service.blur()
            elif kind == "focus":
                await app_service.focus()

    # -- running -------------------------------------------------------------------------------

    def initialize_logging(self) -> None:
        handler = logging.StreamHandler()
        handler.setFormatter(_OneLine())
        for name in ("prep.serve", "textual-serve", "aiohttp"):
            logger = logging.getLogger(name)
            logger.handlers[:] = [handler]
            logger.propagate = False
            logger.setLevel(logging.WARNING)
        logging.getLogger("prep.serve").setLevel(logging.INFO)

    def serve(self, debug: bool = False, *, url: str = "") -> None:  # type: ignore[override]
        """Listen until Ctrl+C or SIGTERM; a failure to listen raises ServeError."""
        self.initialize_logging()
        asyncio.run(self._serve(url))

    async def _serve(self, url: str) -> None:
        runner = web.AppRunner(await self._make_app(), handle_signals=False, access_log=None)
        await runner.setup()
        try:
            await web.TCPSite(runner, self.host, self.port).start()
        except OSError as exc:
            await runner.cleanup()
            errno = exc.errno if isinstance(exc.errno, int) and exc.errno > 0 else None
            reason = os.strerror(errno) if errno else (exc.strerror or str(exc))
            raise ServeError(f"cannot listen on {self.host}:{self.port}: {reason}") from None
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        if self.listening is not None:
            self.listening()
        self.say(f"prep serve: open {url}?token={self.token}")
        self.say("prep serve: the address carries this launch's secret; Ctrl+C stops")
        try:
            await stop.wait()
        finally:
            await runner.cleanup()
