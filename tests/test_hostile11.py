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
    assert run_cli(db, "config", "new_per_day", "5").exit_code == 0  # (backup makes no db)
    assert run_cli(db, "backup").exit_code == 0
    (name,) = backups_of(db)
    result = run_cli(db, "backup", "--list", "--restore", name)
    assert result.exit_code == 2, result.output
    assert "give one of them" in result.output


MINE = """\
deck: mine
title: Mine
cards:
  - id: mine-one
    kind: recall
    prompt: A question of my own?
    answer: An answer of my own.
"""


def test_a_plan_on_decks_not_loaded_here_still_serves_the_decks_that_are(tmp_path: Path) -> None:
    """plan_decks naming only a deck that is not loaded here (a user deck folder not given this
    time, or the setting synced from a machine that has that deck) made a plan over no card:
    `prep quiz` said "Nothing due right now" with every bundled card unseen, even with --new 5,
    and stats said "All 0 cards seen"."""
    from datetime import date, timedelta

    db = tmp_path / "p.db"
    decks = tmp_path / "decks"
    decks.mkdir()
    (decks / "mine.yaml").write_text(MINE, encoding="utf-8")
    day = (date.today() + timedelta(days=18)).isoformat()
    assert run_cli(db, "config", "interview_date", day).exit_code == 0
    mine = CliRunner().invoke(
        main, ["--db", str(db), "--questions", str(decks), "config", "plan_decks", "mine"]
    )
    assert mine.exit_code == 0, mine.output
    for new in ([], ["--new", "5"]):
        result = run_cli(db, "quiz", "--plain", *new, input="q\n")  # no --questions: no "mine"
        assert result.exit_code == 0, result.output
        assert "Nothing due right now" not in result.output
        assert "cards in this session" in result.output
    stats = run_cli(db, "stats")
    assert "All 0 cards seen" not in stats.output
    # where the deck is loaded, the plan is on it alone, as set
    with_mine = CliRunner().invoke(
        main, ["--db", str(db), "--questions", str(decks), "quiz", "--plain"], input="q\n"
    )
    assert "1 card in this session" in with_mine.output, with_mine.output


def test_a_loopback_host_named_otherwise_keeps_the_loopback_door(
    tmp_path: Path, small_deck_dir: Path, monkeypatch
) -> None:
    """`prep serve --host LOCALHOST` (or localhost., or this machine's name when it maps to
    127.0.1.1) listens on loopback only, but was taken as a network address: a false warning
    that anyone could reach it, and the loopback Host check (against DNS rebinding) turned off."""
    import asyncio
    import socket
    import subprocess

    from prep.tui.serve import is_loopback
    from tests.test_serve_doors import _status, start_serve

    assert is_loopback("LOCALHOST") and is_loopback("localhost.") and is_loopback("127.0.1.1")
    real = socket.getaddrinfo

    def resolve(host, *args, **kwargs):
        fake = {"studybox": "127.0.1.1", "lanbox": "192.168.1.4"}
        if host in fake:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (fake[host], 0))]
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    assert is_loopback("studybox") and not is_loopback("lanbox") and not is_loopback("0.0.0.0")
    monkeypatch.setattr(socket, "getaddrinfo", real)

    served = start_serve(tmp_path, small_deck_dir, "--host", "LOCALHOST")
    try:
        page = f"http://127.0.0.1:{served.port}/?token={served.token}"

        async def go() -> None:
            assert await _status(page, Host=f"LOCALHOST:{served.port}") == 200
            assert await _status(page, Host=f"127.0.0.1:{served.port}") == 200
            assert await _status(page, Host=f"evil.example:{served.port}") == 403  # was 200

        asyncio.run(go())
        assert "warning" not in served.output()
    finally:
        served.proc.terminate()
        try:
            served.proc.wait(15)
        except subprocess.TimeoutExpired:
            served.proc.kill()
            served.proc.wait()


def test_a_malformed_host_or_origin_is_refused_not_a_server_error() -> None:
    """A Host header `[bad` (or an Origin `http://[bad`) made urlsplit raise: a 500 and an
    error line in the log for every such request, where the door refuses it."""
    from prep.tui.webserver import GuardedServer, host_is_loopback, same_origin

    assert not host_is_loopback("[bad") and not host_is_loopback("[::1")
    assert not same_origin("http://[bad", "127.0.0.1:8000")
    server = GuardedServer("true", host="::1", port=8000, local=True, token="t")
    assert not server._own_name("[bad") and not server._own_name("")


