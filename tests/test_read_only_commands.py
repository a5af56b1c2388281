"""Commands that only read the progress database never create one, nor a folder above it: a
mistyped --db (or PREP_DB) is one line and exit 2, and nothing appears on disk."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from prep.engine.store import Store, StoreError

READERS = [
    ["stats"],
    ["stats", "--json"],
    ["export", "-o", "{out}/e.json"],
    ["export", "--format", "csv", "-o", "{out}/e.csv"],
    ["sync", "--status"],
    ["backup", "--list"],
    ["marks"],
    ["config"],
    ["config", "new_per_day"],
    ["cram"],
    ["check"],
]


def prep(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "prep.tui.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.parametrize("command", READERS, ids=" ".join)
def test_a_reading_command_creates_no_database_and_no_folder(
    tmp_path: Path, command: list[str]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    db = tmp_path / "nonexistent" / "deeper" / "x.db"
    done = prep("--db", str(db), *[a.format(out=out) for a in command])
    assert not (tmp_path / "nonexistent").exists(), "a folder was created"
    assert list(out.iterdir()) == []
    if command[0] in ("cram", "check", "config"):  # they need no progress: they still work
        assert done.returncode == 0, done.stderr
        return
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert lines[0] == (
        f"prep: {db}: no progress database here (nothing to read; a review with `prep quiz` "
        "creates it, or name yours with --db PATH or PREP_DB)"
    )


def test_prep_db_from_the_environment_is_not_created_either(tmp_path: Path) -> None:
    db = tmp_path / "gone" / "p.db"
    done = prep("stats", env={"PREP_DB": str(db)})
    assert done.returncode == 2 and not (tmp_path / "gone").exists()


def test_the_store_refuses_reading_what_is_not_there_and_writing_creates_it(
    tmp_path: Path,
) -> None:
    db = tmp_path / "a" / "p.db"
    with pytest.raises(StoreError) as caught:
        Store.open(db, reading=True)
    assert caught.value.kind == "missing" and not db.parent.exists()
    Store.open(db).close()  # a command that writes (quiz, import) creates it, folder and all
    with Store.open(db, reading=True) as store:  # and then it reads
        assert store.settings() is not None
    dangling = tmp_path / "link.db"
    dangling.symlink_to(tmp_path / "missing-target.db")
    with pytest.raises(StoreError):  # a dangling link: not created through the link
        Store.open(dangling, reading=True)
    assert not (tmp_path / "missing-target.db").exists()


@pytest.mark.parametrize("command", [["stats"], ["stats", "--json"], ["marks"]], ids=" ".join)
def test_a_new_installation_shows_empty_progress_and_creates_nothing(
    tmp_path: Path, command: list[str]
) -> None:
    """Before the first quiz the default database does not exist: stats and marks show an
    empty history (a line on stderr says why) and leave the data folder uncreated."""
    env = {"HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "share"), "PREP_DB": ""}
    done = prep(*command, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("prep: nothing studied yet (") and done.stderr.count("\n") == 1
    assert not (tmp_path / "share").exists() and sorted(tmp_path.iterdir()) == []
    if command == ["stats", "--json"]:
        import json

        assert json.loads(done.stdout)["reviews"]["total"] == 0
