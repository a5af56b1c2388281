"""The review of polish17's fixes: `./-` is the file named -, never standard input; the home
folder worked out as platformdirs does (an empty or relative HOME, no passwd entry); (more
below, one section an item)."""

from __future__ import annotations

import pwd
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from prep.tui.cli import main

GOOD_DECK = "deck: fine\ncards:\n  - id: f1\n    kind: recall\n    prompt: p\n    answer: a\n"
BAD_DECK = (
    "deck: bad\ncards:\n  - id: b1\n    kind: recall\n    prompt: p\n    answer: a\n    bogus: 1\n"
)


def invoke(*args: str, stdin: str | None = None, env: dict[str, str | None] | None = None):
    return CliRunner().invoke(main, list(args), input=stdin, env=env)


# --- H1: only the argument "-" itself is standard input ---------------------------------------


@pytest.mark.parametrize("given", ["./-", ".//-", "././-"])
def test_check_dot_slash_dash_checks_the_file_named_dash_not_standard_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str
) -> None:
    """`prep check ./-` read standard input (Path("./-") is Path("-")), so a bad deck in the
    file named - passed with exit 0 when a good one was piped in."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "-").write_text(BAD_DECK)
    done = invoke("check", given, stdin=GOOD_DECK)
    assert done.exit_code == 2, done.output
    assert done.stderr.splitlines() == [
        "./-:7: card 'b1': unknown field 'bogus' (known fields: aliases, analogy, answer, "
        "bullets, choices, correct, demo, explain, id, kind, level, parent, points, prompt, "
        "sources, tags)"
    ], done.stderr
    # and "-" itself still reads standard input (the good deck: no error of the file's)
    done = invoke("check", "-", stdin=GOOD_DECK)
    assert done.exit_code == 0, done.output
    assert "bogus" not in done.output


def test_export_to_dot_slash_dash_writes_the_file_named_dash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`prep export -o ./- --format json` wrote the export to standard output (the writers
    took Path("-") for stdout); now the file named - holds it and stdout only the report."""
    monkeypatch.chdir(tmp_path)
    db = str(tmp_path / "p.db")
    assert invoke("--db", db, "config", "new_per_day", "5").exit_code == 0
    done = invoke("--db", db, "export", "-o", "./-", "--format", "json")
    assert done.exit_code == 0, done.output
    assert '"prep-export"' in (tmp_path / "-").read_text()
    assert done.stdout == "Wrote ./-: 0 reviews and the settings.\n", done.stdout
    csv = invoke("--db", db, "export", "-o", "./-", "--format", "csv")  # a file name: allowed
    assert csv.exit_code == 0, csv.output
    assert (tmp_path / "-.cards.csv").exists()
    to_stdout = invoke("--db", db, "export", "-o", "-")
    assert to_stdout.exit_code == 0 and '"prep-export"' in to_stdout.stdout


# --- M1, M2: the home folder as platformdirs works it out --------------------------------------


@pytest.fixture
def no_default_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.delenv("PREP_DB", raising=False)


@pytest.mark.parametrize(
    ("home", "said"), [("", "HOME is empty"), ("relhome", "HOME relhome is not an absolute path")]
)
def test_an_empty_or_relative_home_leads_to_the_password_home_which_is_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_default_env: None, home: str, said: str
) -> None:
    """HOME="" or a relative HOME: platformdirs takes it for unset and puts the database under
    the password database's home; prep checked `~` expanded (/ or the relative folder)
    instead, so a passwd home that is not there was made, folders and all."""
    gone = tmp_path / "passwd-home"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", home)
    monkeypatch.setattr(pwd, "getpwuid", lambda uid: SimpleNamespace(pw_dir=str(gone)))
    done = invoke("config", "new_per_day", "5")
    assert done.exit_code == 2, done.output
    assert done.stderr.splitlines() == [
        f"prep: {said}, and the home folder {gone} (the password database's) does not exist, "
        f"and the progress database's default place is in it ({gone}/.local/share/prep/"
        "prep.db); set HOME to your home folder, or name the database with --db PATH or "
        "PREP_DB; nothing made"
    ], done.stderr
    assert not gone.exists() and not (tmp_path / "relhome").exists()


@pytest.mark.parametrize("home", [None, "", "relhome"])
def test_no_home_at_all_is_one_line_not_an_internal_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_default_env: None, home: str | None
) -> None:
    """No passwd entry and HOME unset, empty or relative (Docker's `--user 1000`):
    platformdirs raised RuntimeError, and prep said "internal error", exit 70."""

    def no_entry(uid: int) -> None:
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    monkeypatch.chdir(tmp_path)
    if home is None:
        monkeypatch.delenv("HOME", raising=False)
    else:
        monkeypatch.setenv("HOME", home)
    monkeypatch.setattr(pwd, "getpwuid", no_entry)
    for args in (["config", "new_per_day", "5"], ["stats"]):
        done = invoke(*args)
        assert done.exit_code == 2, done.output
        (line,) = done.stderr.splitlines()
        assert line.startswith("prep: no home folder: HOME "), line
        assert line.endswith(
            "has no home in the password database, so the progress database has no default "
            "place; set HOME to your home folder, or name the database with --db PATH or "
            "PREP_DB; nothing made"
        ), line
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setenv("PREP_DB", str(tmp_path / "named.db"))  # the way out the line gives
    assert invoke("config", "new_per_day", "5").exit_code == 0


