"""Round seventeen's command-line leftovers: bidi and invisible characters in a card refused
as control characters are; (more below, one section an item)."""

from __future__ import annotations

import os
import re
import sys
import unicodedata
from pathlib import Path

import pytest
from click.testing import CliRunner

from prep.engine.decks import deck as deck_mod
from prep.engine.decks.fastdeck import general_rows, parse_rows
from prep.tui.cli import main

# --- a card's text holds no bidi control or invisible character --------------------------------

PLAIN = """deck: d
cards:
  - id: c1
    kind: recall
    prompt: {prompt}
    answer: a
"""


def check(*args: str, stdin: str | bytes | None = None):
    return CliRunner().invoke(main, ["check", *args], input=stdin)


# what the line says to write instead (polish17b), where there is an obvious alternative
INSTEAD = {
    "answer": "use a plain space, or nothing",
    "tags": "use a new line",
    "analogy": "write a hyphen (-) where the word breaks, or nothing",
}


@pytest.mark.parametrize(
    ("field", "value", "what"),
    [
        ("prompt", "pay \u202emoc.lave", "a bidirectional control U+202E (RIGHT-TO-LEFT OVERRIDE)"),
        ("answer", '"two\\u200bwords"', "an invisible character U+200B (ZERO WIDTH SPACE)"),
        ("explain", "x\u2066y\u2069", "a bidirectional control U+2066 (LEFT-TO-RIGHT ISOLATE)"),
        ("tags", '[ok, "a\\u2028b"]', "an invisible character U+2028 (LINE SEPARATOR)"),
        (
            "bullets",
            '["a\U000e0041"]',
            "an invisible character U+E0041 (TAG LATIN CAPITAL LETTER A)",
        ),
        ("analogy", "soft\xadhyphen", "an invisible character U+00AD (SOFT HYPHEN)"),
    ],
    ids=["rlo", "zwsp-escaped", "isolate", "line-separator", "tag", "soft-hyphen"],
)
def test_a_bidi_or_invisible_character_in_a_card_is_refused(
    tmp_path: Path, field: str, value: str, what: str
) -> None:
    """A right-to-left override made `pay \\u202emoc.lave` show as "pay evil.com" while the
    card stored the other; `prep check` took it (only C0/C1 controls were refused)."""
    fields = {"id": "c1", "kind": "recall", "prompt": "p", "answer": "a", field: value}
    card = "".join(f"{'  - ' if k == 'id' else '    '}{k}: {v}\n" for k, v in fields.items())
    (tmp_path / "d.yaml").write_text(f"cards:\n{card}", encoding="utf-8")
    done = check(str(tmp_path / "d.yaml"))
    assert done.exit_code == 2, done.output
    line = 2 + list(fields).index(field)
    position = re.search(r"at position (\d+)", done.stderr)
    assert position, done.stderr
    assert done.stderr.strip().endswith(
        f"d.yaml:{line}: card 'c1': field {field!r} has {what} at position "
        f"{position.group(1)} (a card must read as it is stored); {INSTEAD.get(field, 'remove it')}"
    ), done.stderr


def test_the_fast_path_declines_what_the_general_path_refuses() -> None:
    """The cache's one-pass reader took any character above U+00A0 in a plain value: a card
    that `prep check` refuses would have been served from the cache."""
    text = PLAIN.format(prompt="pay \u202emoc.lave")
    fast, general = parse_rows(text, "d.yaml", "d"), general_rows(text, "d.yaml", "d")
    assert fast[1] == general[1] == [] and [str(e) for e in fast[2]] == [str(e) for e in general[2]]
    assert "U+202E" in str(fast[2][0])
    assert parse_rows(PLAIN.format(prompt="fine"), "d.yaml", "d")[1]  # (the shape still taken)


