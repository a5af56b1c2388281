"""The command line as a user meets it: exit codes, one-line errors, the plain session."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from prep.engine.store import Store
from prep.tui.cli import main

PREP = [sys.executable, "-m", "prep.tui.cli"]


def run_cli(*args: str, input: str | None = None, db: Path | None = None):
    runner = CliRunner()
    base = ["--db", str(db)] if db else []
    return runner.invoke(main, [*base, *args], input=input, catch_exceptions=False)


def review_first_card(decks: Path, db: Path, rating: str) -> None:
    """Reveal the first card of the small deck, rate it, quit (in process, via click)."""
    result = run_cli(
        "--questions",
        str(decks),
        "quiz",
        "--plain",
        "--deck",
        "small",
        input=f"\n{rating}\nq\n",
        db=db,
    )
    assert result.exit_code == 0, result.output


def plain_quiz(db: Path, decks: Path, keys: str, *extra: str) -> subprocess.CompletedProcess:
    """`prep quiz --plain --deck small` in a real subprocess, fed ``keys`` on stdin."""
    return subprocess.run(
        [
            *PREP,
            "--db",
            str(db),
            "--questions",
            str(decks),
            "quiz",
            "--plain",
            "--deck",
            "small",
            *extra,
        ],
        capture_output=True,
        text=True,
        input=keys,
        timeout=60,
    )


def test_every_command_has_help_and_is_in_the_readme() -> None:
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    names = main.list_commands(None)  # type: ignore[arg-type]  # (the lazy group's table)
    assert {"quiz", "stats", "grade", "config"} <= set(names)
    for name in names:
        command = main.get_command(None, name)  # type: ignore[arg-type]
        assert command is not None and command.help, f"`prep {name}` has no help text"
        assert f"prep {name}" in readme, f"`prep {name}` is not documented in the README"
        result = CliRunner().invoke(main, [name, "--help"])
        assert result.exit_code == 0, result.output


def test_check_bundled_decks_ok() -> None:
    result = run_cli("check")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("ok: ")


def test_check_reports_errors_with_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("cards:\n  - id: x\n    kind: nope\n    prompt: p\n    answer: a\n")
    result = subprocess.run([*PREP, "check", str(bad)], capture_output=True, text=True)
    assert result.returncode == 2
    assert "bad.yaml:3: card 'x': unknown kind 'nope'" in result.stderr
    assert "Traceback" not in result.stderr


def test_quiz_with_invalid_user_deck_exits_2_without_traceback(
    tmp_path: Path, db_path: Path
) -> None:
    (tmp_path / "bad.yaml").write_text("cards: [\n")
    result = subprocess.run(
        [*PREP, "--db", str(db_path), "--questions", str(tmp_path), "quiz", "--plain"],
        capture_output=True,
        text=True,
        input="",
    )
    assert result.returncode == 2
    assert "bad.yaml:" in result.stderr and "YAML syntax error" in result.stderr
    assert "Traceback" not in result.stderr


def test_plain_session_end_to_end(small_deck_dir: Path, db_path: Path) -> None:
    keys = "\n3\nb\n\n\n1\n"  # reveal+Good, pick b + take suggestion, reveal follow-up, Again
    result = plain_quiz(db_path, small_deck_dir, keys + "q\n")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "[new 4 · learning 0 · due 0] small · recall" in out
    assert "1 Again 1m  2 Hard 6m  3 Good 10m" in out
    assert "Right. Suggested rating: 3 Good." in out
    assert "(follows: Name two roles of W_O" in out
    with Store.open(db_path) as store:
        ratings = [(r.card_id, r.rating) for r in store.reviews()]
    assert ratings == [("roles", 3), ("pick-one", 3), ("roles-follow", 1)]


def test_plain_undo_and_wrong_pick(small_deck_dir: Path, db_path: Path) -> None:
    keys = "\n4\nu\n\n2\na\n\n"
    result = plain_quiz(db_path, small_deck_dir, keys)
    assert result.returncode == 0, result.stderr
    assert "Undone: roles is back" in result.stdout
    assert "Not quite: the answer is b. Suggested rating: 1 Again." in result.stdout
    with Store.open(db_path) as store:
        assert [(r.card_id, r.rating) for r in store.reviews()] == [("roles", 2), ("pick-one", 1)]


def test_unknown_deck_is_a_usage_error(small_deck_dir: Path, db_path: Path) -> None:
    result = run_cli(
        "--questions", str(small_deck_dir), "quiz", "--plain", "--deck", "nope", db=db_path
    )
    assert result.exit_code == 2
    assert "no deck named 'nope'" in result.output


def test_stats_json_and_text(small_deck_dir: Path, db_path: Path) -> None:
    review_first_card(small_deck_dir, db_path, "4")
    result = run_cli("--questions", str(small_deck_dir), "stats", "--json", db=db_path)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["reviews"] == {"today": 1, "total": 1}
    assert data["streak_days"] == 1
    assert data["decks"]["small"]["seen"] == 1
    assert len(data["forecast"]) == 14 and len(data["per_day"]) == 30
    text = run_cli("--questions", str(small_deck_dir), "stats", db=db_path).output
    assert "today 1   total 1" in text
    # mastery per tag, as --json gives it (README: "mastery per deck and tag")
    assert data["tags"], data["tags"]
    lines = text.splitlines()
    assert any(line.startswith("Tag ") and "mastery" in line for line in lines)
    for tag, m in data["tags"].items():
        row = next(line for line in lines if line.split()[:1] == [tag])
        assert row.split()[1:4] == [str(m["cards"]), str(m["seen"]), str(m["mature"])]
    bad = run_cli("stats", "--since", "yesterday", db=db_path)
    assert bad.exit_code == 2 and "--since 'yesterday' is not a date" in bad.output
    # parses, but has no UTC form (year 10000): was an OverflowError traceback, then "is not
    # a date" (it is one: out of range, and the line says the range)
    bad = run_cli("stats", "--since", "9999-12-31T23:00:00-05:00", db=db_path)
    assert bad.exit_code == 2
    assert "is out of range: give a date from 0001-01-02 to 9999-12-30" in bad.output


def test_config_show_set_and_reject(db_path: Path) -> None:
    assert "new_per_day = 20" in run_cli("config", db=db_path).output
    assert run_cli("config", "new_per_day", "5", db=db_path).exit_code == 0
    assert "new_per_day = 5" in run_cli("config", "new_per_day", db=db_path).output
    bad = run_cli("config", "new_per_day", "lots", db=db_path)
    assert bad.exit_code == 2 and "new_per_day" in bad.output
    bad = run_cli("config", "colour", "red", db=db_path)
    assert bad.exit_code == 2 and "unknown setting 'colour'" in bad.output
    with Store.open(db_path) as store:
        assert store.settings().new_per_day == 5


def test_config_prints_a_setting_alike_listed_asked_for_and_set(db_path: Path) -> None:
    """Each setting reads the same in `config`, `config KEY` and `config KEY VALUE`
    (`config learning_steps_min` printed a tuple where `config` printed a list)."""
    run_cli("config", "learning_steps_min", "1,5,30", db=db_path)
    listed = {
        line.split(" = ")[0]: line
        for line in run_cli("config", db=db_path).output.splitlines()
        if " = " in line
    }
    assert listed["learning_steps_min"] == "learning_steps_min = [1.0, 5.0, 30.0]"
    for key, line in listed.items():
        if key in ("sync_dir", "parameters"):  # (their own forms, alike too)
            continue
        assert run_cli("config", key, db=db_path).output.strip() == line, key
    set_line = run_cli("config", "relearning_steps_min", "5,15", db=db_path).output.strip()
    assert set_line == "relearning_steps_min = [5.0, 15.0]"
    assert run_cli("config", "relearning_steps_min", db=db_path).output.strip() == set_line


def test_unopenable_db_is_one_line_exit_2(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    result = subprocess.run(
        [*PREP, "--db", str(tmp_path / "file" / "x.db"), "stats"], capture_output=True, text=True
    )
    assert result.returncode == 2
    assert result.stderr.startswith("prep: ") and "Traceback" not in result.stderr


def test_read_only_db_is_one_line_exit_2(
    db_path: Path, small_deck_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Store.open(db_path).close()

    def open_read_only(cls, path=None, **_options):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
        return cls(conn, Path(path))

    monkeypatch.setattr(Store, "open", classmethod(open_read_only))
    deck = ["--questions", str(small_deck_dir)]
    for args, keys in [
        (["config", "new_per_day", "5"], None),
        ([*deck, "quiz", "--plain", "--deck", "small"], "\n3\nq\n"),
        ([*deck, "mock", "--plain"], "\n3\nq\n"),
    ]:
        result = CliRunner().invoke(main, ["--db", str(db_path), *args], input=keys)
        assert result.exit_code == 2, (args, result.output, result.exception)
        assert result.stderr.startswith("prep: ") and "read-only" in result.stderr, args


def test_db_from_environment(tmp_path: Path, small_deck_dir: Path) -> None:
    env = {**os.environ, "PREP_DB": str(tmp_path / "env.db"), "PREP_QUESTIONS": str(small_deck_dir)}
    result = subprocess.run(
        [*PREP, "quiz", "--plain", "--deck", "small"],
        input="\n3\nq\n",
        capture_output=True,
        text=True,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    with Store.open(tmp_path / "env.db") as store:
        assert store.count_reviews() == 1


@pytest.mark.parametrize(
    "command", [["--help"], ["stats"], ["check"], ["config"], ["marks"], ["unmark", "roles"]]
)
def test_light_commands_do_not_import_torch_or_textual(command: list[str], tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from prep.tui.cli import main\n"
        "try:\n"
        f"    main({command!r} if {command!r} == ['--help'] else ['--db', {str(tmp_path / 'x.db')!r}, *{command!r}])\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = [m for m in ('torch', 'textual', 'pandas', 'numpy') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "HEAVY []" in out.stdout, out.stdout + out.stderr


def test_stats_since_filters_totals(small_deck_dir: Path, db_path: Path) -> None:
    review_first_card(small_deck_dir, db_path, "4")
    later = run_cli(
        "--questions", str(small_deck_dir), "stats", "--json", "--since", "2999-01-01", db=db_path
    )
    data = json.loads(later.output)
    assert data["reviews"]["total"] == 0 and data["reviews"]["today"] == 1
    text = run_cli(
        "--questions", str(small_deck_dir), "stats", "--since", "2000-01-01", db=db_path
    ).output
    assert "total since 2000-01-01 1" in text


def test_no_terminal_falls_back_to_plain(small_deck_dir: Path, db_path: Path) -> None:
    result = subprocess.run(
        [
            *PREP,
            "--db",
            str(db_path),
            "--questions",
            str(small_deck_dir),
            "quiz",
            "--deck",
            "small",
        ],
        capture_output=True,
        text=True,
        input="\n3\nq\n",
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "not a terminal; running the line-oriented session" in result.stderr
    assert "Saved: Good" in result.stdout


def test_plain_flags_edited_cards(tmp_path: Path, db_path: Path) -> None:
    from tests.conftest import SMALL_DECK

    deck = tmp_path / "d"
    deck.mkdir()
    (deck / "small.yaml").write_text(SMALL_DECK)
    review_first_card(deck, db_path, "1")
    with Store.open(db_path) as store:  # make it due now (the CLI runs on the real clock)
        store.conn.execute("UPDATE cards SET due = '2000-01-01T00:00:00.000000Z'")
    (deck / "small.yaml").write_text(
        SMALL_DECK.replace("Cross-head mixing and per-head weighting.", "Mixing.")
    )
    out = run_cli(
        "--questions",
        str(deck),
        "quiz",
        "--plain",
        "--deck",
        "small",
        "--new",
        "0",
        input="q\n",
        db=db_path,
    )
    assert "(edited since you last reviewed it)" in out.output
    stats = run_cli("--questions", str(deck), "stats", db=db_path).output
    assert "Edited       roles" in stats


def test_corrupt_saved_settings_are_a_clear_error_and_reset_fixes_them(db_path: Path) -> None:
    with Store.open(db_path) as store:
        store.set_meta("settings", '{"new_per_day": "lots"')  # truncated JSON, by hand
    result = run_cli("stats", db=db_path)
    assert result.exit_code == 2 and "the saved settings are invalid" in result.output
    assert "prep config --reset" in result.output
    assert run_cli("config", "--reset", "--yes", db=db_path).exit_code == 0
    assert "new_per_day = 20" in run_cli("config", db=db_path).output


def test_config_learning_steps(db_path: Path) -> None:
    assert run_cli("config", "learning_steps_min", "2, 15", db=db_path).exit_code == 0
    with Store.open(db_path) as store:
        assert store.settings().learning_steps_min == (2.0, 15.0)
    bad = run_cli("config", "relearning_steps_min", "soon", db=db_path)
    assert bad.exit_code == 2 and "relearning_steps_min" in bad.output


def test_prep_demo_records_the_run(tmp_path: Path, db_path: Path) -> None:
    result = run_cli("demo", "per-head-sum", "--device", "cpu", "--json", db=db_path)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    with Store.open(db_path) as store:
        (run,) = store.dump()["demo_runs"]
    assert (run["name"], run["passed"], run["seed"]) == ("per-head-sum", 1, 0)
    assert (run["device"], run["scale"], run["dtype"]) == ("cpu", "small", "float32")
    assert run["metrics"]["checks"] == data["checks"]


def test_prep_demo_that_cannot_record_warns_and_keeps_its_exit_code(tmp_path: Path) -> None:
    result = run_cli("demo", "per-head-sum", "--device", "cpu", db=tmp_path)  # a folder
    assert result.exit_code == 0
    assert "PASS" in result.stdout
    (warning,) = result.stderr.strip().splitlines()
    assert warning.startswith("prep demo: warning: run not recorded")
