"""`prep serve` end to end: the real command serves the app; headless Chromium (Debian's
`chromium`, driven over the DevTools protocol with aiohttp's websocket client) opens the page,
starts the session, reveals the card and rates it; the rating is then in the database.

What the page shows is read from the terminal stream the browser receives (the websocket frames
textual-serve sends to xterm.js), so the test waits for what a user would see, never a fixed
sleep. In CI (CI=true) a missing browser is a failure: .ci/run installs it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from prep.engine.decks.deckcache import load_collection
from prep.engine.store import Store
from prep.tui.serve import app_command, is_loopback

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_browser() -> str | None:
    explicit = os.environ.get("PREP_TEST_BROWSER")
    if explicit:
        return explicit
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prep_executable() -> list[str]:
    script = Path(sys.executable).with_name("prep")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from prep.tui.cli import main; sys.exit(main())"]


def wait_for_port(port: int, proc: subprocess.Popen, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"prep serve exited early:\n{proc.stdout.read()}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.1)
    raise AssertionError(f"prep serve did not listen on port {port}")


def printed_url(server: subprocess.Popen) -> str:
    """The address `prep serve` printed: the page needs its per-launch secret."""
    for line in server.stdout:
        match = re.search(r"open (http://\S+token=\S+)", line)
        if match:
            return match.group(1)
    raise AssertionError("prep serve printed no address")


def devtools_endpoint(chrome: subprocess.Popen, log: Path, timeout: float = 30.0) -> str:
    """The browser's DevTools websocket, from the line chromium prints when it is ready."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and chrome.poll() is None:
        match = re.search(r"DevTools listening on (ws://\S+)", log.read_text())
        if match:
            return match.group(1)
        time.sleep(0.05)
    raise AssertionError(f"chromium did not start its DevTools endpoint:\n{log.read_text()}")


class DevTools:
    """The few DevTools-protocol calls the test needs, on one page session."""

    def __init__(self, ws) -> None:  # noqa: ANN001 - aiohttp.ClientWebSocketResponse
        self.ws = ws
        self.ids = itertools.count(1)
        self.pending: dict[int, asyncio.Future] = {}
        self.session: str | None = None
        self.screen = ""  # everything the terminal was sent, escape codes removed
        self.requested: list[str] = []  # every address the page asked for
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for message in self.ws:
            data = json.loads(message.data)
            if "id" in data and data["id"] in self.pending:
                self.pending.pop(data["id"]).set_result(data)
            elif data.get("method") == "Network.requestWillBeSent":
                self.requested.append(data["params"]["request"]["url"])
            elif data.get("method") == "Network.webSocketFrameReceived":
                response = data["params"]["response"]
                payload = response["payloadData"]
                if response.get("opcode") == 2:
                    payload = base64.b64decode(payload).decode("utf-8", "replace")
                self.screen += re.sub(r"\x1b\[[0-9;?<>=]*[a-zA-Z]", "", payload)

    async def call(self, method: str, *, session: bool = True, **params) -> dict:
        message_id = next(self.ids)
        future = asyncio.get_running_loop().create_future()
        self.pending[message_id] = future
        message = {"id": message_id, "method": method, "params": params}
        if session and self.session:
            message["sessionId"] = self.session
        await self.ws.send_str(json.dumps(message))
        result = await asyncio.wait_for(future, 30)
        assert "error" not in result, result
        return result.get("result", {})

    async def wait_for_text(self, text: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.screen:
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{text!r} never appeared; the page got:\n{self.screen[-2000:]}"
                )
            await asyncio.sleep(0.05)

    async def key(self, key: str) -> None:
        """Press one key in the terminal (xterm.js's hidden textarea has the focus)."""
        named = {"Enter": ("Enter", "\r", 13), " ": ("Space", " ", 32)}
        if key in named:
            code, text, vk = named[key]
        else:
            code, text, vk = (
                (f"Digit{key}" if key.isdigit() else f"Key{key.upper()}"),
                key,
                ord(key.upper()),
            )
        for kind in ("keyDown", "keyUp"):
            params = {"type": kind, "key": key, "code": code, "windowsVirtualKeyCode": vk}
            if kind == "keyDown":
                params["text"] = text
            await self.call("Input.dispatchKeyEvent", **params)


