"""What keeps `prep`'s first card fast (issue 26, item 3), held as structure, not as time:

- the first frame is the whole first card, drawn before the app imports what only later
  screens and the answer side need (Markdown, the answer box, the rating bar, stats, sync,
  grading, the parse pool's processes), and before the work that waits for it (the
  heartbeat's synced write, sync, the demo worker, the answer side's warm-up);
- the garbage collector, paused by the console script, runs again from the first frame on;
- the footer is rebuilt when its keys change, not on every "bindings changed" signal;
- the first screen holds only what the first card shows (the sync's line is mounted once a
  sync has something to say) and parses only its own stylesheets (the rating bar's button
  variants come with the bar); OpenSSL (hashlib, secrets) is not loaded for the few short
  hashes the first card needs (engine/decks/digest.py); the dataclasses on the way carry
  their own docstrings (else dataclasses builds one from ``inspect.signature`` at import).

tests/benchmarks/pty_bench.py measures the time itself, beside a minimal Textual app.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

import pytest

from prep.tui.screens.review import ReviewScreen
from prep.tui.testing import make_app
from prep.tui.widgets.footer import Footer
from tests.test_tui import async_test

pytestmark = pytest.mark.usefixtures("utc_local_time")

# Not imported when the first frame is drawn (each is imported later, when it is needed)
LATER = (
    "rich.markdown",
    "markdown_it",
    "pygments",
    "textual.widgets._text_area",
    "textual.widgets._data_table",
    "prep.tui.widgets.answer_box",
    "prep.tui.widgets.rating_bar",
    "prep.tui.screens.home",
    "prep.tui.grading",
    "prep.demos.pretrained",
    "prep.engine.study.statsresult",
    "prep.engine.sync",
    "prep.engine.transfer",
    "multiprocessing",
    "concurrent.futures.process",
    "torch",
    "hashlib",  # OpenSSL: ~2.5 ms (engine/decks/digest.py)
    "_hashlib",
    "secrets",
    "prep.tui.screens.registry",  # the screens by name: when one is opened, or the palette
    "prep.tui.widgets.syncline",  # mounted when a sync has something to say
)

# The first card's screen, node by node (a new widget there costs every start ~1 ms: mount it
# when it is first needed, as the answer side and the rating bar are)
FIRST_SCREEN = [
    "Horizontal#topbar",
    "Static#where",
    "Static#progress",
    "VerticalScroll#card",
    "Static#context",
    "Static#prompt",
    "Static#choices",
    "Static#hint",
    "Horizontal#actions",
    "KeyButton#reveal",
    "Footer",
]  # (and Textual's own: the toast rack, the tooltip)

PROBE = """
import asyncio, gc, json, sys
from prep.tui.entry import run  # noqa: F401  (what the console script imports first)
from prep.tui.startup import pause_gc
from prep.tui.app import PrepApp
from prep.tui.widgets.text import Static

seen = {}

class Probe(PrepApp):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.after_first_frame(self.first_frame)  # first in line: nothing else ran yet

    def boot(self, **kwargs):
        seen.setdefault("gc_boot", gc.isenabled())
        super().boot(**kwargs)

    def first_frame(self):
        screen = self.screen
        seen["modules"] = sorted(sys.modules)
        seen["gc_first_frame"] = gc.isenabled()
        seen["screen"] = type(screen).__name__
        seen["prompt"] = str(screen.query_one("#prompt", Static).render())
        seen["card"] = screen.session.current.prompt
        seen["heartbeat"] = self._heartbeat is not None
        seen["nodes"] = [
            type(w).__name__ + (f"#{w.id}" if w.id else "")
            for w in screen.walk_children()
            if not w.has_class("-textual-system")
        ]
        seen["css"] = [where[1] for where in self.stylesheet.source]
        seen["button_css"] = type(screen.query_one("#reveal")).DEFAULT_CSS
        import dataclasses
        seen["undocumented"] = sorted(
            f"{m}.{k}"
            for m, mod in list(sys.modules.items())
            if m.startswith("prep.")
            for k, v in list(vars(mod).items())
            if isinstance(v, type) and dataclasses.is_dataclass(v) and v.__module__ == m
            and (v.__doc__ or "").startswith(v.__name__ + "(")
        )

async def main():
    pause_gc()  # as the console script does
    app = Probe(db=sys.argv[1], review_first=True)
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(200):  # the answer side's warm-up, once the first frame is drawn
            await pilot.pause(0.02)
            if "rich.markdown" in sys.modules and app._heartbeat is not None:
                break
        seen["warmed"] = "rich.markdown" in sys.modules
        seen["heartbeat_later"] = app._heartbeat is not None
    seen["gc_after"] = gc.isenabled()

