"""What a hostile pass over round eleven found (hunt12): each test fails on the code before its
fix."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from prep.engine.store import Store, backup
from prep.tui.cli import main


def run_cli(db: Path, *args: str, input: str | None = None):
    return CliRunner().invoke(main, ["--db", str(db), *args], input=input)


def backups_of(db: Path) -> list[str]:
    folder = db.parent / "backups"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_a_refused_import_makes_no_backup_and_pushes_none_out(tmp_path: Path) -> None:
    """Every `prep import` made a backup before reading the file: a corrupt or conflicting file
    was refused ("nothing imported") but its backup stayed, and the newest 20 are kept, so a
    script retrying a bad import 20 times pushed every real backup (the daily, the manual one
    before an upgrade) out of backups/."""
    db = tmp_path / "p.db"
    Store.open(db).close()  # (`prep backup` never makes a database: cli13)
    assert run_cli(db, "backup").exit_code == 0
    kept = backups_of(db)
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": ')
    for _ in range(backup.PER_REASON + 1):
        result = run_cli(db, "import", str(bad))
        assert result.exit_code == 2, result.output
        assert "not a prep export" in result.output
    assert backups_of(db) == kept


def test_an_import_that_writes_is_still_backed_up_first(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    other = tmp_path / "o.db"
    assert run_cli(other, "config", "new_per_day", "7").exit_code == 0
    out = tmp_path / "e.json"
    assert run_cli(other, "export", "--format", "json", "-o", str(out)).exit_code == 0
    assert run_cli(db, "config", "new_per_day", "3").exit_code == 0
    before = backups_of(db)
    result = run_cli(db, "import", str(out))
    assert result.exit_code == 0, result.output
    made = [n for n in backups_of(db) if n not in before]
    assert len(made) == 1 and made[0].endswith("-import.db")
    # the backup holds the database as it was before the import (its own setting)
    import sqlite3

    conn = sqlite3.connect(db.parent / "backups" / made[0])
    (settings,) = conn.execute("SELECT value FROM meta WHERE key = 'settings'").fetchone()
    conn.close()
    assert json.loads(settings)["new_per_day"] == 3


def test_a_rescue_copy_outlives_the_rotation_of_later_backups(tmp_path: Path) -> None:
    """The copy made when the database was replaced under prep (the only copy of the ratings
    saved before the swap) and the one a restore makes of the database it replaces were pruned
    like any backup: 20 later backups (a sync each, imports, one a day) deleted them, while the
    line that made them had said `prep backup --restore NAME` puts them back."""
    import os

    from prep.engine.store import Store, StoreError

    db = tmp_path / "p.db"
    assert run_cli(db, "config", "new_per_day", "9").exit_code == 0  # the progress to keep
    store = Store.open(db)
    other = tmp_path / "other.db"
    Store.open(other).close()
    os.replace(other, db)  # the file replaced under the open store
    try:
        with store.transaction():
            store.set_meta("probe", "1")
    except StoreError as exc:
        assert exc.kind == "replaced"
    else:
        raise AssertionError("a write into the replaced file was not refused")
    store.close()
    (rescued,) = [n for n in backups_of(db) if n.endswith("-replaced.db")]
    routine = backups_of(db)
    result = run_cli(db, "backup", "--restore", routine[0])  # makes a "-restore" copy
    assert result.exit_code == 0, result.output
    (before_restore,) = [n for n in backups_of(db) if n.endswith("-restore.db")]
    for _ in range(backup.PER_REASON + 2):
        assert run_cli(db, "backup").exit_code == 0
    names = backups_of(db)
    assert rescued in names and before_restore in names
    # (rotated: of one day's manual backups the newest RECENT are kept, cli13's retention)
    assert len([n for n in names if n.endswith("-manual.db")]) == backup.RECENT
    result = run_cli(db, "backup", "--restore", rescued)  # and it still puts them back
    assert result.exit_code == 0, result.output
    assert "new_per_day = 9" in run_cli(db, "config").output


def test_a_mock_too_long_is_refused_as_too_long_not_as_infinite(tmp_path: Path) -> None:
    """`prep mock --minutes 1e308` said "--minutes must be a finite number, got 1e+308": 1e308 is
    finite (its seconds overflow); the limit it passes is a day."""
    for minutes in ("1e308", "inf", "1441"):
        result = run_cli(tmp_path / "p.db", "mock", "--plain", "--minutes", minutes, input="q\n")
        assert result.exit_code == 2, result.output
        (line,) = result.stderr.splitlines()
        assert line.startswith("prep: --minutes must be at most 1440 (a day), got "), line


def test_a_refused_setting_creates_no_database(tmp_path: Path) -> None:
    """`prep --db TYPO config nope 3` (or a value out of range) was refused, exit 2, but the
    store was opened first: an empty progress database was left at the mistyped path."""
    db = tmp_path / "typo.db"
    for args in (
        ("nope", "3"),
        ("new_per_day", "-5"),
        ("maximum_interval", "0"),
        ("learning_steps_min", "0"),
        ("interview_date", "someday"),
    ):
        result = run_cli(db, "config", *args)
        assert result.exit_code == 2, result.output
        assert len(result.stderr.splitlines()) == 1 and args[0] in result.stderr
        assert list(tmp_path.iterdir()) == [], args
    assert run_cli(db, "config", "new_per_day", "7").exit_code == 0  # a good one still saves
    assert "new_per_day = 7" in run_cli(db, "config", "new_per_day").output


def test_an_unknown_prep_theme_opens_the_app_and_says_so(tmp_path: Path, monkeypatch) -> None:
    """PREP_THEME=nrod (a typo, or a theme of another Textual version) ended `prep` before it
    opened: "internal error (InvalidThemeError ...)", exit 70. The app opens in the
    terminal's default theme and a notification names the value and the themes there are."""
    from prep.tui.app import PrepApp
    from prep.tui.testing import NOW, fixed_collection
    from tests.pilot import async_test, record_notes, wait_until

    monkeypatch.setenv("PREP_THEME", "nrod")
    monkeypatch.delenv("COLORFGBG", raising=False)

    @async_test
    async def launch() -> None:
        app = PrepApp(
            db=str(tmp_path / "p.db"), collection=fixed_collection(), clock=lambda: NOW, demos={}
        )
        posted = record_notes(app)
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_until(pilot, lambda: app.store is not None)
            await pilot.pause()
            assert app.theme == "textual-dark"
            (said,) = [n for n in posted if "PREP_THEME" in n]
            assert said.startswith("PREP_THEME='nrod' names no theme; showing textual-dark")
            assert "nord" in said  # (the themes there are)

    launch()


