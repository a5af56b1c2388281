"""Deck loading and validation: every error as FILE:LINE: message, all at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from prep.engine.decks.deck import parse_deck_text
from prep.engine.decks.deckcache import load_collection

DEMOS = ["block-diagonal", "no-wo"]


def errors_of(tmp_path: Path, text: str, name: str = "d.yaml") -> list[str]:
    f = tmp_path / name
    f.write_text(text, encoding="utf-8")
    coll = load_collection([f], include_bundled=False, demo_names=DEMOS)
    return [str(e) for e in coll.errors]


def test_small_deck_loads(small_collection) -> None:
    ids = [c.id for c in small_collection.cards]
    assert ids == ["roles", "pick-one", "roles-follow", "flag"]
    pick = small_collection.get("pick-one")
    assert pick.correct == 1 and pick.correct_letter == "b"
    assert small_collection.children("roles")[0].id == "roles-follow"
    assert small_collection.decks["small"].title == "A small test deck"


def test_each_error_names_file_and_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # paths are shown relative to the working directory
    text = """\
deck: bad
cards:
  - id: Bad_ID
    kind: recal
    prompt: x
    colour: red
  - id: ok-card
    kind: follow-up
    prompt: y
    answer: z
    parent: nope
    demo: blok-diagonal
  - id: c
    kind: choice
    prompt: p
    answer: a
    choices: [x]
    correct: e
  - id: c
    kind: recall
    prompt: again
    answer: dup
"""
    errs = errors_of(tmp_path, text)
    expected = [
        "d.yaml:3: card 'Bad_ID': missing required field 'answer'",
        "d.yaml:3: card id 'Bad_ID' is not a slug",
        "d.yaml:4: card 'Bad_ID': unknown kind 'recal'",
        "d.yaml:6: card 'Bad_ID': unknown field 'colour'",
        "d.yaml:7: card 'ok-card': parent 'nope' does not exist",
        "d.yaml:7: card 'ok-card': no demo named 'blok-diagonal' (did you mean 'block-diagonal'?)",
        "d.yaml:17: card 'c': needs 2 to 4 choices, has 1",
        "d.yaml:18: card 'c': 'correct' is 'e'",
        "d.yaml:19: duplicate card id 'c' (first defined at d.yaml:13)",
    ]
    assert len(errs) == len(expected), errs
    for want in expected:
        assert any(e.startswith(want) for e in errs), (want, errs)


def test_yaml_syntax_error_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    errs = errors_of(tmp_path, "cards:\n  - id: a\n    prompt: [unclosed\n")
    assert len(errs) == 1 and ":4: YAML syntax error" in errs[0]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "empty deck file"),
        ("- just\n- a list\n", "must be a mapping"),
        ("cards: 3\n", "'cards' must be a list"),
        ("cards: []\nextra: 1\n", "unknown deck field 'extra'"),
        ("cards:\n  - just text\n", "a card must be a mapping"),
        (
            "cards:\n  - id: a\n    kind: recall\n    prompt: p\n    answer: x\n    answer: y\n",
            "field 'answer' appears twice",
        ),
        (
            "cards:\n  - id: a\n    kind: choice\n    prompt: p\n    answer: x\n    choices: [no, yes]\n    correct: a\n",
            "read as the boolean False: quote it",
        ),
        (
            "cards:\n  - id: a\n    kind: recall\n    prompt: p\n    answer: x\n    correct: a\n",
            "only belongs on choice",
        ),
        (
            "cards:\n  - id: a\n    kind: follow-up\n    prompt: p\n    answer: x\n",
            "needs 'parent'",
        ),
        (
            "cards:\n  - id: a\n    kind: recall\n    prompt: p\n    answer: x\n    parent: a\n",
            "is its own parent",
        ),
    ],
)
def test_malformed_decks(tmp_path: Path, text: str, fragment: str) -> None:
    errs = errors_of(tmp_path, text)
    assert any(fragment in e for e in errs), errs
    assert all(":" in e.split(" ")[0] for e in errs)


def test_parent_cycle_is_reported(tmp_path: Path) -> None:
    text = """\
cards:
  - {id: a, kind: follow-up, prompt: p, answer: x, parent: b}
  - {id: b, kind: follow-up, prompt: p, answer: x, parent: a}
