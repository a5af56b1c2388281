"""Upgrading an older database tells the front ends how far it is (Store.open's
``progress``), the command line shows it on stderr, the app on a screen, and an upgrade cut
short (an exception, a killed process) leaves the old database as it was and openable."""

from __future__ import annotations

import asyncio
import io
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from prep.engine.store import SCHEMA_VERSION, Store, schema
from prep.engine.store.schema import REVIEW_COLUMNS_V1, Upgrade
from prep.tui import upgrade as upgrade_line
from prep.tui.cli import main
from prep.tui.upgrade import UpgradeLine
from tests.test_migration_v5 import v3_database, v3_export

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def v3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("v3") / "v3.db"
    v3_database(path)  # 12 cards, 4 reviews each, plus 3 odd rows: 51 reviews
    return path


@pytest.fixture
def copy(v3: Path, tmp_path: Path) -> Path:
    work = tmp_path / "prep.db"
    shutil.copyfile(v3, work)
    return work


def version_of(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(
            conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
        )
    finally:
        conn.close()


def test_progress_is_monotone_and_ends_at_100_percent(copy: Path, monkeypatch) -> None:
    monkeypatch.setattr(schema, "BATCH", 7)  # many batches out of a small log
    seen: list[Upgrade] = []
    Store.open(copy, progress=seen.append).close()
    assert version_of(copy) == SCHEMA_VERSION
    assert {(u.from_version, u.to_version) for u in seen} == {(3, SCHEMA_VERSION)}
    assert {u.reviews for u in seen} == {51}
    fractions = [u.fraction for u in seen]
    assert fractions[0] == 0.0 and fractions == sorted(fractions)
    converted = [u.converted for u in seen]
    assert converted == sorted(converted)
    # a report per batch of 7 rows (8 batches) in the one rewrite of the log (v4 straight to
    # v13's form: engine/store/fused13.py), then one per step
    assert len({c for c in converted if 0 < c < 51}) == 7
    assert len(seen) >= 1 + 8 + len(schema.UpgradeTracker.TAIL) + 1
    elapsed = [u.elapsed for u in seen]
    assert elapsed == sorted(elapsed)
    assert [u.done for u in seen] == [False] * (len(seen) - 1) + [True]
    assert all(f < 1.0 for f in fractions[:-1])
    assert seen[-1].fraction == 1.0 and seen[-1].converted == 51 and seen[-1].remaining == 0.0


def test_a_new_or_current_database_reports_nothing(tmp_path: Path) -> None:
    seen: list[Upgrade] = []
    Store.open(tmp_path / "new.db", progress=seen.append).close()  # created
    Store.open(tmp_path / "new.db", progress=seen.append).close()  # current
    assert seen == []
    assert Store.pending_upgrade(tmp_path / "new.db") is None
    assert Store.pending_upgrade(tmp_path / "absent.db") is None


@pytest.mark.parametrize("journal", ["delete", "wal"])  # an older prep's own was in WAL
def test_pending_upgrade_names_the_versions(copy: Path, journal: str) -> None:
    conn = sqlite3.connect(copy)
    conn.execute(f"PRAGMA journal_mode = {journal}")
    conn.close()
    assert Store.pending_upgrade(copy) == (3, SCHEMA_VERSION)
    assert version_of(copy) == 3  # asking changes nothing
    Store.open(copy).close()
    assert Store.pending_upgrade(copy) is None


class Stopped(Exception):
    pass


def test_an_upgrade_stopped_midway_leaves_the_old_database(copy: Path, v3: Path, monkeypatch):
    monkeypatch.setattr(schema, "BATCH", 7)
    want = v3_export(v3)

    def stop(u: Upgrade) -> None:
        if u.converted >= 21:  # the new log is half written
            raise Stopped

    with pytest.raises(Stopped):
        Store.open(copy, progress=stop)
    assert version_of(copy) == 3
    assert v3_export(copy) == want
    with Store.open(copy) as store:  # and the next open upgrades it in full
        assert store.schema_version() == SCHEMA_VERSION
        assert len(store.dump()["reviews"]) == 51


@pytest.mark.parametrize("step", ["converting", "drop", "index", "commit"])
def test_a_process_killed_midway_leaves_the_old_database(copy: Path, v3: Path, step: str):
    """A crash, not an exception: the process dies (no rollback, no close) right after a
    step of the upgrade, or with the new log half written ("converting": batches of 7 rows,
    the third written). Before the commit nothing of it may be seen; after it, all."""
    script = textwrap.dedent(
        f"""
        import os
        from prep.engine.store import schema
        from prep.engine.store import Store

        finished, converted = schema.UpgradeTracker.finished, schema.UpgradeTracker.converted

        def die_after(self, step):
            finished(self, step)
            if step == {step!r}:
                os._exit(9)

        def die_halfway(self, rows):
            converted(self, rows)
            if {step!r} == "converting" and self.converted_rows >= 21:
                os._exit(9)

        schema.BATCH = 7
        schema.UpgradeTracker.finished = die_after
        schema.UpgradeTracker.converted = die_halfway
        Store.open({str(copy)!r})
        """
    )
    run = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 9, run.stderr
    if step == "commit":  # committed: the upgraded database (the VACUUM did not happen)
        assert version_of(copy) == SCHEMA_VERSION
    else:
        assert version_of(copy) == 3
        assert v3_export(copy) == v3_export(v3)
    with Store.open(copy) as store:
        assert store.schema_version() == SCHEMA_VERSION
        assert len(store.dump()["reviews"]) == 51


# --- the command line ---------------------------------------------------------------------


def test_the_cli_shows_a_slow_upgrade_on_stderr(copy: Path, monkeypatch) -> None:
    # "slow" without waiting: every upgrade counts as slow, and every report gets a line
    monkeypatch.setattr(upgrade_line, "SHOW_AFTER_S", 0.0)
    monkeypatch.setattr(upgrade_line, "PLAIN_EVERY_S", 0.0)
    monkeypatch.setattr(schema, "BATCH", 7)
    result = CliRunner().invoke(main, ["--db", str(copy), "stats", "--json"])
    assert result.exit_code == 0, result.stderr
    lines = result.stderr.splitlines()
    progress = [x for x in lines if x.startswith("prep: upgrading the progress database")]
    assert progress[0] == (
        f"prep: upgrading the progress database (schema 3 → {SCHEMA_VERSION}): 0% of 51 reviews"
    )
    assert any("% of 51 reviews, ~" in x and x.endswith(" left") for x in progress)
    assert lines[-1].startswith(
        f"prep: upgraded the progress database (schema 3 → {SCHEMA_VERSION}, 51 reviews) in "
    )
    assert "upgrad" not in result.stdout  # stdout is the JSON alone
    assert version_of(copy) == SCHEMA_VERSION


def test_the_cli_says_nothing_for_a_fresh_database(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(upgrade_line, "SHOW_AFTER_S", 0.0)
    Store.open(tmp_path / "new.db").close()  # (stats only reads: it creates no database)
    result = CliRunner().invoke(main, ["--db", str(tmp_path / "new.db"), "stats", "--json"])
    assert result.exit_code == 0, result.stderr
    assert "upgrad" not in result.stderr


def report(fraction: float, elapsed: float, *, done: bool = False) -> Upgrade:
    return Upgrade(3, 7, 1_000_000, int(fraction * 1_000_000), fraction, elapsed, done)


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_quick_upgrade_shows_nothing() -> None:
    out = Tty()
    line = UpgradeLine(out)  # the default threshold
    for u in (report(0.0, 0.0), report(0.5, 0.3), report(1.0, 0.6, done=True)):
        line(u)
    assert out.getvalue() == ""


def test_on_a_terminal_the_line_is_redrawn_in_place(monkeypatch) -> None:
    monkeypatch.setattr(upgrade_line, "TTY_EVERY_S", 0.0)
    out = Tty()
    line = UpgradeLine(out, after=1.0)
    for u in (
        report(0.0, 0.0),
        report(0.41, 14.0),
        report(0.5, 17.0),
        report(1.0, 34.0, done=True),
    ):
        line(u)
    assert out.getvalue() == (
        "\r\x1b[Kprep: upgrading the progress database (schema 3 → 7): 41% of 1,000,000 reviews, ~20 s left"
        "\r\x1b[Kprep: upgrading the progress database (schema 3 → 7): 50% of 1,000,000 reviews, ~17 s left"
        "\r\x1b[Kprep: upgraded the progress database (schema 3 → 7, 1,000,000 reviews) in 34 s\n"
    )


def test_in_a_file_the_lines_are_sparse_and_plain() -> None:
    out = io.StringIO()
    line = UpgradeLine(out, after=1.0)
    for k in range(1, 100):  # a report every 0.1 s of a 10 s upgrade, written at once
        line(report(k / 100, k / 10))
    line(report(1.0, 10.0, done=True))
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue() and "\x1b" not in out.getvalue()
    assert lines[0].startswith("prep: upgrading the progress database (schema 3 → 7): 10% of")
    assert (
        lines[-1]
        == "prep: upgraded the progress database (schema 3 → 7, 1,000,000 reviews) in 10 s"
    )
    assert len(lines) == 2  # PLAIN_EVERY_S apart: none between (they came within 10 s)


def test_a_stream_that_cannot_encode_the_arrow_gets_ascii() -> None:
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="ascii")
    line = UpgradeLine(out, after=0.0)
    line(report(0.41, 14.0))
    out.flush()
    assert (
        raw.getvalue().decode().startswith("prep: upgrading the progress database (schema 3 -> 7)")
    )


# --- the app --------------------------------------------------------------------------------


@pytest.mark.usefixtures("utc_local_time")
def test_the_app_upgrades_behind_a_progress_screen(copy: Path, monkeypatch) -> None:
    from textual.widgets import ProgressBar, Static

    from prep.tui.app import PrepApp
    from prep.tui.screens.home import HomeScreen
    from prep.tui.screens.upgrade import UpgradeScreen

    monkeypatch.setattr(schema, "BATCH", 7)
    # the upgrade's thread waits after converting the log until the test has seen the screen
    gate = threading.Event()
    finished = schema.UpgradeTracker.finished

    def wait_then_finish(self, step: str) -> None:
        if step == "drop":
            gate.wait(timeout=30)
        finished(self, step)

    monkeypatch.setattr(schema.UpgradeTracker, "finished", wait_then_finish)
    app = PrepApp(db=str(copy))

    async def until(pilot, condition) -> None:
        for _ in range(600):
            if condition():
                return
            await pilot.pause(0.05)
        raise AssertionError("not reached in time")

    async def run() -> str:
        async with app.run_test(size=(100, 30)) as pilot:
            await until(
                pilot,
                lambda: (
                    isinstance(app.screen, UpgradeScreen)
                    and app.screen.query_one(ProgressBar).progress > 0
                ),
            )
            line = str(app.screen.query_one("#upgrade-line", Static).content)
            assert app.store is None  # nothing is read before the upgrade is done
            gate.set()
            await until(pilot, lambda: isinstance(app.screen, HomeScreen))
            await pilot.pause()
            assert app.store is not None and app.store.schema_version() == SCHEMA_VERSION
        return line

    line = asyncio.run(run())
    assert line.startswith(f"Upgrading the progress database (schema 3 → {SCHEMA_VERSION}): ")
    assert "% of 51 reviews" in line
    assert version_of(copy) == SCHEMA_VERSION


def test_states_that_do_not_fit_the_compact_log_are_kept_verbatim(copy: Path) -> None:
    """The conversion packs states without checking them first: one that does not fit the
    binary record (state 200, reps 2**65) is kept as its JSON text, as before."""
    import json

    conn = sqlite3.connect(copy, isolation_level=None)
    (nxt,) = conn.execute("SELECT next FROM reviews WHERE card_id = 'c-0000001'").fetchone()
    odd_next = json.dumps({**json.loads(nxt), "reps": 2**65})
    odd_prev = json.dumps({**json.loads(nxt), "state": 200})
    conn.execute(
        "INSERT INTO reviews (card_id, rating, reviewed_at, duration_ms, prev_state, prev, next) "
        "VALUES ('c-0000001', 3, '2026-03-03T09:00:00.000000Z', 100, 2, ?, ?)",
        (odd_prev, odd_next),
    )
    conn.close()
    want = v3_export(copy)
    with Store.open(copy) as store:
        got = [{k: r[k] for k in REVIEW_COLUMNS_V1} for r in store.dump()["reviews"]]
    assert got == want["reviews"]
    assert got[-1]["next"] == json.loads(odd_next) and got[-1]["prev"] == json.loads(odd_prev)


def test_a_line_cut_short_is_ended_before_what_follows() -> None:
    out = Tty()
    line = UpgradeLine(out, after=0.0)
    line(report(0.41, 14.0))
    line.close()  # the upgrade failed (a full disk) or was interrupted
    line.close()  # (once)
    assert out.getvalue().endswith(" left\n") and out.getvalue().count("\n") == 1
    done = Tty()
    line = UpgradeLine(done, after=0.0)
    line(report(1.0, 14.0, done=True))
    line.close()
    assert done.getvalue() == ""  # a quick upgrade: nothing was drawn, nothing to end
