"""Round sixteen's polish: the small things the hostile pass left (report_hostile16.md,
"Noticed, left alone"). Each test failed before its fix."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from prep.engine.textsafe import one_line_safe, quoted, quoted_all
from prep.tui.cli import main

ODD = os.fsdecode(b"d\xffe")  # an argument with a byte that is not UTF-8: Python holds \udcff


def test_quoted_writes_a_byte_that_is_not_utf8_as_one_line_safe_does() -> None:
    assert quoted(ODD) == "'d\\xffe'" and one_line_safe(ODD) == "d\\xffe"
    assert quoted("a\\udcff") == "'a\\\\udcff'"  # a typed backslash stays a typed backslash
    assert quoted("\x1b[31m") == "'\\x1b[31m'" and quoted("it's") == '"it\'s"'
    assert quoted_all(["a", ODD]) == "'a', 'd\\xffe'"
    # cut short: the quote closed, then "…" (round 17: journal._cut's form, one for both)
    assert quoted(os.fsdecode(b"\xff" * 100)) == "'" + "\\xff" * 14 + "'…"
    assert quoted("x" * 100) == "'" + "x" * 57 + "'…" and len(quoted("x" * 100)) == 60


@pytest.mark.parametrize(
    "args",
    [
        ["cram", "--deck", ODD],
        ["quiz", "--plain", "--deck", ODD],
        ["export", "--format", "apkg", "--deck", ODD, "-o", str(Path("/tmp/polish16-x.apkg"))],
        ["config", "plan_decks", f"small,{ODD}"],
        ["stats", "--since", ODD],
        ["config", ODD, "1"],
        ["config", "parameters", ODD],
        ["config", "new_per_day", ODD],
        ["grade", ODD],
        ["backup", "--restore", ODD],
    ],
    ids=[
        "cram",
        "quiz",
        "export",
        "plan_decks",
        "since",
        "key",
        "parameters",
        "setting",
        "grade",
        "restore",
    ],
)
def test_a_value_that_is_not_utf8_is_quoted_as_its_byte(
    args: list[str], small_deck_dir: Path, tmp_path: Path
) -> None:
    """`cram --deck $'d\\xffe'` said "no deck named 'd\\udcffe'", where sync and export write
    the byte as \\xff: every message that quotes a user's value now quotes it alike."""
    db = tmp_path / "p.db"
    CliRunner().invoke(main, ["--db", str(db), "config", "new_per_day", "20"])  # (a database)
    done = CliRunner().invoke(main, ["--db", str(db), "--questions", str(small_deck_dir), *args])
    assert done.exit_code == 2, done.output
    assert "udc" not in done.stderr and "'d\\xffe'" in done.stderr, done.stderr


# --- counts and their nouns: one helper (engine/words.count) -----------------------------------


def test_one_review_is_one_review_not_1_reviews() -> None:
    """`prep optimize` on a log of one review said "1 reviews in all"; the progress lines of
    an upgrade and of a deck cache fill, and a one-point rubric's verdict ("1 of 1
    points") counted the same way."""
    from datetime import UTC, datetime

    import fsrs

    from prep.engine.decks.fill import DONE, Fill
    from prep.engine.decks.fill import describe as fill_line
    from prep.engine.store.schema import Upgrade
    from prep.engine.study import optimize as opt
    from prep.tui.upgrade import describe

    one = [fsrs.ReviewLog(0, fsrs.Rating.Good, datetime(2026, 1, 1, tzinfo=UTC), None)]
    with pytest.raises(opt.OptimizeError) as refused:
        opt.check_enough(one)
    assert "; 1 review in all)" in str(refused.value), refused.value
    upgrade = Upgrade(3, 17, reviews=1, converted=1, fraction=1.0, elapsed=0.1, done=True)
    assert "(schema 3 → 17, 1 review)" in describe(upgrade)
    assert " of 1 review," in describe(Upgrade(3, 17, 1, 0, 0.5, 1.0)) + ","
    fill = Fill(files_total=1, bytes_total=10, cards=1, stage=DONE)
    assert fill_line(fill).startswith("read 1 card from 1 deck file into the cache")
    fill = Fill(files_total=1, bytes_total=10, cards=1, file="a.yaml")
    assert ", 1 card so far" in fill_line(fill)
    from prep.demos.pretrained.grader.rubric import Grade, PointVerdict
    from prep.tui.grading import verdict_lines, verdict_text

    graded = Grade([PointVerdict("p", "the one point", True, 0.9, "it")])
    assert verdict_lines(graded, 3)[0] == "1 of 1 point covered"
    assert verdict_text(graded).plain.startswith("Your answer covers 1 of 1 point\n")


