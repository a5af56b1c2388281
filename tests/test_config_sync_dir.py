"""`prep config sync_dir`: set, shown, cleared with `none` (as interview_date is), never a
folder named "none" or the current folder, and a file is refused in one line."""

from __future__ import annotations

from pathlib import Path

from prep.engine.store import Store
from tests.test_read_only_commands import prep


def _saved(db: Path) -> str | None:
    with Store.open(db) as store:
        return store.get_meta("sync_dir")


def test_sync_dir_is_set_then_cleared_with_none(tmp_path: Path) -> None:
    db, folder = tmp_path / "p.db", tmp_path / "Sync"
    folder.mkdir()
    done = prep("--db", str(db), "config", "sync_dir", str(folder))
    assert done.returncode == 0, done.stderr
    assert _saved(db) == str(folder)
    for clear in ("none", "None"):  # (an empty value is refused: test_config_empty.py)
        prep("--db", str(db), "config", "sync_dir", str(folder))
        done = prep("--db", str(db), "config", "sync_dir", clear)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "sync_dir = none"
        assert _saved(db) is None  # not <cwd>/none, not the current folder
    status = prep("--db", str(db), "sync", "--status")
    assert "folder: none" in status.stdout


def test_a_folder_not_made_yet_is_kept(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    done = prep("--db", str(db), "config", "sync_dir", str(tmp_path / "later"))
    assert done.returncode == 0, done.stderr
    assert _saved(db) == str(tmp_path / "later")
    assert not (tmp_path / "later").exists()  # config makes no folder


def test_a_file_is_not_a_sync_folder(tmp_path: Path) -> None:
    db, file = tmp_path / "p.db", tmp_path / "notes.txt"
    file.write_text("x")
    prep("--db", str(db), "config", "new_per_day", "5")
    done = prep("--db", str(db), "config", "sync_dir", str(file))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "not a folder" in lines[0] and str(file) in lines[0]
    assert _saved(db) is None
