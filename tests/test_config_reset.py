"""`prep config --reset` cleared tuned FSRS parameters and the interview plan without asking and
without a backup (found by hunt11): now it asks on a terminal (as `prep optimize` does), is
refused off one without --yes (one line, exit 2), backs the database up, and says what it
cleared."""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from fsrs.scheduler import DEFAULT_PARAMETERS

from prep.engine.store import Store, backup
from prep.engine.study.scheduler import Settings
from prep.tui.cli import main

TUNED = [0.4321, *list(DEFAULT_PARAMETERS)[1:]]  # (a fit differs from the defaults)


def _tuned(db: Path) -> None:
    with Store.open(db) as store:
        store.update_settings(parameters=TUNED, interview_date="2026-12-20", new_per_day=5)


def _settings(db: Path) -> Settings:
    with Store.open(db) as store:
        return store.settings()


def run(db: Path, *args: str, input: str | None = None):
    return CliRunner().invoke(main, ["--db", str(db), "config", "--reset", *args], input=input)


def test_off_a_terminal_reset_is_refused_without_yes_and_nothing_is_cleared(
    tmp_path: Path,
) -> None:
    db = tmp_path / "p.db"
    _tuned(db)
    for given in (None, "y\n"):  # piped input is not an answer: a script says --yes
        result = run(db, input=given)
        assert result.exit_code == 2, result.output
        (line,) = result.output.strip().splitlines()
        assert line.startswith("prep: --reset would clear new_per_day 5; parameters (")
        assert "interview_date 2026-12-20" in line and "new_per_day 5" in line
        assert line.endswith("add --yes to reset")
    assert list(_settings(db).parameters or ()) == TUNED
    assert backup.listing(db) == []


def test_yes_resets_backs_up_first_and_says_what_it_cleared(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    _tuned(db)
    result = run(db, "--yes")
    assert result.exit_code == 0, result.output
    assert "parameters (the FSRS parameters fitted or set for you)" in result.output
    assert "settings reset to their defaults; cleared: new_per_day 5;" in result.output
    assert "interview_date 2026-12-20" in result.output
    assert _settings(db) == Settings()
    (saved,) = backup.listing(db)
    assert saved.name in result.output
    with sqlite3.connect(saved) as conn:  # the tuned parameters are in the backup
        text = conn.execute("SELECT value FROM meta WHERE key = 'settings'").fetchone()[0]
    assert "2026-12-20" in text and "0.4321" in text


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("answer", "reset"), [("n\n", False), ("\n", False), ("y\n", True)])
def test_on_a_terminal_it_asks_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answer: str, reset: bool
) -> None:
    import sys

    db = tmp_path / "p.db"
    _tuned(db)
    from prep.tui.commands.config import _reset

    monkeypatch.setattr(sys, "stdin", _Tty(answer))
    with Store.open(db) as store:
        _reset(store, yes=False)
    assert (_settings(db) == Settings()) is reset
    assert len(backup.listing(db)) == int(reset)


def test_defaults_already_nothing_to_ask_and_yes_alone_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    result = run(db)
    assert result.exit_code == 0, result.output
    assert "already at their defaults; nothing changed" in result.output
    alone = CliRunner().invoke(main, ["--db", str(db), "config", "--yes"])
    assert alone.exit_code == 2 and "--yes goes with --reset" in alone.output