# --- M3: the format characters text needs are taken; the ones that hide text still refused -----

CARD = 'deck: d\ncards:\n  - id: c1\n    kind: recall\n    prompt: "{prompt}"\n    answer: a\n'
SCOTLAND = "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f"


@pytest.mark.parametrize(
    "text",
    [
        "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",  # Persian: ZWNJ
        "\u0915\u094d\u200d\u0937",  # Devanagari: ZWJ (a half form)
        "family \U0001f468\u200d\U0001f469\u200d\U0001f467",  # an emoji ZWJ sequence
        f"the flag of Scotland {SCOTLAND}",  # a subdivision flag (tag sequence)
        "\u0600\u0661\u0662 and \u06dd\u0663",  # Arabic number sign, end of ayah
        "Syriac \u070f, Kaithi \U000110bd",  # other prepended concatenation marks
    ],
    ids=["zwnj", "zwj-indic", "zwj-emoji", "subdivision-flag", "arabic-signs", "pcm"],
)
def test_text_that_needs_a_format_character_is_taken_on_both_paths(
    tmp_path: Path, text: str
) -> None:
    """polish17 refused every Cf character: ZWNJ (Persian, Indic), ZWJ (emoji sequences), a
    subdivision flag's tags and the Arabic signs that display made a card refused."""
    import json

    from prep.engine.decks.fastdeck import Undecided, general_rows, parse_rows, plain_rows

    deck = CARD.format(prompt=text)
    fast, general = parse_rows(deck, "d.yaml", "d"), general_rows(deck, "d.yaml", "d")
    assert general[2] == [] and fast == general, (general[2], fast[2])
    (row,) = general[1]
    assert text in {v for v in json.loads(row[7]) if isinstance(v, str)}, row
    if max(text) >= "\U000e0020":  # (a tag: the one-pass reader leaves it to the general path)
        with pytest.raises(Undecided):
            plain_rows(deck, "d.yaml", "d")
    else:
        assert plain_rows(deck, "d.yaml", "d") == general  # (the one pass took it)
    (tmp_path / "d.yaml").write_text(deck, encoding="utf-8")
    done = invoke("check", str(tmp_path / "d.yaml"))
    assert done.exit_code == 0, done.output


@pytest.mark.parametrize(
    ("text", "point", "instead"),
    [
        ("a\U000e0041", "U+E0041 (TAG LATIN CAPITAL LETTER A)", "remove it"),
        ("\U0001f3f4\U000e0067\U000e0062", "U+E0067 (TAG LATIN SMALL LETTER G)", "remove it"),
        ("\U0001f600\U000e0067\U000e007f", "U+E0067 (TAG LATIN SMALL LETTER G)", "remove it"),
        (f"{SCOTLAND}\U000e0041", "U+E0041 (TAG LATIN CAPITAL LETTER A)", "remove it"),
        ("two\u200bwords", "U+200B (ZERO WIDTH SPACE)", "use a plain space, or nothing"),
        ("a\u2062b", "U+2062 (INVISIBLE TIMES)", "write the operator (* or ×), or nothing"),
        ("a\u2029b", "U+2029 (PARAGRAPH SEPARATOR)", "use a blank line"),
        ("a\ufeffb", "U+FEFF (ZERO WIDTH NO-BREAK SPACE)", "remove it (a no-break space"),
        ("a\u2060b", "U+2060 (WORD JOINER)", "remove it (a no-break space"),
        (
            "\ufff9a\ufffab\ufffb",
            "U+FFF9 (INTERLINEAR ANNOTATION ANCHOR)",
            "remove it",
        ),  # (a flag of tag spaces and capitals: ASCII hidden behind a flag; the review of polish17b)
        (
            "\U0001f3f4\U000e0049\U000e0047\U000e004e\U000e0020\U000e007f",
            "U+E0049 (TAG LATIN CAPITAL LETTER I)",
            "remove it",
        ),
        (
            "\U0001f3f4" + "\U000e0061" * 40 + "\U000e007f",
            "U+E0061 (TAG LATIN SMALL LETTER A)",
            "remove it",
        ),
    ],
    ids=[
        "stray-tag",
        "flag-uncancelled",
        "tags-after-a-face",
        "tag-after-a-flag",
        "zwsp",
        "invisible-times",
        "paragraph-separator",
        "bom-inside",
        "word-joiner",
        "annotation",
        "hidden-ascii-flag",
        "long-tag-run",
    ],
)
def test_what_hides_text_is_still_refused_with_what_to_write_instead(
    text: str, point: str, instead: str
) -> None:
    """Refused as before, on both paths alike; the line says what to write instead where
    there is an obvious alternative (a plain space for a zero-width space)."""
    from prep.engine.decks.fastdeck import general_rows, parse_rows

    deck = CARD.format(prompt=text)
    fast, general = parse_rows(deck, "d.yaml", "d"), general_rows(deck, "d.yaml", "d")
    assert fast[1] == general[1] == []
    assert [str(e) for e in fast[2]] == [str(e) for e in general[2]]
    (error,) = [str(e) for e in general[2]]
    assert f"an invisible character {point} at position " in error, error
    assert f"(a card must read as it is stored); {instead}" in error, error


