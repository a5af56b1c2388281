"""Round sixteen's hostile pass at the command line and the files prep writes: each test is a
finding, reproduced (it failed before its fix)."""

from __future__ import annotations

import os
import resource
import signal
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from prep.engine.store import Store, backup
from tests.test_sync import T0, rate


class _FullAfterCopy(sqlite3.Connection):
    """A backup copy's connection on a disk that fills up once the pages are copied (a
    600 KB tmpfs with 520 KB free did this to a 480 KB database): leaving WAL mode makes the
    copy's -wal and -shm, and SQLite cannot grow the -shm. Here a file size limit of 0 bytes
    refuses that write as a full disk does, from the mode change until the connection is
    closed (the disk stays full meanwhile)."""

    limit: tuple[int, int] | None = None

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:  # type: ignore[override]
        if sql.startswith("PRAGMA journal_mode") and self.limit is None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            self.limit = resource.getrlimit(resource.RLIMIT_FSIZE)
            resource.setrlimit(resource.RLIMIT_FSIZE, (0, self.limit[1]))
        return super().execute(sql, *args)

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self.limit is not None:
                resource.setrlimit(resource.RLIMIT_FSIZE, self.limit)
                signal.signal(signal.SIGXFSZ, signal.SIG_DFL)


def test_a_backup_that_fails_after_its_copy_leaves_no_side_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The half copy (.part) was removed, its -wal and -shm were not: two files left in
    backups/ for good (no sweep knew their names), after each failed backup or restore."""
    db = tmp_path / "p.db"
    real = sqlite3.connect

    def connect(target: object, *args: object, **kwargs: object) -> sqlite3.Connection:
        if str(target).endswith(".part"):
            kwargs["factory"] = _FullAfterCopy
        return real(target, *args, **kwargs)  # type: ignore[arg-type]

    with Store.open(db) as store:
        rate(store, "x", 3, T0)
        monkeypatch.setattr(backup.sqlite3, "connect", connect)
        with pytest.raises(backup.BackupError, match="cannot write a backup"):
            backup.make(store, "manual", datetime(2026, 3, 2, tzinfo=UTC))
        monkeypatch.undo()
        assert sorted(p.name for p in backup.folder(db).iterdir()) == []
        assert backup.make(store, "manual", datetime(2026, 3, 2, tzinfo=UTC)) is not None


def test_a_killed_backups_side_files_are_swept_with_its_half_copy(tmp_path: Path) -> None:
    """A prep killed while its copy's -wal/-shm were open left them beside the .part; the
    sweep removed only the .part. Now the side files of a stale half copy go too (a fresh
    one's stay: another prep may be writing it now), and no other file is touched."""
    db = tmp_path / "p.db"
    with Store.open(db) as store:
        rate(store, "x", 3, T0)
        where = backup.folder(db)
        where.mkdir(parents=True)
        stale = "p.db.20260301-000000-000000-daily.db.part"
        fresh = "p.db.20260301-000001-000000-daily.db.part"
        names = [f"{n}{s}" for n in (stale, fresh) for s in ("", "-wal", "-shm", "-journal")]
        names += ["notes.txt.part-wal", "p.db.20260301-000000-000000-daily.db-wal"]
        old = time.time() - backup.STALE_PART - 60
        for name in names:
            (where / name).write_bytes(b"half")
            if not name.startswith(fresh):
                os.utime(where / name, (old, old))
        made = backup.make(store, "manual", datetime(2026, 3, 2, tzinfo=UTC))
        assert made is not None
    left = sorted(p.name for p in where.iterdir() if p != made)
    assert left == sorted(n for n in names if not n.startswith(stale))


def test_a_dangling_link_is_said_to_lead_to_a_missing_folder_not_to_miss_its_own(
    tmp_path: Path,
) -> None:
    """`prep export -o LINK` where LINK leads into a folder that does not exist said `no folder
    .` (the link's own folder, which is there); it names where the link leads."""
    from prep.engine.transfer.atomic import WriteError, write_files

    link = tmp_path / "out.json"
    link.symlink_to(tmp_path / "gone" / "x.json")
    with pytest.raises(WriteError) as info:
        write_files({link: "x"})
    said = str(info.value)
    assert said.endswith(
        f"leads to {tmp_path / 'gone' / 'x.json'}, and there is no folder {tmp_path / 'gone'}"
    )
    assert "\n" not in said
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


@pytest.mark.parametrize("fmt", ["json", "csv", "apkg"])
def test_export_says_a_name_with_control_characters_escaped_on_one_line(
    tmp_path: Path, fmt: str
) -> None:
    """`prep export -o NAME` printed NAME raw in its Wrote line: a newline in it split the line
    and an escape sequence reached the terminal (every other command, `prep backup`, `import`,
    `demo --plot`, `check`, `sync`, writes it as \\x07 and \\n)."""
    from click.testing import CliRunner

    from prep.tui.cli import main

    db = tmp_path / "p.db"
    with Store.open(db) as store:
        rate(store, "x", 3, T0)
    folder = tmp_path / "odd\x07\nname"
    folder.mkdir()
    out = folder / f"x.{fmt}"
    done = CliRunner().invoke(main, ["--db", str(db), "export", "--format", fmt, "-o", str(out)])
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    assert "\x07" not in done.output
    assert "odd\\x07\\nname" in lines[1 if fmt == "csv" else 0]
    assert len(lines) == (7 if fmt == "csv" else 1)  # (csv: a count, then one file a line)
    assert out.exists()


def test_a_database_whose_version_row_is_gone_is_said_damaged_and_export_still_reads_it(
    tmp_path: Path,
) -> None:
    """A prep database with its schema_version row deleted (by hand, a bad tool) was taken for a
    new one: every command reran the migrations on its tables and failed with SQLite's "views may
    not be indexed", `prep export` (the way out a damaged version names) included. Now it is
    refused as a version that is not one prep wrote, and export (and stats) read it."""
    import json

    from click.testing import CliRunner

    from prep.tui.cli import main

    db = tmp_path / "p.db"
    with Store.open(db) as store:
        rate(store, "x", 3, T0)
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM meta WHERE key = 'schema_version'")
    before = db.read_bytes()
    for args in (["quiz", "--plain"], ["config", "new_per_day", "3"], ["backup"]):
        done = CliRunner().invoke(main, ["--db", str(db), *args], input="")
        assert done.exit_code == 2, done.output
        assert "schema version" in done.output and "views" not in done.output, done.output
    shown = CliRunner().invoke(main, ["--db", str(db), "stats"])  # (a reader, as export)
    assert shown.exit_code == 0 and "total 1" in shown.output, shown.output
    out = tmp_path / "rescue.json"
    done = CliRunner().invoke(main, ["--db", str(db), "export", "--format", "json", "-o", str(out)])
    assert done.exit_code == 0, done.output
    assert [r["card_id"] for r in json.loads(out.read_text())["reviews"]] == ["x"]
    assert db.read_bytes() == before


def test_a_deeply_nested_rubric_or_answer_line_is_one_line_not_an_internal_error(
    tmp_path: Path,
) -> None:
    """`prep grade --rubric R.yaml --answers A.jsonl`: a rubric of 19,000 nested brackets (38 KB,
    well under its 1 MB cap) or an answers line of nested arrays ended in "internal error
    (RecursionError ...)", exit 70; each is now a line naming the file, as every other bad
    input of grade is (the deck and import readers already said "nested too deeply")."""
    from prep.demos.pretrained.grader import batch
    from prep.demos.pretrained.grader.rubric import RubricError, load_rubric

    rubric = tmp_path / "r.yaml"
    rubric.write_text("question: q\npoints: " + "[" * 19_000 + "]" * 19_000 + "\n")
    with pytest.raises(RubricError) as info:
        load_rubric(rubric)
    assert str(info.value) == f"{rubric}: nested too deeply to be a rubric"
    answers = tmp_path / "a.jsonl"
    deep = "[" * 100_000 + "]" * 100_000
    answers.write_text(
        '{"answer_id": 1, "answer": "ok"}\n{"answer_id": 2, "answer": ' + deep + "}\n"
    )
    with pytest.raises(RubricError) as info:
        batch.read_answers(answers)
    assert str(info.value) == f"{answers}:2: not a JSON object (nested too deeply)"


def test_a_plot_through_a_link_into_a_missing_folder_is_refused_before_the_demo_runs(
    tmp_path: Path,
) -> None:
    """`prep demo NAME --plot LINK.svg`, LINK leading into a folder that does not exist: the
    check before the run looked at the link's own folder (there), so the demo ran whole (minutes
    at --scale large) and then failed to write with a bare "No such file or directory"."""
    from tests.test_read_only_commands import prep

    link = tmp_path / "figure.svg"
    link.symlink_to(tmp_path / "gone" / "figure.svg")
    done = prep("--db", str(tmp_path / "p.db"), "demo", "no-wo", "--no-plot", "--plot", str(link))
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines == [
        f"prep demo: error: --plot {link}: it leads to {tmp_path / 'gone' / 'figure.svg'}, "
        f"and there is no folder {tmp_path / 'gone'}"
    ]
    assert done.stdout == ""  # (refused before the demo ran: no report)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["figure.svg"]
    loop = tmp_path / "loop.svg"  # (and a loop is one line too, not a RuntimeError)
    loop.symlink_to(loop)
    done = prep("--db", str(tmp_path / "p.db"), "demo", "no-wo", "--no-plot", "--plot", str(loop))
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert done.stderr.strip() == f"prep demo: error: --plot {loop}: a symbolic link loop"


def test_a_sync_dir_that_is_a_link_loop_is_one_line(tmp_path: Path) -> None:
    """`prep config sync_dir LOOP` (a symbolic link to itself) was "internal error (RuntimeError:
    Symlink loop ...)", exit 70; `prep sync LOOP` already said it in one line."""
    from click.testing import CliRunner

    from prep.tui.cli import main

    loop = tmp_path / "Sync"
    loop.symlink_to(loop)
    db = tmp_path / "p.db"
    done = CliRunner().invoke(main, ["--db", str(db), "config", "sync_dir", str(loop)])
    assert done.exit_code == 2, done.output
    assert done.output.strip() == f"prep: sync_dir: {loop}: a symbolic link loop; nothing changed"
    assert not db.exists()


def test_a_database_whose_name_is_not_utf8_imports_and_restores(tmp_path: Path) -> None:
    """A database named with a byte that is not UTF-8 (`--db $'\\xff.db'`) studies, syncs and
    backs up, but `prep import` and `prep backup --restore` were "internal error
    (UnicodeEncodeError ...)", exit 70: the read-only URI SQLite opens it by was quoted as UTF-8
    text. The URI now carries the name's own bytes."""
    from click.testing import CliRunner

    from prep.tui.cli import main

    db = tmp_path / os.fsdecode(b"\xff.db")
    with Store.open(db) as store:
        rate(store, "x", 3, T0)
    run = CliRunner().invoke
    export = tmp_path / "e.json"
    assert (
        run(main, ["--db", str(db), "export", "--format", "json", "-o", str(export)]).exit_code == 0
    )
    assert run(main, ["--db", str(db), "backup"]).exit_code == 0
    done = run(main, ["--db", str(db), "import", str(export)])
    assert done.exit_code == 0 and "Imported" in done.output, done.output
    name = next(p.name for p in backup.folder(db).iterdir() if p.name.endswith("-manual.db"))
    done = run(main, ["--db", str(db), "backup", "--restore", name])
    assert done.exit_code == 0 and done.output.startswith("restored \\xff.db."), done.output
    with Store.open(db) as store:
        assert store.conn.execute("SELECT count(*) FROM revlog").fetchone() == (1,)