@pytest.mark.parametrize("tz", ["UTC", "Pacific/Kiritimati", "America/Adak"])
def test_since_out_of_range_says_the_range(
    tz: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`stats --since 0001-01-01` said "is not a date": it is one, with no local midnight in
    range. The line now says the range, whose ends work in every time zone."""
    import time

    monkeypatch.setenv("TZ", tz)
    time.tzset()
    try:
        db = ["--db", str(tmp_path / "p.db")]
        assert CliRunner().invoke(main, [*db, "config", "new_per_day", "20"]).exit_code == 0
        done = CliRunner().invoke(main, [*db, "stats", "--since", "0001-01-01"])
        assert done.exit_code == 2
        assert done.stderr == (
            "prep: --since '0001-01-01' is out of range: give a date from 0001-01-02 to 9999-12-30\n"
        )
        for end in ("0001-01-02", "9999-12-30"):
            assert CliRunner().invoke(main, [*db, "stats", "--since", end]).exit_code == 0, end
        done = CliRunner().invoke(main, [*db, "stats", "--since", "2026-02-30"])
        assert (
            done.exit_code == 2
            and "'2026-02-30' is not a date (expected YYYY-MM-DD)" in done.stderr
        )
    finally:
        monkeypatch.undo()
        time.tzset()


def test_parameters_out_of_bounds_are_one_short_line(tmp_path: Path) -> None:
    """`config parameters` with 21 NaNs was one line of 1,153 characters (233 now) (each parameter and
    its bounds): the first three are named, the rest counted."""
    db = ["--db", str(tmp_path / "p.db")]
    done = CliRunner().invoke(main, [*db, "config", "parameters", " ".join(["nan"] * 21)])
    assert done.exit_code == 2
    assert done.stderr == (
        "prep: parameters: One or more parameters are out of bounds: parameters[0] = nan is out "
        "of bounds: (0.001, 100.0); parameters[1] = nan is out of bounds: (0.001, 100.0); "
        "parameters[2] = nan is out of bounds: (0.001, 100.0); and 18 more\n"
    )
    done = CliRunner().invoke(main, [*db, "config", "parameters", "1 2"])
    assert (
        done.exit_code == 2 and done.stderr == "prep: parameters: Expected 21 parameters, got 2.\n"
    )
    assert not (tmp_path / "p.db").exists()


# --- a full disk ------------------------------------------------------------------------------


class _NoRoomForTheShm(sqlite3.Connection):
    """The connection SQLite makes on a full disk: the database opens, but entering WAL mode
    cannot make its -shm ("disk I/O error", SQLITE_IOERR_SHMOPEN), as on a full tmpfs."""

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:  # type: ignore[override]
        if sql.startswith("PRAGMA journal_mode"):
            exc = sqlite3.OperationalError("disk I/O error")
            exc.sqlite_errorcode = 4618  # type: ignore[attr-defined]
            raise exc
        return super().execute(sql, *args)


@pytest.mark.parametrize("free_blocks", [0, 100, 10_000])
def test_a_full_disk_at_open_is_said_so(
    free_blocks: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk at open said `cannot open the progress database: disk I/O error`: an I/O
    error with under 1 MiB free in the database's folder now says the disk is full, naming
    the folder; with room left, SQLite's own words stay (another I/O error)."""
    from prep.engine.store import core, dbfile

    db = tmp_path / "p.db"
    assert CliRunner().invoke(main, ["--db", str(db), "config", "new_per_day", "20"]).exit_code == 0
    real, statvfs = sqlite3.connect, os.statvfs

    def connect(target: object, *args: object, **kwargs: object) -> sqlite3.Connection:
        if str(target) == str(db):
            kwargs["factory"] = _NoRoomForTheShm
        return real(target, *args, **kwargs)  # type: ignore[arg-type]

    def full(path: object) -> os.statvfs_result:
        fs = statvfs(path)  # type: ignore[arg-type]
        if Path(path) != tmp_path:  # type: ignore[arg-type]
            return fs  # (the read-only mount check asks of the file)
        return os.statvfs_result((4096, 4096, fs.f_blocks, free_blocks, free_blocks, *fs[5:]))

    monkeypatch.setattr(core.sqlite3, "connect", connect)
    monkeypatch.setattr(dbfile.os, "statvfs", full)
    before = db.read_bytes()
    for command in (["config", "new_per_day", "10"], ["quiz", "--plain"]):
        done = CliRunner().invoke(main, ["--db", str(db), *command], input="q\n")
        assert done.exit_code == 2, done.output
        if free_blocks * 4096 < 1 << 20:
            assert done.stderr == (
                f"prep: {db}: cannot open the progress database: the disk holding {tmp_path} is "
                f"full ({free_blocks * 4} KiB free); nothing saved is lost: free some space and "
                "try again\n"
            )
        else:
            assert done.stderr == f"prep: {db}: cannot open the progress database: disk I/O error\n"
    assert db.read_bytes() == before


# --- a restore that fails on a full disk --------------------------------------------------------


def _failing_backup(code: int) -> type[sqlite3.Connection]:
    class Failing(sqlite3.Connection):
        """A backup file's connection whose copy onto the database fails as SQLite's does
        (rolled back): SQLITE_FULL (13) on a full disk, SQLITE_IOERR (10) otherwise."""

        def backup(self, *args: object, **kwargs: object) -> None:  # type: ignore[override]
            exc = sqlite3.OperationalError(
                "database or disk is full" if code == 13 else "disk I/O error"
            )
            exc.sqlite_errorcode = code  # type: ignore[attr-defined]
            raise exc

    return Failing


@pytest.mark.parametrize("code", [13, 10])
def test_a_restore_that_fails_says_what_became_of_its_rescue_copy(
    code: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A restore that failed on a full disk left its -restore.db rescue copy (480 KB on a
    full disk) and its line did not say so. On a full disk SQLite rolled the copy back and
    the database holds all the rescue copy does: it is removed and the line says the
    database is as it was (seen on a full 1.2 MB tmpfs); after another error it is kept and
    the line names it."""
    from prep.engine.store import Store, backup
    from tests.test_sync import T0, rate

    db = tmp_path / "p.db"
    with Store.open(db) as store:
        rate(store, "x", 3, T0)
        made = backup.make(store, "manual")
        assert made is not None
        rate(store, "y", 4, T0)
    real = sqlite3.connect

    def connect(target: object, *args: object, **kwargs: object) -> sqlite3.Connection:
        if str(target).startswith("file:") and "manual" in str(target):
            kwargs["factory"] = _failing_backup(code)
        return real(target, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(backup.sqlite3, "connect", connect)
    with Store.open(db) as store, pytest.raises(backup.BackupError) as failed:
        backup.restore(store, made.name)
    rescues = [p.name for p in backup.folder(db).iterdir() if p.name.endswith("-restore.db")]
    said = str(failed.value)
    assert said.startswith(f"{made}: cannot restore it (")
    if code == 13:
        assert rescues == [] and said.endswith("; nothing restored, the database is as it was")
    else:
        assert len(rescues) == 1
        assert said.endswith(f"; the database as it was is kept in {rescues[0]}")
    with Store.open(db) as store:
        assert store.conn.execute("SELECT count(*) FROM revlog").fetchone() == (2,)


# --- grade --answers - ------------------------------------------------------------------------


def test_grade_reads_its_answers_or_its_rubric_from_standard_input(tmp_path: Path) -> None:
    """`grade --rubric R --answers -` said "-: cannot read it (no such file)": `-` is standard
    input now (as `export -o -` is standard output), named so in the messages; --rubric -
    too, but not both (one standard input)."""
    rubric = tmp_path / "r.yaml"
    rubric.write_text("question: q\npoints:\n  - id: p1\n    text: W_O mixes heads\n")
    answers = tmp_path / "a.jsonl"
    answers.write_text('{"answer_id": 7, "answer": ""}\n')
    db = ["--db", str(tmp_path / "p.db"), "grade", "--json"]
    run = CliRunner().invoke
    done = run(main, [*db, "--rubric", str(rubric), "--answers", "-"], input=answers.read_text())
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout) == {
        "answer_id": 7,
        "empty": True,
        "covered": None,
        "scores": None,
    }
    done = run(main, [*db, "--rubric", "-", "--answers", str(answers)], input=rubric.read_text())
    assert done.exit_code == 0 and json.loads(done.stdout)["answer_id"] == 7, done.output
    done = run(main, [*db, "--rubric", str(rubric), "--answers", "-"], input="{\n")
    assert done.exit_code == 2 and done.stderr == "prep: standard input:1: not a JSON object\n"
    done = run(main, [*db, "--rubric", "-", "--answers", str(answers)], input="[: x\n")
    assert done.exit_code == 2 and done.stderr == "prep: standard input:1: not valid YAML\n"
    done = run(main, [*db, "--rubric", "-", "--answers", "-"], input="")
    assert done.exit_code == 2
    assert done.stderr == "prep: --rubric and --answers cannot both be - (standard input)\n"