# --- L1: sync --status says when the last waiting file is applied --------------------------------


def test_sync_status_until_is_the_latest_date_the_waiting_files_need(tmp_path: Path) -> None:
    """Files 2 and 3 of a device dated 2280 and 2300: --status said "until 2280-04-30", the
    first file's date only, though file 3 waits twenty years more."""
    import json
    from datetime import UTC, datetime

    from prep.engine.sync import journal
    from prep.engine.sync.run import sync
    from tests.syncfaults import three
    from tests.test_sync import rate

    a, b, c, folder = three(tmp_path)
    rate(a, "y", 3, datetime(2280, 5, 1, 12, tzinfo=UTC))
    sync(a, folder, now=datetime(2280, 5, 1, 12, tzinfo=UTC))
    rate(a, "w", 3, datetime(2300, 5, 1, 12, tzinfo=UTC))
    last = sync(a, folder, now=datetime(2300, 5, 1, 12, tzinfo=UTC)).journal
    assert last is not None
    db = Path(b.path)
    for s in (a, b, c):
        s.close()
    done = invoke("--db", str(db), "sync", "--status", "--json", str(folder))
    assert done.exit_code == 0, done.output
    (wait,) = json.loads(done.stdout)["files_waiting_for_clock"]
    assert wait == {"id": last.parent.name, "files": 2, "until": "2300-04-30T12:00:00.000000Z"}
    text = invoke("--db", str(db), "sync", "--status", str(folder))
    until = f"{datetime(2300, 4, 30, 12, tzinfo=UTC).astimezone():%Y-%m-%d %H:%M}"
    name = journal.header_name(last)
    assert (
        f"2 journal file(s) of {name} ({last.parent.name}) wait for this machine's clock, until "
        f"{until}: " in text.stdout
    ), text.stdout


# --- L3: PREP_DB=- is named PREP_DB; L4: backup --restore - gives no ./- hint ------------------


def test_prep_db_dash_names_the_environment_variable_not_the_option() -> None:
    """`PREP_DB=- prep stats` said "--db -: ...", an option the user never gave."""
    done = invoke("stats", env={"PREP_DB": "-"})
    assert done.exit_code == 2, done.output
    assert done.stderr.startswith("prep: PREP_DB -: the progress database is a file"), done.stderr
    given = invoke("--db", "-", "stats", env={"PREP_DB": None})
    assert given.exit_code == 2 and given.stderr.startswith("prep: --db -: "), given.stderr


def test_backup_restore_dash_gives_no_path_hint(tmp_path: Path) -> None:
    """`backup --restore -` suggested ./-, but a backup is named, not a path: ./- names none."""
    done = invoke("--db", str(tmp_path / "p.db"), "backup", "--restore", "-")
    assert done.exit_code == 2, done.output
    assert done.stderr.splitlines() == [
        "prep: --restore -: a backup is restored by its name (see `prep backup --list`), not "
        "standard input"
    ], done.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["import", "./-"], "./-: not a prep export"),
        (["sync", "./-"], "{cwd}/-: no such folder"),
        (["--db", "./-", "stats"], "{cwd}/-: no progress database here"),
    ],
    ids=["import", "sync", "db"],
)
def test_a_file_or_folder_named_dash_given_as_dot_slash_dash_is_never_named_dash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], said: str
) -> None:
    """`prep import ./-` said "-: not a prep export", `prep sync ./-` "-: no such folder":
    the file or folder named - (Path("./-") prints "-") read as if standard input were meant."""
    monkeypatch.chdir(tmp_path)
    if args[0] == "import":
        (tmp_path / "-").write_text("x\n")
    db = [] if args[0] == "--db" else ["--db", str(tmp_path / "p.db")]
    done = invoke(*db, *args, stdin="")
    assert done.exit_code == 2, done.output
    assert done.stderr.startswith(f"prep: {said.format(cwd=tmp_path)}"), done.stderr


def test_grade_rubric_dot_slash_dash_reads_the_file_named_dash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`prep grade --rubric ./-` took Path("./-"), which is Path("-"): standard input was read
    in place of the file named - (a good rubric piped in hid the broken file)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "-").write_text("question: [\n")
    (tmp_path / "a.jsonl").write_text('{"answer_id": 1, "answer": ""}\n')
    rubric = "question: q\npoints:\n  - id: p1\n    text: t\n"
    done = invoke("grade", "--rubric", "./-", "--answers", "a.jsonl", stdin=rubric)
    assert done.exit_code == 2, done.output
    assert done.stderr.splitlines() == ["prep: ./-:2: not valid YAML"], done.stderr