def test_two_preps_making_one_new_database_upgrade_it_once(tmp_path: Path, monkeypatch) -> None:
    """Two preps opening one new database at once (two terminals, `prep serve`'s tabs) both read
    schema version 0, then took the write lock in turn: the second ran every step again on the
    database the first had built, and failed ("the progress database failed: views may not be
    indexed", exit 2; 1 start in 24 here with four preps at once). The version is read again
    under the write lock."""
    import sqlite3

    from prep.engine.store import Store
    from prep.engine.store.schema import SCHEMA_VERSION

    db = tmp_path / "p.db"
    late = sqlite3.connect(db)  # the second prep's connection, made before the first built it
    first = Store.open(db)
    first.save_settings(first.settings())
    real = Store.schema_version
    calls = []

    def read_before_the_first_built_it(self) -> int:
        calls.append(self)
        return 0 if len(calls) == 1 else real(self)  # (its first read came before the build)

    monkeypatch.setattr(Store, "schema_version", read_before_the_first_built_it)
    second = Store(late, db)  # upgrades: today this reran v0 -> v1 ... on a v16 database
    monkeypatch.setattr(Store, "schema_version", real)
    assert second.schema_version() == SCHEMA_VERSION
    assert second.count_reviews() == 0 and second.settings() == first.settings()
    second.close()
    first.close()


def test_json_to_standard_output_carries_no_c1_control(tmp_path: Path, monkeypatch) -> None:
    """json.dumps(ensure_ascii=False) escapes U+0000-U+001F but leaves DEL and the C1 controls
    raw: an imported demo run's numbers holding U+009B (a CSI) came out of `prep export -o -`
    onto the terminal, and `prep grade --json` wrote an answer id's as it was."""
    import json

    from prep.demos.pretrained.grader import batch
    from prep.demos.pretrained.grader.rubric import Grade, PointVerdict

    db = tmp_path / "p.db"
    source = tmp_path / "in.json"
    export = {
        "format": "prep-export",
        "version": 1,
        "cards": [],
        "reviews": [],
        "demo_runs": [
            {
                "name": "no-wo",
                "device": "cpu",
                "device_name": "x86_64",
                "dtype": "float32",
                "scale": "small",
                "seed": 0,
                "passed": True,
                "seconds": 1.0,
                "metrics": {"checks": [{"name": "x\x9b2J\x9b31m\x7f"}]},
                "ran_at": "2026-12-01T10:00:00Z",
            }
        ],
    }
    source.write_text(json.dumps(export, ensure_ascii=False), encoding="utf-8")
    imported = run_cli(db, "import", str(source))
    assert imported.exit_code == 0, imported.output
    out = CliRunner().invoke(main, ["--db", str(db), "export", "-o", "-"])
    assert out.exit_code == 0, out.output
    text = out.stdout
    assert not any(0x7F <= ord(c) < 0xA0 for c in text), "a raw C1 control on standard output"
    run = json.loads(text)["demo_runs"][0]
    assert run["metrics"]["checks"][0]["name"] == "x\x9b2J\x9b31m\x7f"  # the same value

    rubric = tmp_path / "r.yaml"
    rubric.write_text('question: q\npoints:\n  - id: p1\n    text: "a point"\n')
    answers = tmp_path / "a.jsonl"
    answers.write_text('{"answer_id": "a\\u009b2J", "answer": "x"}\n')

    def fake_grade_all(rubric, given):  # (the model is not what this is about)
        for aid, _ in given:
            yield aid, Grade([PointVerdict(p.id, p.text, False, 0.1, "") for p in rubric.points])

    monkeypatch.setattr(batch, "grade_all", fake_grade_all)
    monkeypatch.setattr(batch, "missing", lambda: None)
    graded = run_cli(db, "grade", "--rubric", str(rubric), "--answers", str(answers), "--json")
    assert graded.exit_code == 0, graded.output
    assert "\x9b" not in graded.output
    assert json.loads(graded.output)["answer_id"] == "a\x9b2J"


def test_a_list_setting_given_as_text_or_a_number_is_refused_by_name(tmp_path: Path) -> None:
    """Settings from an import (or a sync) read a list setting with tuple(): plan_decks
    "wo-core" became the decks w, o, -, c, ... (accepted: a plan over no deck), and a number
    said only "'int' object is not iterable"."""
    import json

    for key, value in (
        ("plan_decks", "wo-core"),
        ("plan_decks", 5),
        ("learning_steps_min", "10"),
        ("parameters", 0.5),
    ):
        db = tmp_path / f"{key}-{type(value).__name__}.db"
        source = tmp_path / "in.json"
        document = {"format": "prep-export", "version": 1, "cards": [], "reviews": []}
        source.write_text(json.dumps({**document, "settings": {key: value}}), encoding="utf-8")
        result = run_cli(db, "import", str(source))
        assert result.exit_code == 2, result.output
        (line,) = result.output.strip().splitlines()
        assert f"{key} must be a list, got {value!r}" in line, line
        assert run_cli(db, "config").output == run_cli(tmp_path / "fresh.db", "config").output


def test_steps_separated_by_spaces_are_two_steps_not_one(tmp_path: Path) -> None:
    """`prep config learning_steps_min "1 10"` (Anki writes its steps "1m 10m") removed the space
    and saved the one step 110 minutes; `plan_decks "wo-core wo-systems"` named one deck."""
    db = tmp_path / "p.db"
    for given in ("1 10", "1, 10", "1,10", " 1  10 "):
        result = run_cli(db, "config", "learning_steps_min", given)
        assert result.exit_code == 0, result.output
        assert result.output.strip() == "learning_steps_min = [1.0, 10.0]", given
    result = run_cli(db, "config", "plan_decks", "wo-core wo-systems")
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "plan_decks = wo-core,wo-systems"