asyncio.run(main())
print(json.dumps(seen))
"""


def test_the_first_frame_is_the_card_before_what_it_does_not_need(tmp_path: Path) -> None:
    from prep.engine.decks import deckcache
    from prep.engine.store import Store
    from prep.tui.app import demo_infos

    db = tmp_path / "prep.db"
    with Store.open(db) as store:  # a start like every start after the first: the database
        deckcache.load(store, demo_names=sorted(demo_infos()))  # made and its cache filled
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(db)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["screen"] == "ReviewScreen"  # the card itself, not home or a blank screen
    assert " ".join(seen["card"].split())[:40] in " ".join(seen["prompt"].split())
    early = [m for m in seen["modules"] if m.split(".")[0] != "tests" and m.startswith(LATER)]
    assert early == [], f"imported before the first frame: {early}"
    assert seen["gc_boot"] is False  # paused while the first frame is built ...
    assert seen["gc_first_frame"] is True and seen["gc_after"] is True  # ... not after it
    assert seen["heartbeat"] is False and seen["heartbeat_later"] is True  # a synced write
    assert seen["warmed"] is True  # the answer side is imported while the card is read
    assert seen["nodes"] == FIRST_SCREEN
    assert not [c for c in seen["css"] if c.startswith(("RatingBar", "SyncLine", "Button."))]
    assert "-success" not in seen["button_css"] and "-primary" in seen["button_css"]
    assert seen["undocumented"] == [], "give each a docstring: dataclasses builds one otherwise"


def test_the_builtin_sha256_gives_hashlibs_digests() -> None:
    import hashlib

    from prep.engine.decks.digest import sha256

    for data in (b"", b"abc", "kärt ✓".encode(), bytes(range(256)) * 1000):
        assert sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
        assert sha256(data).digest() == hashlib.sha256(data).digest()
    h = sha256(b"format 1\n")
    h.update(b"files by key\n")
    assert h.hexdigest() == hashlib.sha256(b"format 1\nfiles by key\n").hexdigest()


def test_gc_pause_is_resumed_once_and_keeps_a_callers_choice() -> None:
    from prep.tui import startup

    assert gc.isenabled()
    startup.pause_gc()
    try:
        assert not gc.isenabled()
    finally:
        startup.resume_gc()
        gc.unfreeze()  # (this test process's objects go back in the collector's sight)
    assert gc.isenabled()
    gc.disable()  # a caller (a profiler, a host program) turned it off: it stays off
    try:
        startup.pause_gc()
        startup.resume_gc()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_other_commands_run_with_the_collector_on(tmp_path: Path) -> None:
    from prep.tui import cli

    try:
        with pytest.raises(SystemExit) as ended:
            cli.run(["--db", str(tmp_path / "p.db"), "config"])
        assert ended.value.code == 0
        assert gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()


@async_test
async def test_the_footer_is_rebuilt_when_its_keys_change_only() -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")  # home -> today's first card
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        footer = screen.query_one(Footer)
        builds = []
        real = footer.recompose

        async def counted() -> None:
            builds.append(footer.shown())
            await real()

        footer.recompose = counted  # type: ignore[method-assign]
        for _ in range(3):  # signals with nothing changed: no rebuild
            screen.refresh_bindings()
            await pilot.pause()
        assert builds == []
        await pilot.press("space")  # the answer: the keys become the ratings
        await pilot.pause()
        assert len(builds) == 1
        keys = {key.key for key in footer.query("FooterKey")}
        assert "1" in keys and "t" not in keys


def test_a_cached_deck_carries_every_field_and_reads_its_ids_when_asked() -> None:
    from dataclasses import fields

    from prep.engine.decks.collection import _CachedDeckInfo
    from prep.engine.decks.deck import DeckInfo

    info = DeckInfo("n", "T", "d", "f.yaml", ["x"], line=3, declared=[("x", 4)], order=2.5)
    reads: list[int] = []
    cached = _CachedDeckInfo.of(info, lambda: reads.append(1) or ["a", "b"])  # type: ignore[func-returns-value]
    assert reads == []  # (copied without reading the ids)
    for f in fields(DeckInfo):
        if f.name != "card_ids":
            assert getattr(cached, f.name) == getattr(info, f.name), f.name
    assert cached.card_ids == ["a", "b"] and cached.card_ids == ["a", "b"] and reads == [1]


def test_a_load_after_the_apps_scan_does_not_scan_again(tmp_path: Path, monkeypatch) -> None:
    from prep.engine.decks import deckcache
    from prep.engine.store import Store

    with Store.open(tmp_path / "p.db") as store:
        first = deckcache.load(store)  # (filled)
        scan = deckcache.scan_decks(store)
        done: list[str] = []
        for name in ("_to_fill", "_stat", "collect_deck_files"):  # the scan's own work
            real = getattr(deckcache, name)
            monkeypatch.setattr(
                deckcache, name, lambda *a, _r=real, _n=name, **k: done.append(_n) or _r(*a, **k)
            )
        again = deckcache.load(store, scan=scan)
        assert done == []
        assert [c.id for c in again.cards] == [c.id for c in first.cards]


def test_the_cache_format_key_is_computed_once(monkeypatch) -> None:
    from prep.engine.decks import deckcache

    deckcache._format_key.cache_clear()
    calls: list[int] = []
    real = deckcache.fields
    monkeypatch.setattr(deckcache, "fields", lambda c: calls.append(1) or real(c))
    assert deckcache.format_key() == deckcache.format_key()  # (the scan's and the load's)
    assert calls == [1]
    monkeypatch.setattr(deckcache, "LOADER_VERSION", deckcache.LOADER_VERSION + 1)
    deckcache.format_key()  # another version: another key
    assert calls == [1, 1]