def test_the_invisible_list_is_unicodes_format_and_separator_characters() -> None:
    """INVISIBLE holds Unicode 14's Cf, Zl and Zp characters: nothing else (a letter refused
    would be a card refused for nothing); with the format characters a card may hold
    (ALLOWED_FORMAT_RANGES, polish17b), every one of the Basic Multilingual Plane's."""
    listed = {
        c for c in map(chr, range(sys.maxunicode + 1)) if re.match(f"[{deck_mod.INVISIBLE}]", c)
    }
    allowed = {chr(c) for lo, hi in deck_mod.ALLOWED_FORMAT_RANGES for c in range(lo, hi + 1)}
    assert {unicodedata.category(c) for c in listed} == {"Cf", "Zl", "Zp"}
    assert {unicodedata.category(c) for c in allowed} == {"Cf"} and not allowed & listed
    bmp = {chr(c) for c in range(0x10000) if unicodedata.category(chr(c)) in ("Cf", "Zl", "Zp")}
    assert bmp <= listed | allowed
    every = {
        chr(c)
        for c in range(sys.maxunicode + 1)
        if unicodedata.category(chr(c)) in ("Cf", "Zl", "Zp")
    }
    if unicodedata.unidata_version == "14.0.0":  # (a later Unicode adds format characters)
        assert every == listed | allowed
    assert not deck_mod.UNSHOWN.search("tab\tnew\nline, é, ü, 中文, emoji 🙂, arrow →")


def test_a_deck_title_with_a_bidi_control_is_refused(tmp_path: Path) -> None:
    (tmp_path / "d.yaml").write_text(
        "title: a\u202eb\n" + PLAIN.format(prompt="p"), encoding="utf-8"
    )
    done = check(str(tmp_path / "d.yaml"))
    assert (
        done.exit_code == 2
        and "d.yaml:1: deck field 'title': a bidirectional control U+202E" in done.stderr
    )


# --- one form for a value cut short: 'xxxx'… ---------------------------------------------------


@pytest.mark.parametrize("limit", [5, 12, 40, 60])
@pytest.mark.parametrize(
    "value",
    ["x" * 100, "\x1b" * 100, "a\x1b" * 50, os.fsdecode(b"\xff" * 100), "it's " * 30, "é" * 90],
    ids=["plain", "escapes", "mixed", "bytes", "quote", "accents"],
)
def test_a_long_value_is_cut_with_its_quote_closed(value: str, limit: int) -> None:
    """textsafe.quoted cut text with its quote open ('xxxx…) where journal._cut closed it
    ('xxxx'…): now both close it, within the limit, and never cut an escape in half."""
    from prep.engine.sync.journal import _cut
    from prep.engine.textsafe import quoted

    text = quoted(value, limit)
    assert text.endswith(("'…", '"…')) and len(text) <= limit, text
    whole = [quoted(value[:n], 10**6) for n in range(len(value))]  # each start, uncut
    n = whole.index(text[:-1])  # what is shown is a start of the value, quoted whole...
    assert len(whole[n + 1]) > limit - 1  # ...the longest that fits
    assert _cut(value, limit) == text


# --- sync: a file that waits for this clock is said to; a header over 1 MiB is read --------------


def test_sync_status_says_a_file_waits_for_this_clock_and_until_when(tmp_path: Path) -> None:
    """`prep sync --status` counted a file holding a review dated 2280 as "not applied yet:
    run prep sync", which a sync then refused: now it says the file waits, until when."""
    import json
    from datetime import UTC, datetime

    from prep.engine.sync import journal
    from tests.test_sync16b import FAR, _far_review

    db, _c, folder, second = _far_review(tmp_path, FAR)
    done = CliRunner().invoke(main, ["--db", str(db), "sync", "--status", str(folder)])
    assert done.exit_code == 0, done.output
    until = f"{datetime(2280, 4, 30, 12, tzinfo=UTC).astimezone():%Y-%m-%d %H:%M}"
    dev, name = second.parent.name, journal.header_name(second)
    out = CliRunner().invoke(main, ["--db", str(db), "sync", "--status", "--json", str(folder)])
    info = json.loads(out.stdout)
    assert info["files_waiting_for_clock"] == [
        {"id": dev, "files": 1, "until": "2280-04-30T12:00:00.000000Z"}
    ]
    lines = [line for line in done.stdout.splitlines() if "wait" in line or "applied yet" in line]
    assert lines == [  # (the other device's files are not applied yet: a sync takes them)
        f"1 journal file(s) of {name} ({dev}) wait for this machine's clock, until {until}: an "
        "entry is dated over a day after this clock (is that machine's clock right, or is this "
        "one's behind?)",
        f"{info['files_waiting'] - 1} journal file(s) not applied yet: run prep sync",
    ], done.stdout


