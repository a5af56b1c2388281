"""An empty path (an unset shell variable: `prep sync "$DIR"`, `--db "$DB"`) is one line and
exit 2: it never falls back to the default database in the user data dir, nor to the current
folder (a journal written there, its YAML files read as decks), which the user did not name."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_read_only_commands import prep


def test_an_empty_db_path_is_refused_not_the_default_database(tmp_path: Path) -> None:
    home = tmp_path / "home"  # where the default database would be: nothing may appear
    env = {"HOME": str(home), "XDG_DATA_HOME": str(home / "data"), "PREP_DB": ""}
    for command in (["stats"], ["config", "new_per_day", "5"], ["quiz", "--plain"]):
        done = prep("--db", "", *command, env=env)
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip().splitlines() == [
            "prep: --db '': an empty path; name the database file, or leave --db out"
        ]
    assert not home.exists()


@pytest.mark.parametrize(
    "command",
    [
        ["sync", ""],
        ["--questions", "", "check"],
        ["check", ""],
        ["export", "-o", ""],
        ["import", ""],
        ["grade", "--rubric", "", "--answers", "a.jsonl"],
    ],
    ids=lambda c: " ".join(a or "''" for a in c),
)
def test_an_empty_path_is_refused_not_the_current_folder(tmp_path: Path, command) -> None:
    import subprocess
    import sys

    db = tmp_path / "p.db"
    prep("--db", str(db), "config", "new_per_day", "5")
    work = tmp_path / "cwd"  # the current folder: nothing may appear in it
    work.mkdir()
    (work / "deck.yaml").write_text("deck: stray\ncards: 3\n")  # not a deck: never read
    done = subprocess.run(
        [sys.executable, "-m", "prep.tui.cli", "--db", str(db), *command],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=work,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "an empty path" in lines[0], done.stderr
    assert sorted(p.name for p in work.iterdir()) == ["deck.yaml"]
