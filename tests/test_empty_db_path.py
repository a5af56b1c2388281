"""`--db ''` (an unset shell variable, `--db "$DB"`) is one line and exit 2: it never falls back
to the default database in the user data dir, which the user did not name."""

from __future__ import annotations

from pathlib import Path

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
