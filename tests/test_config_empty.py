"""`prep config KEY ""` (what `"$UNSET_VAR"` gives) is refused in one line, exit 2, naming how to
clear the setting on purpose; nothing saved changes. sync_dir too (round 16: `prep config sync_dir
"$DIR"` with DIR unset cleared it, and every background sync stopped without a word, against
README's "never with an empty value")."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from prep.engine.store import Store
from prep.engine.study.scheduler import Settings
from prep.tui.cli import main

# a date `prep config` takes: from today to a year ahead (plan.date_problem)
SOON = (date.today() + timedelta(days=40)).isoformat()


def config(db: Path, *args: str):
    return CliRunner().invoke(main, ["--db", str(db), "config", *args])


def saved(db: Path) -> Settings:
    with Store.open(db) as store:
        return store.settings()


@pytest.mark.parametrize(
    ("key", "value", "clear"),
    [
        ("interview_date", SOON, "none"),
        ("plan_decks", "wo-core", "all"),
        ("learning_steps_min", "2,20", "none"),
        ("relearning_steps_min", "15", "none"),
    ],
)
@pytest.mark.parametrize("empty", ["", "  ", ",", " , "])
def test_an_empty_value_is_refused_naming_how_to_clear(
    tmp_path: Path, key: str, value: str, clear: str, empty: str
) -> None:
    db = tmp_path / "p.db"
    assert config(db, key, value).exit_code == 0
    before = saved(db)
    done = config(db, key, empty)
    assert done.exit_code == 2, done.output
    lines = done.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"prep: {key}: "), done.output
    assert f"prep config {key} {clear}" in lines[0]  # how to clear it on purpose
    assert "Traceback" not in done.output
    assert saved(db) == before  # nothing changed


@pytest.mark.parametrize(
    ("key", "value", "clear", "cleared"),
    [
        ("interview_date", SOON, "none", None),
        ("plan_decks", "wo-core", "all", None),
        ("learning_steps_min", "2,20", "none", ()),
    ],
)
def test_the_named_way_clears_on_purpose(
    tmp_path: Path, key: str, value: str, clear: str, cleared: object
) -> None:
    db = tmp_path / "p.db"
    assert config(db, key, value).exit_code == 0
    done = config(db, key, clear)
    assert done.exit_code == 0, done.output
    assert getattr(saved(db), key) == cleared


@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_sync_dir_is_refused_and_none_still_clears_it(tmp_path: Path, value: str) -> None:
    db = tmp_path / "p.db"
    assert config(db, "sync_dir", str(tmp_path)).exit_code == 0
    done = config(db, "sync_dir", value)
    assert done.exit_code == 2, done.output
    said = done.output.strip()
    assert "\n" not in said and "empty value" in said and "prep config sync_dir none" in said
    assert config(db, "sync_dir").output.strip() == f"sync_dir = {tmp_path}"  # (kept)
    done = config(db, "sync_dir", "none")
    assert done.exit_code == 0 and done.output.strip() == "sync_dir = none"


def test_an_empty_sync_dir_makes_no_database(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    assert config(db, "sync_dir", "").exit_code == 2
    assert not db.exists()
