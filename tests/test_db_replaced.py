"""The database file removed or replaced while prep runs (found by hunt11): SQLite kept writing
into the file it had opened, so every rating was shown as "Saved" and lost when prep closed it.
Now each write transaction checks, before its COMMIT, that the path still names the file the
store opened (engine/store/samefile.py)."""

from __future__ import annotations

import os
import shutil
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from prep.engine.store import Mark, Store, StoreError, backup
from prep.engine.study.scheduler import Rating, Settings
from prep.engine.study.session import ReviewSession
from prep.tui.cli import main

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _session(store: Store, collection) -> ReviewSession:
    return ReviewSession(store, collection, clock=lambda: NOW, requeue=False)


def _reviews(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT count(*) FROM reviews").fetchone()[0]


def _rescued(db: Path) -> list[Path]:
    return [p for p in backup.listing(db) if p.name.endswith("-replaced.db")]


@pytest.mark.parametrize("how", ["removed", "replaced", "same content"])
def test_a_rating_after_the_file_is_swapped_is_refused_and_the_earlier_ones_rescued(
    tmp_path: Path, small_collection, how: str
) -> None:
    db = tmp_path / "prep.db"
    store = Store.open(db)
    session = _session(store, small_collection)
    session.rate(Rating.Good)  # saved in the file at db
    if how == "removed":
        db.unlink()
    else:
        other = tmp_path / "other.db"
        if how == "same content":  # what a sync tool or a restore by hand does: a new file
            store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            shutil.copyfile(db, other)
        else:
            Store.open(other).close()  # another (empty) progress database
        os.replace(other, db)
    with pytest.raises(StoreError) as caught:
        session.rate(Rating.Good)
    err = caught.value
    what = "removed" if how == "removed" else "replaced"
    assert err.kind == "replaced"
    assert f"{db}: the progress database was {what} while prep was running" in str(err)
    assert "restart prep" in str(err) and "\n" not in str(err)
    # nothing written into the file prep still has open (rolled back, not committed)
    assert store.conn.execute("SELECT count(*) FROM reviews").fetchone()[0] == 1
    # everything shown as saved before it is copied out, and the message names the copy
    (copy,) = _rescued(db)
    assert str(copy) in str(err) and f"prep backup --restore {copy.name}" in str(err)
    assert _reviews(copy) == 1
    # every later write is refused the same way (one copy made, not one per try)
    with pytest.raises(StoreError, match="while prep was running"):
        session.rate(Rating.Good)
    assert len(_rescued(db)) == 1
    if db.exists():  # the file there now is untouched
        assert _reviews(db) == (1 if how == "same content" else 0)
    store.close()


def test_every_writer_checks_not_only_ratings(tmp_path: Path, small_collection) -> None:
    db = tmp_path / "prep.db"
    store = Store.open(db)
    session = _session(store, small_collection)
    card = session.current
    assert card is not None
    session.rate(Rating.Good)
    db.unlink()
    writes = {
        "undo": lambda: session.undo(),
        "mark": lambda: store.set_mark(card.id, Mark(flagged=True)),
        "settings": lambda: store.update_settings(new_per_day=3),
        "save settings": lambda: store.save_settings(Settings(new_per_day=4)),
        "demo run": lambda: store.record_demo_run(
            name="no-wo", device="cpu", passed=True, seconds=0.1
        ),
    }
    for name, write in writes.items():
        with pytest.raises(StoreError, match="removed while prep was running"):
            write()
        assert not store.conn.in_transaction, name
    assert store.conn.execute("SELECT count(*) FROM reviews").fetchone()[0] == 1
    assert store.mark(card.id) == Mark()
    assert store.settings() == Settings()
    assert store.demo_runs() == []
    store.close()


def test_a_store_in_memory_and_a_file_left_in_place_write_as_before(
    tmp_path: Path, small_collection
) -> None:
    memory = Store.memory()
    _session(memory, small_collection).rate(Rating.Good)
    assert memory.conn.execute("SELECT count(*) FROM reviews").fetchone()[0] == 1
    db = tmp_path / "prep.db"
    store = Store.open(db)
    session = _session(store, small_collection)
    session.rate(Rating.Good)
    os.utime(db)  # touched, not replaced
    session.rate(Rating.Good)
    store.close()
    assert _reviews(db) == 2 and _rescued(db) == []


def test_prep_own_restore_keeps_the_file_so_a_running_prep_keeps_saving(
    tmp_path: Path, small_collection
) -> None:
    """`prep backup --restore` writes the backup into the open database through SQLite: the
    same file, so the prep that restored and another one running on it both keep saving."""
    db = tmp_path / "prep.db"
    running = Store.open(db)
    session = _session(running, small_collection)
    session.rate(Rating.Good)
    made = backup.make(running, "manual")
    assert made is not None
    session.rate(Rating.Good)
    restorer = Store.open(db)
    backup.restore(restorer, made.name)
    restorer.set_mark("x", Mark(flagged=True))  # the restorer writes on
    restorer.close()
    session.rate(Rating.Good)  # and so does the prep that was running
    running.close()
    assert _reviews(db) == 2 and _rescued(db) == []


def test_plain_quiz_says_so_and_exits_2_instead_of_saved(
    tmp_path: Path, small_deck_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The report: `prep quiz --plain`, the file removed after the first rating, three more
    ratings each said "Saved" (exit 0) and were gone."""
    from prep.tui import plain

    db = tmp_path / "prep.db"
    said = plain.LineIO.say

    def say(self, text: str = "") -> None:
        said(self, text)
        if text.startswith("Saved:") and db.exists():
            db.unlink()  # another program removes the file after the first rating

    monkeypatch.setattr(plain.LineIO, "say", say)
    args = ["--db", str(db), "--questions", str(small_deck_dir), "quiz", "--plain"]
    result = CliRunner().invoke(main, args, input="\n3\n" * 4 + "q\n")
    assert result.exit_code == 2, result.output
    assert result.output.count("Saved:") == 1
    lines = [line for line in result.output.splitlines() if "while prep was running" in line]
    assert len(lines) == 1 and f"prep: {db}: the progress database was removed" in lines[0]
    assert "Traceback" not in result.output
    (copy,) = _rescued(db)
    assert _reviews(copy) == 1


@pytest.mark.usefixtures("utc_local_time")
def test_the_app_shows_not_saved_and_keeps_the_card(tmp_path: Path) -> None:
    """In the app: a notice, the card stays, nothing shown as saved."""
    import asyncio

    from prep.tui.testing import make_app
    from tests.pilot import record_notes
    from tests.test_tui import text_of, wait_until

    db = tmp_path / "prep.db"
    store = Store.open(db)
    app = make_app(store=store)
    posted = record_notes(app)

    async def go() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("enter", "space")
            screen = app.screen
            card = screen.card
            db.unlink()
            await pilot.press("3")
            await wait_until(pilot, lambda: not screen.saving)
            assert screen.card is card and screen.revealed
            notes = list(posted)
            assert any("was removed while prep was running" in n for n in notes), notes
            assert "Not saved; the card stays. Restart prep" in text_of(app, "#hint")
            assert "Saved:" not in text_of(app, "#hint")

    asyncio.run(go())
    assert store.conn.execute("SELECT count(*) FROM reviews").fetchone()[0] == 0
    assert len(_rescued(db)) == 1


def test_a_restore_into_a_file_removed_meanwhile_is_refused_before_writing(tmp_path: Path) -> None:
    """backup.restore copies through SQLite's backup API (no transaction of the store's): it
    checks the file first, so the backup is not restored into a removed file."""
    db = tmp_path / "prep.db"
    store = Store.open(db)
    store.set_mark("x", Mark(flagged=True))
    made = backup.make(store, "manual")
    assert made is not None
    store.set_mark("y", Mark(flagged=True))
    db.unlink()
    with pytest.raises(StoreError, match="removed while prep was running"):
        backup.restore(store, made.name)
    assert store.mark("y").flagged  # the open file was not overwritten by the backup
    (copy,) = _rescued(db)
    with sqlite3.connect(copy) as conn:
        assert conn.execute("SELECT count(*) FROM card_marks").fetchone()[0] == 2
    store.close()


@pytest.mark.usefixtures("utc_local_time")
def test_the_app_says_so_at_its_heartbeat_before_any_rating(tmp_path: Path) -> None:
    import asyncio

    from prep.tui.testing import make_app
    from tests.pilot import record_notes

    db = tmp_path / "prep.db"
    store = Store.open(db)
    app = make_app(store=store)
    posted = record_notes(app)

    async def go() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            other = tmp_path / "other.db"
            Store.open(other).close()
            os.replace(other, db)
            app.announce()  # (what the 30-second heartbeat runs)
            app.announce()
            await pilot.pause()
            notes = list(posted)
            told = [n for n in notes if "was replaced while prep was running" in n]
            assert len(told) == 1, notes

    asyncio.run(go())