def test_a_daily_backup_that_fails_is_not_called_a_failed_sync(tmp_path: Path) -> None:
    """On a full disk (or a backups/ that cannot be made) the app's line said "Sync failed:
    .../backups: cannot write a backup" with no sync set up: it is the daily backup."""
    import asyncio

    from prep.engine.store import Store
    from prep.tui.testing import make_app
    from tests.test_sync_app import line_of
    from tests.test_tui import async_test

    @async_test
    async def run() -> None:
        store = Store.open(tmp_path / "a.db")
        (tmp_path / "backups").write_text("a file where the folder goes")  # mkdir fails
        app = make_app(store=store)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("enter")  # the first card: the thread starts
            assert await asyncio.to_thread(app.syncer.fetched.wait, 120)
            await pilot.pause()
            line = line_of(app.screen)
            assert line.startswith("Daily backup not made: "), line
            assert "cannot write a backup" in line and "Sync" not in line
            await pilot.press("ctrl+c")
        store.close()

    run()


def test_an_import_of_a_missing_file_opens_no_database(tmp_path: Path) -> None:
    """`prep --db NEW import typo.json` said "no such file", exit 2, after it had created NEW
    (and backed it up): a database and a backups/ folder left for a file that is not there."""
    db = tmp_path / "p.db"
    for name, said in (("typo.json", "no such file"), (".", "is a folder")):
        result = run_cli(db, "import", str(tmp_path / name))
        assert result.exit_code == 2, result.output
        assert said in result.stderr and len(result.stderr.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


TERMINATED = """
import asyncio, os, signal, sys
from prep.tui.testing import make_app

app = make_app()

async def main():
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(200):
            if not app.is_running:
                break
            await asyncio.sleep(0.05)
    print("closed as q closes it")

asyncio.run(main())
"""


def test_sigterm_quits_the_app_as_q_does() -> None:
    """`kill PID` (SIGTERM: a logout, `timeout`) ended the app at once: the terminal was left
    in the app's screen with mouse reporting on, and the quit's own work (the last sync, the
    worker closed) was not done. It quits as q does."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", TERMINATED], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert "closed as q closes it" in done.stdout