def test_a_journal_header_over_one_mib_is_read_whole(tmp_path: Path) -> None:
    """_head read 1 MiB of the first line: a header with many parameter sets (a line may be
    16 MiB) showed no written_at and no name, so a fork check took it for a foreign file."""
    import json

    from prep.engine.sync import journal

    header = {"name": "laptop", "written_at": "2026-12-01T00:00:00.000000Z"}
    path = tmp_path / "00000001.jsonl"
    big = {**header, "params": {"p": "x" * (3 << 20)}}
    path.write_text(json.dumps(big) + "\n" + "[]\n")
    assert journal.written_at(path) == header["written_at"]
    assert journal.header_name(path) == "laptop"
    path.write_text(json.dumps({**header, "params": "x" * journal.MAX_LINE}) + "\n")
    assert journal.written_at(path) is None  # (a line past the bound: never read whole)
    os.mkfifo(tmp_path / "00000002.jsonl")
    assert journal.written_at(tmp_path / "00000002.jsonl") is None  # (never waited on)


# --- --model: a path-looking value that leads to no folder is refused at once ------------------


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("loop", "a symbolic link loop, not a checkpoint folder"),
        ("./loop", "a symbolic link loop, not a checkpoint folder"),
        ("loop/config", "a symbolic link loop, not a checkpoint folder"),
        ("gone", "a symbolic link to nothing, not a checkpoint folder"),
        ("./nope", "no such folder"),
        ("~nouser-polish17/x", "no such folder"),
        ("./file", "not a folder (a checkpoint is a folder of config and weights)"),
    ],
)
def test_a_model_path_that_leads_to_no_folder_is_refused_before_loading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, why: str
) -> None:
    """`--model LOOP` (a symbolic link to itself) was taken for a hub name: 48 s of retries
    offline, then "couldn't connect to huggingface.co". Refused now before torch loads."""
    from prep.demos import cli as demo_cli

    monkeypatch.chdir(tmp_path)
    (tmp_path / "loop").symlink_to("loop")
    (tmp_path / "gone").symlink_to("not-there")
    (tmp_path / "file").write_text("{}")

    def loaded(*_: object) -> None:
        raise AssertionError("the demo ran: torch and transformers loaded")

    monkeypatch.setattr(demo_cli, "_run_demo", loaded)
    done = CliRunner().invoke(main, ["demo", "real-ov-rank", "--model", name])
    assert done.exit_code == 2, done.output
    assert done.stderr.splitlines() == [f"prep demo: error: --model {name}: {why}"]
    (tmp_path / "ckpt").mkdir()  # (a folder, and a hub name, go on to the loader)
    for taken in ("ckpt", "./ckpt", "gpt2"):
        assert demo_cli._model_problem(taken) is None


# --- HOME naming a folder that is not there: said, nothing made ---------------------------------


@pytest.fixture
def an_export(tmp_path: Path) -> Path:
    """A good export (of a database with a setting), for `prep import`."""
    db, out = tmp_path / "made.db", tmp_path / "progress.json"
    assert CliRunner().invoke(main, ["--db", str(db), "config", "new_per_day", "7"]).exit_code == 0
    assert CliRunner().invoke(main, ["--db", str(db), "export", "-o", str(out)]).exit_code == 0
    return out


