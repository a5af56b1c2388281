"""`prep demo NAME --plot FILE.svg` never writes the figure over the progress database or a
file SQLite keeps beside it (a symlink or a hard link named .svg): refused in one line, exit
2, before the demo runs, the database untouched, as `prep export -o` is refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from prep.engine.store import Store
from tests.test_read_only_commands import prep


@pytest.mark.parametrize("how", ["symlink", "hard link", "wal symlink", "equals"])
def test_plot_over_the_database_is_refused(tmp_path: Path, how: str) -> None:
    db = tmp_path / "p.db"
    assert prep("--db", str(db), "config", "new_per_day", "7").returncode == 0
    before = db.read_bytes()
    svg = tmp_path / "figure.svg"
    if how == "hard link":
        os.link(db, svg)
    else:
        svg.symlink_to(db.with_name("p.db-wal") if how == "wal symlink" else db)
    arg = ["--plot=" + str(svg)] if how == "equals" else ["--plot", str(svg)]
    done = prep("--db", str(db), "demo", "no-wo", *arg)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "the progress database's own file" in lines[0], done.stderr
    assert db.read_bytes() == before
    with Store.open(db) as store:
        assert store.settings().new_per_day == 7
