"""What a hostile pass over round ten found (hunt11): each test fails on the code before its fix."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from prep.tui.cli import main


def run_cli(db: Path, *args: str, input: str | None = None):
    return CliRunner().invoke(main, ["--db", str(db), *args], input=input)


def backups_of(db: Path) -> list[str]:
    folder = db.parent / "backups"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_an_empty_restore_name_is_refused_not_taken_as_a_new_backup(tmp_path: Path) -> None:
    """`prep backup --restore "$NAME"` with NAME unset made a backup and said so, exit 0: the
    user thought a restore had run."""
    db = tmp_path / "p.db"
    assert run_cli(db, "config", "new_per_day", "5").exit_code == 0
    before = backups_of(db)
    result = run_cli(db, "backup", "--restore", "")
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines() == [
        "prep: --restore '': an empty name; name a backup (see `prep backup --list`)"
    ]
    assert backups_of(db) == before  # nothing backed up, nothing restored


def test_list_and_restore_together_are_refused_not_half_done(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    assert run_cli(db, "backup").exit_code == 0
    (name,) = backups_of(db)
    result = run_cli(db, "backup", "--list", "--restore", name)
    assert result.exit_code == 2, result.output
    assert "give one of them" in result.output