@pytest.mark.parametrize(
    "args",
    [
        ["quiz", "--plain"],
        ["mock", "--plain"],
        ["config", "new_per_day", "5"],
        ["import", "EXPORT"],
        ["sync", "SYNCDIR"],
        ["sync", "--status"],
        ["stats"],
        ["export", "-o", "OUT"],
        ["backup"],
        ["marks"],
        ["optimize"],
        ["unmark", "wo-two-roles"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_a_home_that_is_not_there_is_said_and_nothing_is_made(
    tmp_path: Path, an_export: Path, args: list[str]
) -> None:
    """HOME=/nonexistent: `prep quiz` made /nonexistent/.local/share/prep/prep.db (the home
    folder itself made, as root); now every command that opens the default database says
    HOME is not there, exit 2, and makes nothing."""
    home = tmp_path / "no-such-home"
    (tmp_path / "sync").mkdir()
    swap = {
        "EXPORT": str(an_export),
        "SYNCDIR": str(tmp_path / "sync"),
        "OUT": str(tmp_path / "o.json"),
    }
    env = {"HOME": str(home), "PREP_DB": None, "XDG_DATA_HOME": None}
    done = CliRunner().invoke(main, [swap.get(a, a) for a in args], env=env, input="")
    assert done.exit_code == 2, done.output
    assert done.stderr.splitlines() == [
        f"prep: HOME {home} does not exist, and the progress database's default place is in it "
        f"({home}/.local/share/prep/prep.db); set HOME to your home folder, or name the "
        "database with --db PATH or PREP_DB; nothing made"
    ], done.stderr
    assert not home.exists() and not (tmp_path / "o.json").exists()
    home.write_text("")  # (HOME naming a file: not a folder either)
    done = CliRunner().invoke(main, [swap.get(a, a) for a in args], env=env, input="")
    assert done.exit_code == 2 and f"HOME {home} is not a folder" in done.stderr, done.output


def test_a_demo_run_is_not_recorded_where_home_is_not_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A demo that finished records its run (it may create the database): with HOME not
    there it warns, in one line, and makes nothing; the demo's own exit code stands."""
    from prep.tui.commands.demo import _record

    home = tmp_path / "no-such-home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("PREP_DB", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    from prep.tui.commands.common import Ctx
    from prep.tui.commands.demo import _refuse_database_plot

    _refuse_database_plot(Ctx(None, ()), ("--plot", "x.svg"))  # (no database to write over)
    _record(None, object())  # type: ignore[arg-type]  # (never reached: no database to record in)
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"prep demo: warning: run not recorded: HOME {home} does not exist")
    assert not home.exists()


# --- `-` is standard input where prep reads a file (import, check; grade did), said elsewhere ------


@pytest.fixture
def reviewed_export(tmp_path: Path) -> Path:
    """A JSON export of a database with reviews of two cards (read twice by an import)."""
    from datetime import timedelta

    from prep.engine.store import Store
    from tests.test_sync import T0, rate

    db, out = tmp_path / "from.db", tmp_path / "from.json"
    with Store.open(db) as store:
        for n, cid in enumerate(("wo-two-roles", "wo-two-roles", "other-card")):
            rate(store, cid, 3, T0 + timedelta(days=n))
    assert CliRunner().invoke(main, ["--db", str(db), "export", "-o", str(out)]).exit_code == 0
    return out


def test_import_dash_reads_a_json_export_from_standard_input(
    tmp_path: Path, reviewed_export: Path
) -> None:
    """`prep import -` said "-: no such file" (grade's --answers - reads standard input)."""
    from prep.engine.store import Store

    db = tmp_path / "to.db"
    done = CliRunner().invoke(
        main, ["--db", str(db), "import", "-"], input=reviewed_export.read_bytes()
    )
    assert done.exit_code == 0, done.output
    assert done.stdout.startswith("Imported the export on standard input: ")
    assert "3 reviews added" in done.stdout, done.stdout
    with Store.open(db) as store:
        held = sorted(r[0] for r in store.conn.execute("SELECT card_id FROM reviews"))
    assert held == ["other-card", "wo-two-roles", "wo-two-roles"]
    again = CliRunner().invoke(
        main, ["--db", str(db), "import", "-"], input=reviewed_export.read_bytes()
    )
    assert again.exit_code == 0 and "0 reviews added" in again.stdout, again.output


@pytest.mark.parametrize(
    ("given", "line"),
    [
        (b"", "standard input: not a prep export (nothing came on it)"),
        (b"\xff\xfe{", "standard input: not a prep export (not UTF-8 text)"),
        (
            b"PK\x03\x04\x14\x00\x08\x00\xa7\xb1",
            "standard input: not a prep export (a zip archive, e.g. an Anki",
        ),
        (b"card_id,", "standard input: a CSV export is several files (FILE.csv with"),
        (b"[" * 3000, "standard input: not a prep export ("),
        (b"x" * 4096, "standard input: more than 4,000 bytes; too big to be read"),
    ],
    ids=["empty", "not-utf8", "zip", "csv", "nested", "too-big"],
)
def test_import_dash_refuses_bad_input_in_one_line_and_makes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: bytes, line: str
) -> None:
    from prep.engine.transfer import readers

    monkeypatch.setattr(readers, "MAX_EXPORT_BYTES", 4000)  # (256 MB for real)
    done = CliRunner().invoke(main, ["--db", str(tmp_path / "to.db"), "import", "-"], input=given)
    assert done.exit_code == 2, done.output
    (said,) = done.stderr.splitlines()
    assert said.startswith(f"prep: {line}"), said
    assert list(tmp_path.iterdir()) == []  # (no database made, no backup)


def test_check_dash_reads_a_deck_from_standard_input(tmp_path: Path) -> None:
    good = "deck: mine\ncards:\n  - id: m1\n    kind: recall\n    prompt: p\n    answer: a\n"
    done = check("-", stdin=good)
    assert done.exit_code == 0 and done.stdout.startswith("ok: "), done.output
    bad = good.replace("prompt: p", 'prompt: "a\\u202eb"')
    done = check("-", stdin=bad)
    assert done.exit_code == 2
    assert done.stderr.splitlines()[-1].startswith(
        "standard input:5: card 'm1': field 'prompt' has a bidirectional control U+202E"
    ), done.stderr
    for args, stdin, line in [
        (["-", "-"], good, "- (standard input) given twice; it holds one deck"),
        (["-"], b"a\xffb", "standard input: not UTF-8 text (byte 2)"),
        (["-"], b"#" * (deck_mod.MAX_DECK_BYTES + 1), "standard input: more than 2,097,152"),
    ]:
        done = check(*args, stdin=stdin)
        assert done.exit_code == 2 and done.stderr.startswith(f"prep: {line}"), done.output


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["sync", "-"], "sync -: DIR is the sync folder that your machines share"),
        (["sync", "--status", "-"], "sync -: DIR is the sync folder"),
        (["--db", "-", "stats"], "--db -: the progress database is a file prep opens"),
        (["--questions", "-", "check"], "--questions -: it names a folder or file of your own"),
        (["backup", "--restore", "-"], "--restore -: a backup is restored by its name"),
        (["demo", "real-ov-rank", "--model", "-"], "demo: error: --model -: a checkpoint"),
    ],
    ids=["sync", "status", "db", "questions", "restore", "model"],
)
def test_dash_where_no_standard_input_is_read_is_said_in_one_line(
    tmp_path: Path, args: list[str], line: str
) -> None:
    """`prep sync -` said "-: no such folder (create it...)": now each names what it wants."""
    done = CliRunner().invoke(
        main, ["--db", str(tmp_path / "p.db"), *args] if args[0] != "--db" else args, input=""
    )
    assert done.exit_code == 2, done.output
    (said,) = done.stderr.splitlines()
    assert said.startswith(f"prep {line}" if "demo:" in line else f"prep: {line}"), said
    assert "not standard input" in said and not (tmp_path / "p.db").exists()


def test_the_app_shows_a_home_that_is_not_there_and_makes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`prep` alone (the app): Store.pending_upgrade let the StoreError through, a traceback;
    now the app's error screen says it, and nothing is made."""
    import asyncio

    from prep.tui.app import PrepApp
    from prep.tui.screens.errors import ErrorScreen
    from tests.pilot import wait_until

    home = tmp_path / "no-such-home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("PREP_DB", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    app = PrepApp(db=None)
    seen: dict[str, str] = {}

    async def run() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_until(pilot, lambda: isinstance(app.screen, ErrorScreen))
            assert isinstance(app.screen, ErrorScreen)
            seen["lines"] = " ".join(app.screen.lines)
            await pilot.pause(0.3)
            await pilot.press("q")

    asyncio.run(run())
    assert f"HOME {home} does not exist" in seen["lines"], seen
    assert not home.exists()
