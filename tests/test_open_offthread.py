"""Work over every card at open runs off the UI thread (issue 26; note 7's first item left
alone): after an upgrade clears the reconciliation's key, or the state key changes, the
checks across files and the reconciliation redo every card (a minute at a million cards).
The app runs that in a thread behind a progress screen and stays responsive; q stops it,
nothing is lost and the next open completes it. The line mode says how far it is on stderr.
Slowness comes from a hook, not from size; nothing here is timed."""

from __future__ import annotations

import asyncio
import io
import os
import threading
from pathlib import Path

import pytest

from prep.engine.decks import deckcache
from prep.engine.decks.changed import scan_decks
from prep.engine.decks.fill import CHECK, DONE, RECONCILE, Fill, describe
from prep.engine.decks.openwork import open_work, state_key
from prep.engine.store import Store
from prep.engine.study.session import ReviewSession
from prep.tui import startup as startup_module
from prep.tui.app import PrepApp
from prep.tui.screens.fill import FillScreen
from prep.tui.screens.help import HelpScreen
from prep.tui.upgrade import FillLine

pytestmark = pytest.mark.usefixtures("utc_local_time")


def write_decks(folder: Path, n_files: int = 3, per_file: int = 20) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for f in range(n_files):
        lines = [f"deck: gen-{f}", f"title: Generated {f}", "cards:"]
        for i in range(per_file):
            lines += [
                f"  - id: gen-{f}-{i}",
                "    kind: recall",
                f"    prompt: What does head {i} of deck {f} write?",
                "    answer: Its slice of W_O, mixed back into d_model.",
            ]
        path = folder / f"gen-{f}.yaml"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        old = path.stat().st_mtime - 60  # not racily clean: a later open need not read it
        os.utime(path, (old, old))
    return folder


def studied(db: Path, decks: Path, *, bundled: bool = False) -> tuple[str, str]:
    """A database whose decks are cached and reconciled, with one rating saved; then what an
    upgrade leaves: the reconciliation's key cleared, and two card rows out of step with the
    decks (a live card marked removed, a card of no deck marked live). Returns their ids."""
    with Store.open(db) as store:
        coll = deckcache.load(store, [decks], include_bundled=bundled)
        session = ReviewSession(store, coll, new_limit=5)
        card = session.current
        assert card is not None
        session.rate(3, card_id=card.id)
        with store.transaction():
            store.conn.execute("DELETE FROM meta WHERE key = 'deck_sync'")
            store.conn.execute("UPDATE cards SET removed = 1 WHERE id = ?", (card.id,))
            store.conn.execute(
                "INSERT INTO cards (id, deck, state, removed) SELECT 'gone-card', deck, state, 0 "
                "FROM cards WHERE id = ?",
                (card.id,),
            )
    return card.id, "gone-card"


def reconciled(db: Path, decks: Path) -> bool:
    with Store.open(db) as store:
        scan = scan_decks(store, [decks], include_bundled=False)
        return store.deck_reconcile_key() == state_key(scan, None)


def states(db: Path) -> dict[str, int]:
    with Store.open(db) as store:
        return dict(store.conn.execute("SELECT id, removed FROM cards").fetchall())


def reviews(db: Path) -> int:
    with Store.open(db) as store:
        return store.conn.execute("SELECT count(*) FROM reviews").fetchone()[0]


def test_the_predicted_state_key_is_the_one_the_load_keeps(tmp_path: Path) -> None:
    decks = write_decks(tmp_path / "decks")
    with Store.open(tmp_path / "p.db") as store:
        for demos in (None, ["b", "a"]):
            deckcache.load(store, [decks], include_bundled=False, demo_names=demos)
            scan = scan_decks(store, [decks], include_bundled=False)
            assert scan.pending.files_total == 0
            assert state_key(scan, demos) == store.deck_reconcile_key()
            assert not open_work(store, scan, demos).redo  # nothing to redo: the quick path
        # the demos changed: the checks and the reconciliation are redone
        assert open_work(store, scan, ["c"]).redo
        # an upgrade cleared the reconciliation's key
        with store.transaction():
            store.conn.execute("DELETE FROM meta WHERE key = 'deck_sync'")
        work = open_work(store, scan, ["b", "a"])
        assert work.redo and work.parse_bytes == 0 and work.large(1) and not work.large(10**9)


def test_the_load_reports_the_checks_and_the_reconciliation_file_by_file(
    tmp_path: Path,
) -> None:
    decks = write_decks(tmp_path / "decks")
    db = tmp_path / "p.db"
    kept, gone = studied(db, decks)
    seen: list[Fill] = []
    with Store.open(db) as store:
        with store.transaction():  # and the checks' own result: redone too
            store.conn.execute("DELETE FROM meta WHERE key = 'deck_assembly'")
        deckcache.load(
            store,
            [decks],
            include_bundled=False,
            progress=lambda f: seen.append(Fill(**{**f.__dict__})),
        )
    checks = [f for f in seen if f.stage == CHECK]
    matches = [f for f in seen if f.stage == RECONCILE]
    assert [f.step for f in checks] == [0, 1, 2, 3] and checks[0].steps == 4
    assert [f.step for f in matches if f.steps] == [0, 1, 2, 3] and matches[-1].steps == 4
    assert seen[-1].stage == DONE
    bars = [f.overall for f in seen]
    assert bars == sorted(bars) and bars[-1] == 1.0
    assert "checking ids, parents and demos across the decks (file 2 of 3)" in describe(checks[1])
    assert describe(checks[-1]).endswith("across the decks (comparing them)")
    assert describe(matches[-1]).endswith("matching your progress to the cards (file 3 of 3)")
    assert describe(matches[-1]).startswith("bringing the deck cache up to date")
    assert describe(seen[-1]).startswith("brought the deck cache up to date in")
    assert states(db)[kept] == 0 and states(db)[gone] == 1  # reconciled
    # the line mode prints the same on stderr (here with no wait before the first line)
    out = io.StringIO()
    line = FillLine(out, after=0.0)
    for fill in seen:
        line(fill)
    text = out.getvalue().splitlines()  # (a pipe: a line at most every few seconds, and the end)
    assert text[0].startswith("prep: bringing the deck cache up to date") and "checking" in text[0]
    assert text[-1].startswith("prep: brought the deck cache up to date in")