"""
    errs = errors_of(tmp_path, text)
    assert any("parent cycle" in e for e in errs), errs


def test_duplicate_ids_across_files(tmp_path: Path) -> None:
    (tmp_path / "one.yaml").write_text(
        "cards:\n  - {id: same, kind: recall, prompt: p, answer: a}\n"
    )
    (tmp_path / "two.yaml").write_text(
        "cards:\n  - {id: same, kind: recall, prompt: q, answer: b}\n"
    )
    coll = load_collection([tmp_path], include_bundled=False)
    assert [str(e) for e in coll.errors] == [
        f"{coll.errors[0].file}:2: duplicate card id 'same' (first defined at {coll.cards[0].file}:2)"
    ]
    assert len(coll.cards) == 1


def test_missing_file(tmp_path: Path) -> None:
    coll = load_collection([tmp_path / "nope.yaml"], include_bundled=False)
    assert [e.message for e in coll.errors] == ["no such file or folder"]


def test_content_hash_tracks_tested_text_only() -> None:
    base = "cards:\n  - id: a\n    kind: recall\n    prompt: P\n    answer: A\n"
    _, (a,), _ = parse_deck_text(base, "f", "f")
    _, (b,), _ = parse_deck_text(base + "    explain: more words\n", "f", "f")
    _, (c,), _ = parse_deck_text(base.replace("answer: A", "answer: B"), "f", "f")
    assert a.content_hash == b.content_hash != c.content_hash


# --- issue 14: deck errors say what is wrong where it is -----------------------------------

UNCLOSED = """\
deck: q
cards:
  - id: one
    kind: recall
    prompt: Q?
    answer: A.
    explain: "never closed
  - id: two
    kind: recall
    prompt: Q2?
    answer: A2.
"""


@pytest.mark.parametrize("quote", ['"', "'"])
def test_an_unclosed_quote_is_reported_where_it_opens(quote: str) -> None:
    _info, _cards, errors = parse_deck_text(UNCLOSED.replace('"', quote), "q.yaml", "q")
    assert [(e.line, e.message) for e in errors] == [
        (7, f"YAML syntax error: unclosed {quote} quote (the text quoted here never ends)")
    ]


@pytest.mark.parametrize(
    ("value", "hint"),
    [
        ("yes", 'boolean True: quote it, e.g. answer: "yes"'),
        ("off", "boolean False"),
        ("12", 'number 12: quote it, e.g. answer: "12"'),
    ],
)
def test_a_yaml_boolean_or_number_answer_says_quote_it(value: str, hint: str) -> None:
    text = f"deck: q\ncards:\n  - id: one\n    kind: recall\n    prompt: Q?\n    answer: {value}\n"
    _info, _cards, errors = parse_deck_text(text, "q.yaml", "q")
    assert len(errors) == 1 and errors[0].line == 6
    assert "must be non-empty text (YAML read it as the " + hint in errors[0].message


def test_a_follow_up_that_can_never_be_served_is_an_error_and_left_out(tmp_path: Path) -> None:
    (tmp_path / "f.yaml").write_text(
        "deck: f\ncards:\n"
        "  - {id: root, kind: recall, prompt: Q?, answer: A.}\n"
        "  - {id: kid, kind: follow-up, parent: root, prompt: Q?, answer: A.}\n"
        "  - {id: orphan, kind: follow-up, parent: ghost, prompt: Q?, answer: A.}\n"
        "  - {id: grandkid, kind: follow-up, parent: orphan, prompt: Q?, answer: A.}\n"
        "  - {id: loop-a, kind: follow-up, parent: loop-b, prompt: Q?, answer: A.}\n"
        "  - {id: loop-b, kind: follow-up, parent: loop-a, prompt: Q?, answer: A.}\n",
        encoding="utf-8",
    )
    coll = load_collection([tmp_path], include_bundled=False)
    messages = [e.message for e in coll.errors]
    assert "card 'orphan': parent 'ghost' does not exist" in messages
    assert any(m.startswith("parent cycle:") for m in messages)
    assert [c.id for c in coll.cards] == ["root", "kid"]  # the valid, servable cards
    assert coll.decks["f"].card_ids == ["root", "kid"]
    assert coll.get("grandkid") is None


def test_a_missing_questions_folder_is_one_clear_line(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from prep.tui.cli import main

    result = CliRunner().invoke(main, ["--questions", str(tmp_path / "nope"), "check"])
    assert result.exit_code == 2
    assert result.output.strip() == (
        f"prep: --questions {tmp_path / 'nope'}: no such folder or file (it names your own decks)"
    )
    coll = load_collection([tmp_path / "gone.yaml"], include_bundled=False)
    assert [str(e) for e in coll.errors] == [f"{tmp_path / 'gone.yaml'}: no such file or folder"]
