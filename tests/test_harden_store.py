"""Your own database as a target: an export never writes over the progress database or its
SQLite files; the rescue export reads every committed review, WAL included, from a read-only
folder; ':memory:' and another program's SQLite file are refused; every commit is synced."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from prep.engine.store import Store
from tests.test_cli_boundary import _without_root_override, one_line, prep, run_as

RATE_AND_DIE = textwrap.dedent(
    """
    import os, sys
    from prep.engine.decks.deckcache import load_collection
    from prep.engine.study.scheduler import Rating
    from prep.engine.study.session import ReviewSession
    from prep.engine.store import Store

    store = Store.open(sys.argv[1])
    store.conn.execute("PRAGMA wal_autocheckpoint = 0")  # the commits stay in the WAL
    session = ReviewSession(store, load_collection([sys.argv[2]]), requeue=False)
    for _ in range(int(sys.argv[3])):
        session.rate(Rating.Good, duration_ms=500)
    os._exit(0)  # no close, no checkpoint: the reviews are only in p.db-wal
    """
)


def rate_into_wal(db: Path, decks: Path, n: int) -> None:
    done = subprocess.run(
        [sys.executable, "-c", RATE_AND_DIE, str(db), str(decks), str(n)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert Path(f"{db}-wal").stat().st_size > 0


def count_reviews(db: Path) -> int:
    with Store.open(db) as store:
        return store.count_reviews()


@pytest.mark.parametrize("name", ["{db}", "{db}-wal", "{db}-shm", "{db}-journal", "link", "hard"])
@pytest.mark.parametrize("fmt", ["json", "csv", "apkg"])
def test_export_over_the_progress_database_is_refused(
    tmp_path: Path, small_deck_dir: Path, name: str, fmt: str
) -> None:
    db = tmp_path / "p.db"
    rate_into_wal(db, small_deck_dir, 3)
    if name == "link":
        target = tmp_path / "elsewhere.db"
        target.symlink_to(db)
    elif name == "hard":
        target = tmp_path / "same.db"
        os.link(db, target)
    else:
        target = Path(name.format(db=db))
    before = db.read_bytes()
    done = prep(
        db, "--questions", str(small_deck_dir), "export", "--format", fmt, "-o", str(target)
    )
    assert done.returncode == 2
    line = one_line(done.stderr)
    assert "progress database's own file" in line and str(target) in line, line
    assert db.read_bytes() == before
    assert count_reviews(db) == 3


def test_a_csv_export_whose_side_file_is_the_database_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "p.cards.csv"  # FILE.csv's cards go to p.cards.csv
    Store.open(db).close()
    before = db.read_bytes()
    done = prep(db, "export", "--format", "csv", "-o", str(tmp_path / "p.csv"))
    assert done.returncode == 2 and "own file" in one_line(done.stderr)
    assert db.read_bytes() == before and not (tmp_path / "p.csv").exists()


def test_rescue_export_from_a_read_only_folder_reads_the_wal(small_deck_dir: Path) -> None:
    folder = Path(tempfile.mkdtemp(prefix="prep-ro-wal-"))  # reachable by everyone
    out_dir = Path(tempfile.mkdtemp(prefix="prep-out-"))
    try:
        folder.chmod(0o755)
        out_dir.chmod(0o777)
        db = folder / "p.db"
        rate_into_wal(db, small_deck_dir, 4)
        Path(f"{db}-shm").unlink()  # as after a copy or a reboot: no WAL index
        for f in folder.iterdir():
            f.chmod(0o444)
        folder.chmod(0o555)
        out = out_dir / "rescue.json"
        done = run_as(_without_root_override(), db, "export", "-o", str(out), env={})
        assert done.returncode == 0, done.stderr
        assert re.search(r": 4 reviews and \d+ card states?\.$", done.stdout.strip()), done.stdout
        assert len(json.loads(out.read_text())["reviews"]) == 4
        done = run_as(_without_root_override(), db, "stats", "--json", env={})
        assert done.returncode == 0 and json.loads(done.stdout)["reviews"]["total"] == 4, (
            done.stdout
        )
        assert sorted(p.name for p in folder.iterdir()) == ["p.db", "p.db-wal"]  # untouched
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(out_dir, ignore_errors=True)


@pytest.mark.parametrize("value", [":memory:", "file::memory:?cache=shared"])
def test_a_database_that_keeps_nothing_is_refused(tmp_path: Path, value: str) -> None:
    for args, env in (([], {"PREP_DB": value}), (["--db", value], {})):
        done = subprocess.run(
            [sys.executable, "-m", "prep.tui.cli", *args, "stats"],
            capture_output=True,
            text=True,
            env={**os.environ, **env},
            cwd=tmp_path,
            timeout=120,
        )
        assert done.returncode == 2
        assert "names no file" in one_line(done.stderr)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("tables", [["notes"], ["meta"], ["meta", "cards"]])
def test_another_programs_sqlite_file_is_refused_untouched(tmp_path: Path, tables: list) -> None:
    other = tmp_path / "other.sqlite"
    conn = sqlite3.connect(other)
    for table in tables:
        conn.execute(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, body TEXT)")
        conn.execute(f"INSERT INTO {table} (body) VALUES ('theirs')")
    conn.commit()
    conn.close()
    before = other.read_bytes()
    for args in (["stats"], ["export", "-o", str(tmp_path / "x.json")], ["config"]):
        done = prep(other, *args)
        assert done.returncode == 2, done
        assert "another program's SQLite database" in one_line(done.stderr)
    assert other.read_bytes() == before  # no prep tables, not switched to WAL
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.sqlite"]


def test_every_commit_is_synced(tmp_path: Path) -> None:
    with Store.open(tmp_path / "p.db") as store:
        # 2 = FULL: in WAL mode each commit syncs the WAL (NORMAL, 1, leaves it to a checkpoint)
        assert store.conn.execute("PRAGMA synchronous").fetchone()[0] == 2
        assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