async def drive_browser(browser_ws: str, url: str, db: Path) -> list[tuple[str, int]]:
    import aiohttp

    async with (
        aiohttp.ClientSession() as http,
        http.ws_connect(browser_ws, max_msg_size=0) as ws,
    ):
        tools = DevTools(ws)
        target = await tools.call("Target.createTarget", session=False, url="about:blank")
        attached = await tools.call(
            "Target.attachToTarget", session=False, targetId=target["targetId"], flatten=True
        )
        tools.session = attached["sessionId"]
        await tools.call("Network.enable")
        await tools.call("Page.enable")
        await tools.call("Page.navigate", url=url)
        # home: the deck list, drawn in the page by the app process this tab started
        await tools.wait_for_text("A small test deck")
        first_byte = await tools.call(
            "Runtime.evaluate",
            expression="document.body.classList.contains('-first-byte')",
            returnByValue=True,
        )
        assert first_byte["result"]["value"] is True
        await tools.call(
            "Runtime.evaluate",
            expression="document.querySelector('.xterm-helper-textarea').focus()",
        )
        await tools.key("Enter")  # start the highlighted deck's session
        await tools.wait_for_text("space Show answer")  # the review screen's footer
        await tools.key(" ")  # reveal
        await tools.wait_for_text("How well did you know it?")
        await tools.key("3")  # Good
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with Store.open(db) as store:
                rated = [(r.card_id, r.rating) for r in store.reviews()]
            if rated:
                break
            await asyncio.sleep(0.1)
        tools.reader.cancel()
        # an offline tool calls out to no one: every request went to prep serve itself
        own = url.split("/?", 1)[0]
        assert tools.requested, "the page's requests were not seen"
        assert [u for u in tools.requested if not u.startswith(own + "/")] == []
        assert any("/static/fonts/" in u for u in tools.requested)  # the font came from here
        return rated


@pytest.fixture
def browser() -> str:
    path = find_browser()
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail("no chromium in CI: .ci/run should have installed Debian's chromium")
        pytest.skip("no headless browser: `apt-get install chromium` (or set PREP_TEST_BROWSER)")
    return path


def test_serve_studies_in_a_browser(tmp_path: Path, small_deck_dir: Path, browser: str) -> None:
    db = tmp_path / "prep.db"
    port = free_port()
    server = subprocess.Popen(
        [*prep_executable(), "--db", str(db), "--questions", str(small_deck_dir), "serve"]
        + ["--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PREP_THEME": "textual-dark"},
    )
    chrome = None
    log = tmp_path / "chromium.log"
    try:
        wait_for_port(port, server)
        url = printed_url(server)
        chrome = subprocess.Popen(
            [browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run"]
            + ["--remote-debugging-port=0", f"--user-data-dir={tmp_path / 'chrome'}"]
            + ["--window-size=1100,800", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=log.open("w"),  # a file, not a pipe: chromium never blocks on a full pipe
        )
        browser_ws = devtools_endpoint(chrome, log)
        rated = asyncio.run(drive_browser(browser_ws, url, db))
        assert len(rated) == 1 and rated[0][1] == 3, rated  # one review, rated Good
        assert rated[0][0] in {c.id for c in load_collection([small_deck_dir]).cards}
    finally:
        if chrome is not None:
            chrome.kill()
            chrome.wait()
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def test_serve_binds_loopback_unless_told(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from prep.tui.cli import main

    serve = main.get_command(None, "serve")  # type: ignore[arg-type]  # (a lazy group)
    assert serve is not None and serve.params[0].default == "127.0.0.1"
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")
    # the browser tab's app gets an absolute database path and the user's deck folders
    command = app_command(db=str(tmp_path / "x y.db"), questions=[Path("decks")])
    assert "'" + str(tmp_path / "x y.db") + "'" in command
    assert str(Path("decks").resolve()) in command
    # a port already in use is one line, exit 2
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(
            main, ["--db", str(tmp_path / "p.db"), "serve", "--port", str(port)]
        )
    assert result.exit_code == 2
    assert f"cannot listen on 127.0.0.1:{port}" in result.output
