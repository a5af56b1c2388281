"""The command-line boundary (issue 10, items 1 and 5): whatever the streams, the locale, the
database or the signal, `prep` ends with one line and a meaningful exit code, no traceback.

These run the real entry point (`python -m prep.tui.entry`, i.e. `prep`'s console script
`prep.tui.entry:run`, which hands everything but the app in a terminal to click's
`prep.tui.cli:run`) in a subprocess: closed and full streams only exist at that level.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from prep.engine.store import Store
from prep.tui.cli import main

PREP = [sys.executable, "-m", "prep.tui.entry"]


def prep(
    db: Path, *args: str, input: str | None = None, env: dict | None = None, **kw
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*PREP, "--db", str(db), *args],
        input=input,
        capture_output=kw.pop("capture_output", True),
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
        **kw,
    )


def run_as(prefix: list[str], db: Path, *args: str, env: dict) -> subprocess.CompletedProcess:
    """`prep` run behind a command prefix (see _without_root_override)."""
    return subprocess.run(
        [*prefix, *PREP, "--db", str(db), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=120,
    )


def review_one(db: Path, decks: Path, env: dict) -> subprocess.CompletedProcess:
    """`prep quiz --plain` on the small deck: reveal, rate Good, quit."""
    args = ["--questions", str(decks), "quiz", "--plain", "--deck", "small"]
    return prep(db, *args, input="\n3\nq\n", env=env)


def one_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("prep"), lines
    return lines[0]


def shell(command: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["sh", "-c", command],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


def test_malformed_database_file(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    db.write_bytes(b"this is not a database" * 100)
    done = prep(db, "stats")
    assert done.returncode == 2
    assert "not a database" in one_line(done.stderr)


def test_closed_stdout_is_exit_2_with_one_line(tmp_path: Path) -> None:
    cmd = " ".join([*PREP, "--db", str(tmp_path / "p.db"), "stats"])
    done = shell(f"{cmd} >&-")
    assert done.returncode == 2
    assert one_line(done.stderr) == "prep: standard output is closed; nothing can be shown"


def test_closed_stdin(tmp_path: Path, small_deck_dir: Path) -> None:
    base = [*PREP, "--db", str(tmp_path / "p.db"), "--questions", str(small_deck_dir)]
    done = shell(" ".join([*base, "quiz", "--plain"]) + " <&-")  # it needs the answers
    assert done.returncode == 2
    assert one_line(done.stderr) == (
        "prep: standard input is closed; the line mode reads your answers from it"
    )
    done = shell(" ".join([*base, "stats"]) + " <&-")  # it does not
    assert done.returncode == 0 and "Reviews" in done.stdout, done.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
def test_stdout_on_a_full_disk(tmp_path: Path) -> None:
    Store.open(tmp_path / "p.db").close()  # (stats only reads: it creates no database)
    cmd = " ".join([*PREP, "--db", str(tmp_path / "p.db"), "stats"])
    done = shell(f"{cmd} > /dev/full")
    assert done.returncode == 2
    assert one_line(done.stderr) == "prep: cannot write the output: No space left on device"


def test_ascii_only_output_encoding(tmp_path: Path, small_deck_dir: Path) -> None:
    done = review_one(tmp_path / "p.db", small_deck_dir, env={"PYTHONIOENCODING": "ascii"})
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "small ? recall" in done.stdout  # the middle dot, shown as ? instead of a crash


def test_seed_beyond_64_bits(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["demo", "block-diagonal", "--seed", str(2**70)])
    assert result.exit_code == 2
    assert "--seed: must be between" in result.stderr and "Traceback" not in result.output


def test_maximum_interval_beyond_100_years(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["--db", str(tmp_path / "p.db"), "config", "maximum_interval", "365000"]
    )
    assert result.exit_code == 2
    assert result.stderr == (
        "prep: maximum_interval must be at most 36500 days (100 years), got 365000\n"
    )


def test_negative_value_is_a_value_not_an_option(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["--db", str(tmp_path / "p.db"), "config", "new_per_day", "-1"]
    )
    assert result.exit_code == 2
    assert result.stderr == (
        "prep: new_per_day must be a whole number between 0 and 1000000000, got -1\n"
    )


@pytest.mark.parametrize("tz", ["UTC+25", "<+99>-99"])
def test_a_time_zone_offset_of_a_day_or_more_is_one_line(tmp_path: Path, tz: str) -> None:
    done = prep(tmp_path / "p.db", "stats", env={"TZ": tz})
    assert done.returncode == 2
    assert one_line(done.stderr).startswith(f"prep: TZ={tz!r} is not a usable time zone (")


def test_invalid_tz(tmp_path: Path, small_deck_dir: Path) -> None:
    Store.open(tmp_path / "p.db").close()  # (read-only commands create no database)
    # an unknown zone name: the C library (and so Python) takes it as UTC
    env = {"TZ": "Nowhere/Bogus"}
    done = prep(tmp_path / "p.db", "stats", env=env)
    assert done.returncode == 0 and "Traceback" not in done.stderr
    done = review_one(tmp_path / "p.db", small_deck_dir, env=env)
    assert done.returncode == 0 and "Saved: Good" in done.stdout, done.stderr


@pytest.mark.parametrize(
    ("damage", "value"),
    [("settings", "{garbage"), ("schema_version", "abc")]
    + [("schema_version", v) for v in ("0", "-1", "-99999999999999999999")],
)
def test_export_is_the_rescue_path(tmp_path: Path, damage: str, value: str) -> None:
    db = tmp_path / "p.db"
    Store.open(db).close()
    conn = sqlite3.connect(db)
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (damage, value))
    conn.commit()
    conn.close()
    out = tmp_path / "rescue.json"
    done = prep(db, "export", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["format"] == "prep-export"
    if damage == "schema_version":  # anything that writes says what is wrong, in one line
        done = prep(db, "config", "new_per_day", "3")
        assert done.returncode == 2 and "not one prep wrote" in one_line(done.stderr)


def test_sigint_in_a_demo_exits_130(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [*PREP, "--db", str(tmp_path / "p.db"), "demo", "block-diagonal", "--device", "cpu"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PREP_DEMO_PROGRESS": "1"},
        # Ctrl-C as a terminal sends it: a test run started in the background (`cmd &` in a
        # script) hands its children SIGINT ignored, and Python then installs no handler
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.stderr is not None
    proc.stderr.readline()  # the demo has started (its first progress line)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err


# Capabilities that let root ignore file modes; without them a 444 file is read-only for root too.
_DAC_CAPS = "-dac_override,-dac_read_search"


def _without_root_override() -> list[str]:
    """A command prefix under which a chmod means what it says. Root may write anything, so as
    root prep runs with the capabilities that override file modes dropped (setpriv; still uid 0,
    so an interpreter under root's private home stays reachable). Not root: no prefix needed."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: a read-only file means nothing to root")
    return [setpriv, f"--inh-caps={_DAC_CAPS}", f"--bounding-set={_DAC_CAPS}", "--"]


def test_read_only_database_and_folder_still_allow_stats_and_export() -> None:
    # a folder everyone can reach (pytest's own are private to this user)
    folder = Path(tempfile.mkdtemp(prefix="prep-ro-"))
    try:
        folder.chmod(0o755)
        db = folder / "p.db"
        Store.open(db).close()
        out_dir = Path(tempfile.mkdtemp(prefix="prep-out-"))
        out_dir.chmod(0o777)
        db.chmod(0o444)
        folder.chmod(0o555)
        prefix = _without_root_override()
        env = {"HOME": str(out_dir)}
        done = run_as(prefix, db, "stats", env=env)
        assert done.returncode == 0, done.stderr
        assert "Reviews" in done.stdout
        out = out_dir / "x.json"
        done = run_as(prefix, db, "export", "-o", str(out), env=env)
        assert done.returncode == 0, done.stderr
        assert json.loads(out.read_text())["format"] == "prep-export"
        done = run_as(prefix, db, "config", "new_per_day", "3", env=env)  # a write: refused
        assert done.returncode == 2 and "read" in one_line(done.stderr)
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(out_dir, ignore_errors=True)


# --- prep export: the files we write (item 1, at the command line) ------------------------


@pytest.mark.parametrize("fmt", [["--format", "json"], []], ids=["json", "no-format"])
@pytest.mark.parametrize("name", ["-", "/dev/stdout"])
def test_export_to_stdout_keeps_the_report_on_stderr(
    tmp_path: Path, name: str, fmt: list[str]
) -> None:
    Store.open(tmp_path / "p.db").close()  # (read-only commands create no database)
    # Without --format, stdout is json (README: "`-o -` writes to stdout"); it has no extension.
    done = prep(tmp_path / "p.db", "export", *fmt, "-o", name, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["format"] == "prep-export"  # nothing else on stdout
    assert done.stderr == "Wrote standard output: 0 reviews.\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.db"]  # no file named "-"


def test_csv_export_to_stdout_is_refused(tmp_path: Path) -> None:
    done = prep(tmp_path / "p.db", "export", "--format", "csv", "-o", "-", cwd=tmp_path)
    assert done.returncode == 2 and "six files" in one_line(done.stderr)


def test_export_to_a_fifo_writes_through_it(tmp_path: Path) -> None:
    Store.open(tmp_path / "p.db").close()  # (read-only commands create no database)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    done = prep(tmp_path / "p.db", "export", "--format", "json", "-o", str(fifo))
    out, _ = reader.communicate(timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(out)["format"] == "prep-export"
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_a_questions_folder_without_decks_warns(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = CliRunner().invoke(main, ["--questions", str(empty), "check"])
    assert result.exit_code == 0
    assert result.stderr == f"warning: {empty}: no deck here (no *.yaml or *.yml files)\n"


def test_csv_export_to_a_device_is_refused_and_creates_nothing(tmp_path: Path) -> None:
    Store.open(tmp_path / "p.db").close()  # (read-only commands create no database)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    done = prep(tmp_path / "p.db", "export", "--format", "csv", "-o", str(fifo))
    assert done.returncode == 2 and "six files named after it" in one_line(done.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.db", "pipe"]  # no pipe.cards.csv


def test_a_bug_is_one_line_exit_70_and_debug_shows_it(tmp_path: Path) -> None:
    Store.open(tmp_path / "p.db").close()  # (read-only commands create no database)
    # a command that fails in a way nobody planned for: stats on a store whose query breaks
    code = (
        "import sys\n"
        "from prep.engine.study import stats\n"
        "def broken(*a, **k): raise TypeError('unplanned')\n"
        "stats.compute = broken\n"
        "from prep.tui.cli import run\n"
        f"run(['--db', {str(tmp_path / 'p.db')!r}, 'stats'])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 70
    assert one_line(done.stderr).startswith("prep: internal error (TypeError: unplanned)")
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PREP_DEBUG": "1"},
    )
    assert done.returncode == 1 and "Traceback" in done.stderr


def test_a_hostile_file_name_stays_one_line(tmp_path: Path) -> None:
    Store.open(tmp_path / "p.db").close()  # (read-only commands create no database)
    name = tmp_path / "missing\nfolder\x1b]0;x\x07" / "out.json"
    result = CliRunner().invoke(main, ["--db", str(tmp_path / "p.db"), "export", "-o", str(name)])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "\x1b" not in result.stderr
    assert "missing\\nfolder\\x1b]0;x\\x07" in result.stderr


def test_db_that_is_not_a_regular_file_is_refused_before_sqlite_touches_it(
    tmp_path: Path,
) -> None:
    fifo = tmp_path / "fifo.db"
    os.mkfifo(fifo)  # SQLite would block on it; a device like /dev/null it would "open"
    for target, what in ((fifo, "not a regular file"), (tmp_path, "a folder")):
        result = CliRunner().invoke(main, ["--db", str(target), "stats"])
        assert result.exit_code == 2 and what in result.stderr, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo.db"]  # no -wal, no -shm


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["quiz", "--limit", "0"],
            "prep: Invalid value for '--limit': 0 is not in the range x>=1.",
        ),
        (["nope"], "prep: No such command 'nope'."),
        (["stats", "--bogus"], "prep: No such option '--bogus'. (see `prep stats --help`)"),
    ],
)
def test_click_usage_errors_are_one_line(tmp_path: Path, args: list[str], line: str) -> None:
    done = prep(tmp_path / "p.db", *args)
    assert done.returncode == 2
    assert one_line(done.stderr).startswith(line), done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["--questions", "~nosuchuser9/x", "stats"],
        ["--db", "~nosuchuser9/p.db", "stats"],
        ["export", "~nosuchuser9/out.json"],
        ["import", "~nosuchuser9/in.json"],
        ["sync", "~nosuchuser9/sync"],
    ],
)
def test_a_tilde_user_that_names_no_user_is_a_path_not_found(tmp_path: Path, args) -> None:
    # A shell leaves `~nosuchuser9/x` as written; Path.expanduser raises RuntimeError for it,
    # which ended the command as an internal error (exit 70). Now: the path as written, not
    # found, one line, exit 2, and nothing made for it.
    args = ["--db", str(tmp_path / "p.db"), *args] if args[0] != "--db" else args
    done = subprocess.run([*PREP, *args], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "~nosuchuser9").exists()
