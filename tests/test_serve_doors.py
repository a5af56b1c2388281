"""`prep serve`'s doors, against the real command: the per-launch secret, the page's own origin,
a loopback Host, clamped sizes, the session cap, malformed requests, a port already taken.

A hostile page's script is played by aiohttp's client sending what a browser would send for it
(its Origin, the Host it resolved); the app processes are the real ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from prep.tui.webserver import MAX_COLUMNS, MAX_ROWS, clamp_size, host_is_loopback, same_origin
from tests.test_serve import free_port, prep_executable


class Served:
    def __init__(self, proc: subprocess.Popen, port: int, url: str, log: Path) -> None:
        self.proc, self.port, self.url, self.log = proc, port, url, log
        self.token = url.split("token=", 1)[1]
        self.base = f"http://127.0.0.1:{port}"

    def ws_url(self, token: str | None = None) -> str:
        return f"ws://127.0.0.1:{self.port}/ws/{token or self.token}?width=80&height=24"

    def output(self) -> str:
        return self.log.read_text()

    def app_processes(self) -> list[int]:
        """Every process under the server (each tab: a shell and its python)."""
        found, frontier = [], [self.proc.pid]
        while frontier:
            pid = frontier.pop()
            for task in Path(f"/proc/{pid}/task").glob("*"):
                with contextlib.suppress(OSError):
                    kids = [int(k) for k in (task / "children").read_text().split()]
                    found += kids
                    frontier += kids
        return found

    def app_rss_mb(self) -> float:
        total = 0
        for pid in self.app_processes():
            with contextlib.suppress(OSError):
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        return total / 1024


def start_serve(tmp_path: Path, decks: Path, *extra: str) -> Served:
    port = free_port()
    log = tmp_path / "serve.log"
    proc = subprocess.Popen(
        [*prep_executable(), "--db", str(tmp_path / "prep.db"), "--questions", str(decks)]
        + ["serve", "--port", str(port), *extra],
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        env={**os.environ, "PREP_THEME": "textual-dark"},
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        match = re.search(r"open (http://\S+)", log.read_text())
        if match:
            return Served(proc, port, match.group(1), log)
        if proc.poll() is not None:
            raise AssertionError(f"prep serve exited: {log.read_text()}")
        time.sleep(0.05)
    proc.kill()
    raise AssertionError(f"prep serve printed no address: {log.read_text()}")


@pytest.fixture
def served(tmp_path: Path, small_deck_dir: Path) -> Iterator[Served]:
    server = start_serve(tmp_path, small_deck_dir, "--max-sessions", "2")
    try:
        yield server
    finally:
        server.proc.terminate()
        try:
            server.proc.wait(15)
        except subprocess.TimeoutExpired:
            server.proc.kill()
            server.proc.wait()


async def _status(url: str, **headers: str) -> int:
    async with aiohttp.ClientSession() as http, http.get(url, headers=headers) as response:
        return response.status


async def _ws_status(url: str, origin: str | None, host: str | None = None) -> int:
    headers = {}
    if origin is not None:
        headers["Origin"] = origin
    if host is not None:
        headers["Host"] = host
    async with aiohttp.ClientSession() as http:
        try:
            async with http.ws_connect(url, headers=headers) as ws:
                await ws.close()
                return 101
        except aiohttp.WSServerHandshakeError as exc:
            return exc.status


async def _read_until(ws: aiohttp.ClientWebSocketResponse, text: str, timeout: float) -> str:
    seen = ""
    deadline = time.monotonic() + timeout
    while text not in seen:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"{text!r} never came; got {seen[-500:]!r}")
        message = await ws.receive(timeout=left)
        if message.type == aiohttp.WSMsgType.BINARY:
            seen += message.data.decode("utf-8", "replace")
        elif message.type == aiohttp.WSMsgType.TEXT:
            seen += message.data
        else:
            break
    return seen


def test_the_page_needs_the_secret_and_a_loopback_host(served: Served) -> None:
    own = f"127.0.0.1:{served.port}"

    async def go() -> None:
        assert await _status(served.base + "/") == 403
        assert await _status(served.base + "/?token=guess") == 403
        assert await _status(served.url) == 200
        # DNS rebinding: evil.example resolved to 127.0.0.1, the browser sends its own name
        assert await _status(served.url, Host=f"evil.example:{served.port}") == 403
        assert await _status(served.url, Host=f"localhost:{served.port}") == 200
        async with aiohttp.ClientSession() as http, http.get(served.url) as response:
            page = await response.text()
        # the websocket the page opens is on the page's own host, with the secret
        assert f'data-session-websocket-url="ws://{own}/ws/{served.token}"' in page
        assert await _status(served.base + "/static/") in (403, 404)  # no folder listing


def test_the_page_asks_nothing_of_another_host(served: Served) -> None:
    """An offline tool must not call out: textual-serve's own page fetched its font from
    fonts.googleapis.com. Every address the page names is its own (relative), and the
    Content-Security-Policy lets the browser fetch from this server alone."""

    async def go() -> tuple[str, str, list[str]]:
        async with aiohttp.ClientSession() as http, http.get(served.url) as response:
            page = await response.text()
            policy = response.headers.get("Content-Security-Policy", "")
            fonts = []
            for path in re.findall(r'url\("(/static/fonts/[^"]+)"\)', page):
                async with http.get(served.base + path) as font:
                    fonts.append(f"{path} {font.status}")
        return page, policy, fonts

    page, policy, fonts = asyncio.run(go())
    assert "googleapis" not in page
    assert (
        re.findall(
            r"[a-z]+://|//[a-z0-9]", page.replace(f"ws://127.0.0.1:{served.port}/", ""), re.I
        )
        == []
    )
    addresses = re.findall(r'(?:src|href)="([^"]*)"|url\("?([^")]*)', page)
    assert addresses and all(a.startswith("/static/") for pair in addresses for a in pair if a)
    assert len(fonts) == 2 and all(f.endswith(" 200") for f in fonts), fonts  # the font is served
    assert "default-src 'none'" in policy and "font-src 'self'" in policy
    assert f"connect-src 'self' ws://127.0.0.1:{served.port}" in policy

    asyncio.run(go())


def test_websocket_needs_the_pages_own_origin_and_the_secret(served: Served) -> None:
    own = f"http://127.0.0.1:{served.port}"

    async def go() -> None:
        assert await _ws_status(served.ws_url(), "http://evil.example") == 403
        assert await _ws_status(served.ws_url(), f"http://127.0.0.1:{served.port + 1}") == 403
        assert await _ws_status(served.ws_url(), None) == 403
        assert await _ws_status(served.ws_url(token="x" * 43), own) == 403
        host = f"evil.example:{served.port}"
        assert await _ws_status(served.ws_url(), f"http://{host}", host=host) == 403
        # the page's own origin with the secret: the app starts and draws its home screen
        async with (
            aiohttp.ClientSession() as http,
            http.ws_connect(served.ws_url(), headers={"Origin": own}) as ws,
        ):
            await _read_until(ws, "A small test deck", 60)

    asyncio.run(go())
    assert "Traceback" not in served.output()


def test_sizes_are_clamped_and_malformed_messages_ignored(served: Served) -> None:
    own = f"http://127.0.0.1:{served.port}"
    url = served.ws_url().replace("width=80&height=24", "width=100000&height=100000")

    async def go() -> float:
        async with (
            aiohttp.ClientSession() as http,
            http.ws_connect(url, headers={"Origin": own}) as ws,
        ):
            await _read_until(ws, "A small test deck", 60)
            for junk in (
                "not json",
                "[]",
                "{}",
                "[1, 2]",
                '["stdin", 5]',
                '["resize", "big"]',
                '["resize", {"width": "a", "height": []}]',
                '["resize", {"width": true, "height": 1e400}]',
                '["ping", {"deep": [1]}]',
            ):
                await ws.send_str(junk)
            await ws.send_str(json.dumps(["resize", {"width": 100000, "height": 100000}]))
            await asyncio.sleep(3)
            await ws.send_str('["ping", "still here"]')
            await _read_until(ws, "still here", 20)
            return served.app_rss_mb()

    rss = asyncio.run(go())
    assert rss < 600, f"the app processes hold {rss:.0f} MB after a 100000x100000 resize"
    assert "Traceback" not in served.output()
    assert clamp_size(100000, 100000) == (MAX_COLUMNS, MAX_ROWS)
    assert clamp_size(-5, "7") == (10, 10)
    assert clamp_size("1e9", 3) is None and clamp_size(True, 3) is None


def test_sessions_are_capped(served: Served) -> None:
    own = f"http://127.0.0.1:{served.port}"

    async def go() -> None:
        async with aiohttp.ClientSession() as http:
            sockets = [
                await http.ws_connect(served.ws_url(), headers={"Origin": own}) for _ in "ab"
            ]
            for ws in sockets:
                await _read_until(ws, "A small test deck", 60)
            extra = await http.ws_connect(served.ws_url(), headers={"Origin": own})
            said = await _read_until(extra, "sessions are open already", 10)
            assert "--max-sessions" in said
            assert (await extra.receive(timeout=10)).type in (
                aiohttp.WSMsgType.CLOSE,
                aiohttp.WSMsgType.CLOSED,
            )
            pythons = [
                pid
                for pid in served.app_processes()
                if "prep.tui.serve" in Path(f"/proc/{pid}/cmdline").read_text(errors="replace")
            ]
            assert len(pythons) <= 4  # two tabs: a shell and a python each, no third app
            for ws in sockets:
                await ws.close()

    asyncio.run(go())


def _serve_fails(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*prep_executable(), "--db", str(tmp_path / "p.db"), "serve", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_host_or_port_that_cannot_be_bound_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        # the bind itself is what fails (no check beforehand that a race could pass)
        result = _serve_fails(tmp_path, "--port", str(port))
    assert result.returncode == 2, result
    assert result.stderr == f"prep: cannot listen on 127.0.0.1:{port}: Address already in use\n"
    assert "Traceback" not in result.stderr + result.stdout
    result = _serve_fails(tmp_path, "--host", "no-such-host.invalid", "--port", "8123")
    assert result.returncode == 2, result
    assert "cannot listen on no-such-host.invalid:8123" in result.stderr
    # one line: the non-loopback warning comes only once the socket is bound (it came first,
    # then the error: two lines for one mistake)
    assert len(result.stderr.strip().splitlines()) == 1 and "warning" not in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_a_non_loopback_host_warns_once_listening(tmp_path: Path) -> None:
    """Listening on 0.0.0.0 still warns, on stderr, before the address is printed."""
    port = free_port()
    server = subprocess.Popen(
        [*prep_executable(), "--db", str(tmp_path / "p.db"), "serve", "--host", "0.0.0.0"]
        + ["--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None and server.stderr is not None
        address = server.stdout.readline()  # blocks until the address is printed
        assert "token=" in address, address
        warning = server.stderr.readline()
        assert warning.startswith("prep: warning: listening on 0.0.0.0: anyone who can reach")
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_origin_and_host_rules() -> None:
    assert same_origin("http://127.0.0.1:8000", "127.0.0.1:8000")
    assert same_origin("https://box.lan:8000", "BOX.lan:8000")
    assert not same_origin("http://127.0.0.1:8000", "127.0.0.1:8001")
    assert not same_origin("null", "127.0.0.1:8000") and not same_origin(None, "x")
    assert not same_origin("file://127.0.0.1:8000", "127.0.0.1:8000")
    assert host_is_loopback("localhost:80") and host_is_loopback("[::1]:8000")
    assert host_is_loopback("127.3.4.5") and not host_is_loopback("evil.example:8000")
    assert not host_is_loopback("127.0.0.1.evil.example") and not host_is_loopback("")