def slow_reconciliation(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, list[str]]:
    """The reconciliation's steps wait until the app stops them (as a minute-long one at a
    million cards would still be running): ``entered`` is set once it is under way."""
    from textual.worker import get_current_worker

    entered = threading.Event()
    log: list[str] = []
    real = Store.reconcile_with_deck_cache

    def slow(self, key, step=None):  # noqa: ANN001, ANN202
        def waiting(done: int, steps: int) -> None:
            if done == 1:
                entered.set()
                worker = get_current_worker()
                while not worker.is_cancelled:
                    threading.Event().wait(0.01)
                log.append("stopped")
            assert step is not None
            step(done, steps)  # the load's progress: it sees the stop and raises

        return real(self, key, step=waiting)

    monkeypatch.setattr(Store, "reconcile_with_deck_cache", slow)
    return entered, log


def test_the_app_stays_responsive_while_a_slow_reconciliation_runs_and_q_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    decks = write_decks(tmp_path / "decks")
    db = tmp_path / "p.db"
    kept, gone = studied(db, decks)
    before = reviews(db)
    monkeypatch.setattr(startup_module, "FILL_SCREEN_BYTES", 1)  # the test decks count as large
    entered, log = slow_reconciliation(monkeypatch)
    app = PrepApp(db=str(db), questions=[decks], include_bundled=False, demos={})
    seen: dict[str, object] = {}

    async def run() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            for _ in range(400):
                if entered.is_set() and "matching" in getattr(app.screen, "line", ""):
                    break
                await pilot.pause(0.05)
            assert isinstance(app.screen, FillScreen)
            seen["line"] = app.screen.line
            seen["title"] = str(app.screen.query_one("#fill-title").render())
            await pilot.press("question_mark")  # the UI thread is free: help opens
            await pilot.pause(0.1)
            seen["help"] = isinstance(app.screen, HelpScreen)
            await pilot.press("escape")
            await pilot.pause(0.1)
            await pilot.press("q")
            await pilot.pause(0.2)

    asyncio.run(run())
    for _ in range(200):  # the thread sees the stop at its next step
        if log:
            break
        threading.Event().wait(0.05)
    assert log == ["stopped"]
    assert str(seen["line"]).startswith("Bringing the deck cache up to date")
    assert "matching your progress to the cards" in str(seen["line"])
    assert "Checking the decks across files" in str(seen["title"])
    assert seen["help"] is True
    # stopped half-way: rolled back, nothing lost, and still to do
    assert reviews(db) == before
    assert states(db)[kept] == 1 and states(db)[gone] == 0
    assert not reconciled(db, decks)

    # the next open completes it (no hook now)
    monkeypatch.undo()
    monkeypatch.setattr(startup_module, "FILL_SCREEN_BYTES", 1)
    again = PrepApp(db=str(db), questions=[decks], include_bundled=False, demos={})

    async def finish() -> None:
        async with again.run_test(size=(100, 30)) as pilot:
            for _ in range(400):
                done = not isinstance(again.screen, FillScreen) and again.store is not None
                if done and reconciled(db, decks):
                    break
                await pilot.pause(0.05)
            await pilot.pause(0.2)

    asyncio.run(finish())
    assert reconciled(db, decks)
    assert states(db)[kept] == 0 and states(db)[gone] == 1
    assert reviews(db) == before


def test_a_small_collection_with_nothing_to_redo_loads_on_the_ui_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    decks = write_decks(tmp_path / "decks")
    db = tmp_path / "p.db"
    with Store.open(db) as store:
        deckcache.load(store, [decks], include_bundled=False)
    monkeypatch.setattr(startup_module, "FILL_SCREEN_BYTES", 1)
    screens: list[str] = []
    real = PrepApp._show

    def show(self, screen) -> None:  # noqa: ANN001
        screens.append(type(screen).__name__)
        real(self, screen)

    monkeypatch.setattr(PrepApp, "_show", show)
    app = PrepApp(db=str(db), questions=[decks], include_bundled=False, demos={})

    async def run() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause(0.1)
            assert len(app.collection) == 60

    asyncio.run(run())
    assert "FillScreen" not in screens  # nothing to redo: no thread, no progress screen


def test_plain_quiz_says_on_stderr_that_it_brings_the_cache_up_to_date(tmp_path: Path) -> None:
    import subprocess
    import sys

    decks = write_decks(tmp_path / "decks")
    db = tmp_path / "p.db"
    kept, gone = studied(db, decks, bundled=True)  # (the command line loads them too)
    code = (
        "import sys\n"
        "import prep.tui.upgrade as u\n"
        "u.FILL_SHOW_AFTER_S = 0.0\n"  # every load shows, however quick (a small test deck)
        "from prep.tui.cli import main\n"
        "sys.exit(main())\n"
    )
    args = ["--db", str(db), "--questions", str(decks), "quiz", "--plain"]
    result = subprocess.run(
        [sys.executable, "-c", code, *args], input="q\n", capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert "prep: bringing the deck cache up to date" in result.stderr
    assert "prep: brought the deck cache up to date in" in result.stderr
    assert states(db)[kept] == 0 and states(db)[gone] == 1
