"""fastdeck's one pass (issue 26, item 4: the first open's fill) gives exactly what the general
path gives (parse_deck_text, then the cache's rows), or declines: on generated decks, on a
corpus of cards each a step away from the plain shape, and on random edits of a plain deck."""

from __future__ import annotations

import random
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from prep.engine.decks.fastdeck import general_rows, parse_rows, plain_rows
from prep.engine.decks.fastyaml import Undecided

sys.path.insert(0, str(Path(__file__).parent / "benchmarks"))

HEAD = "deck: plain\ntitle: A plain deck\ncards:\n"
CARD = (
    "  - id: c-1\n"
    "    kind: recall\n"
    '    prompt: "Why does W_O matter?"\n'
    "    answer: Because it mixes the heads back into the residual stream.\n"
    "    explain: 'One short paragraph.'\n"
    "    tags: [t0, t-1]\n"
)
CHOICE = (
    "  - id: c-2\n"
    "    kind: choice\n"
    "    prompt: Pick one\n"
    '    answer: "b"\n'
    '    choices: ["x ", y, "z"]\n'
    "    correct: B\n"
    "    demo: dla\n"
    "    level: basics\n"
)
FOLLOW = (
    "  - id: c-3\n"
    "    kind: follow-up\n"
    "    parent: c-1\n"
    "    prompt: And then?\n"
    "    answer: Then this.\n"
    "    aliases: [old-3]\n"
    "    sources: [a, b]\n"
    "    bullets: one\n"
    "    points: [p]\n"
    "    analogy: Like a bill.\n"
)
BODY = CARD + CHOICE + FOLLOW
PLAIN = HEAD + BODY


def decided(text: str) -> bool:
    """plain_rows decides ``text`` (and then gives what the general path gives), or declines."""
    try:
        fast = plain_rows(text, "d.yaml", "d")
    except Undecided:
        return False
    assert fast == general_rows(text, "d.yaml", "d"), text
    return True


def test_a_plain_deck_is_decided_and_identical() -> None:
    assert decided(PLAIN)
    info, rows, errors = plain_rows(PLAIN, "d.yaml", "d")
    assert info is not None and errors == [] and [r[1] for r in rows] == ["c-1", "c-2", "c-3"]
    assert [r[0] for r in rows] == [4, 10, 18]  # each card's line: its key in the cache


def test_generated_collections_take_the_one_pass_and_match(tmp_path: Path) -> None:
    import gencoll

    cards = list(gencoll.generate(1200, 1, datetime(2026, 1, 5, tzinfo=UTC)))
    gencoll.write_decks(cards, tmp_path)
    texts = [p.read_text(encoding="utf-8") for p in sorted(tmp_path.glob("*.yaml"))]
    assert texts
    for text in texts:
        assert decided(text)
        assert parse_rows(text, "d.yaml", "d") == general_rows(text, "d.yaml", "d")


# Each a step away from the plain shape: the one pass declines it or gives the same rows.
# (the cards' errors must all decline: the general path words them, with their lines)
STEPS = [
    ("blank line between cards", PLAIN.replace(CHOICE, "\n" + CHOICE), False),
    ("comment line", PLAIN.replace(CHOICE, "  # c\n" + CHOICE), False),
    ("comment after a value", PLAIN.replace("kind: recall", "kind: recall # c"), False),
    ("trailing space", PLAIN.replace("kind: recall", "kind: recall "), False),
    ("two spaces after the colon", PLAIN.replace("kind: recall", "kind:  recall"), False),
    ("two spaces before quotes", PLAIN.replace('prompt: "Why', 'prompt:  "Why'), False),
    ("a space after the parent", PLAIN.replace("parent: c-1", "parent: c-1 "), False),
    ("an escape", PLAIN.replace("Why does", "Why\\tdoes"), False),
    ("an escaped ESC", PLAIN.replace("Why does", "Why\\x1b[2Jdoes"), False),
    ("a quote inside", PLAIN.replace("Why does", 'Why "does'), False),
    ("single quotes doubled", PLAIN.replace("One short", "One''s short"), False),
    ("unknown field", PLAIN.replace("kind: recall", "kind: recall\n    colour: red"), False),
    ("repeated field", PLAIN.replace("kind: recall", "kind: recall\n    kind: choice"), False),
    ("no prompt", PLAIN.replace('    prompt: "Why does W_O matter?"\n', ""), False),
    ("empty prompt", PLAIN.replace('"Why does W_O matter?"', '""'), False),
    ("blank prompt", PLAIN.replace('"Why does W_O matter?"', '"   "'), False),
    ("wide blank prompt", PLAIN.replace('"Why does W_O matter?"', '"\u3000"'), False),
    ("id not a slug", PLAIN.replace("id: c-1", "id: C_1"), False),
    ("id a number", PLAIN.replace("id: c-1", "id: 12"), False),
    ("kind unknown", PLAIN.replace("kind: recall", "kind: essay"), False),
    ("yes as text", PLAIN.replace("kind: recall", "kind: yes"), False),
    ("null", PLAIN.replace("explain: 'One short paragraph.'", "explain: ~"), False),
    ("a date", PLAIN.replace("bullets: one", "bullets: 2026-01-05"), False),
    ("a float", PLAIN.replace("bullets: one", "bullets: 1.5"), False),
    ("tags of a boolean", PLAIN.replace("[t0, t-1]", "[t0, no]"), False),
    ("tags empty", PLAIN.replace("[t0, t-1]", "[]"), True),
    ("tags of quoted text", PLAIN.replace("[t0, t-1]", '["a b", c]'), True),
    ("tags nested", PLAIN.replace("[t0, t-1]", "[[a], b]"), False),
    ("tags as a mapping", PLAIN.replace("[t0, t-1]", "{a: b}"), False),
    ("tags with an empty item", PLAIN.replace("[t0, t-1]", '[a, ""]'), False),
    ("tags trailing comma", PLAIN.replace("[t0, t-1]", "[a, ]"), False),
    ("a tag of one empty text", PLAIN.replace("[t0, t-1]", '""'), True),
    ("block scalar", PLAIN.replace('"Why does W_O matter?"', ">-\n      Why?"), False),
    ("literal scalar", PLAIN.replace('"Why does W_O matter?"', "|\n      Why?"), False),
    ("plain over two lines", PLAIN.replace("residual stream.", "residual\n      stream."), False),
    ("a colon and a space", PLAIN.replace("Because it", "Because: it"), False),
    ("a colon without space", PLAIN.replace("Because it", "Because:it"), True),
    ("anchor", PLAIN.replace('"Why does W_O matter?"', "&a x"), False),
    ("alias", PLAIN.replace('"Why does W_O matter?"', "*a"), False),
    ("tag", PLAIN.replace('"Why does W_O matter?"', "!!str x"), False),
    ("choice with one option", PLAIN.replace('["x ", y, "z"]', "[x]"), False),
    ("choice with five", PLAIN.replace('["x ", y, "z"]', "[a, b, c, d, e]"), False),
    ("correct past the choices", PLAIN.replace("correct: B", "correct: d"), False),
    ("correct missing", PLAIN.replace("    correct: B\n", ""), False),
    (
        "correct on a recall card",
        PLAIN.replace("kind: recall", "kind: recall\n    correct: a"),
        False,
    ),
    ("follow-up without parent", PLAIN.replace("    parent: c-1\n", ""), False),
    ("parent blank", PLAIN.replace("parent: c-1", 'parent: " "'), False),
    ("alias its own id", PLAIN.replace("[old-3]", "[c-3]"), False),
    ("alias not a slug", PLAIN.replace("[old-3]", "[Old]"), False),
    ("level unknown", PLAIN.replace("level: basics", "level: expert"), False),
    ("level advanced", PLAIN.replace("level: basics", "level: advanced"), True),
    ("indentless items", HEAD + "".join(x[2:] for x in BODY.splitlines(True)), True),
    ("deeper items", HEAD + "".join("  " + x for x in BODY.splitlines(True)), True),
    ("a field too deep", PLAIN.replace("    kind: recall", "     kind: recall"), False),
    ("a field too shallow", PLAIN.replace("    kind: recall", "   kind: recall"), False),
    ("a key after the cards", PLAIN + "order: 5\n", False),
    ("a document marker", PLAIN + "---\n", False),
    ("no final line break", PLAIN[:-1], False),
    ("a tab", PLAIN.replace("Pick one", "Pick\tone"), False),
    ("a carriage return", PLAIN.replace("\n", "\r\n"), False),
    ("a BOM", "\ufeff" + PLAIN, True),
    ("text beyond ASCII", PLAIN.replace("Pick one", "Choisis l'un — Σ_h z_h · W_O^h"), True),
    ("a C1 control", PLAIN.replace("Pick one", "Pick\x85one"), False),
    ("header block scalar", PLAIN.replace("title: A plain deck", "title: >-\n  A\n  deck"), True),
    ("header order", PLAIN.replace("title:", "order: 12\ntitle:"), True),
    ("header unknown field", PLAIN.replace("title:", "colour: red\ntitle:"), False),
    ("header bad name", PLAIN.replace("deck: plain", "deck: Plain Deck"), False),
    ("no header", PLAIN.replace(HEAD, "cards:\n"), True),
    ("cards twice", PLAIN.replace("title:", "cards: []\ntitle:"), False),
    ("cards with a comment", PLAIN.replace("cards:\n", "cards: # all\n"), False),
    ("header quote open", PLAIN.replace("title: A plain deck", 'title: "A plain'), False),
    ("flow cards", HEAD + "  - {id: c-1, kind: recall, prompt: p, answer: a}\n", False),
    ("empty card", HEAD + "  - {}\n", False),
]


@pytest.mark.parametrize(("what", "text", "expected"), STEPS, ids=[s[0] for s in STEPS])
def test_each_step_away_is_declined_or_identical(what: str, text: str, expected: bool) -> None:
    assert decided(text) is expected, what
    assert parse_rows(text, "d.yaml", "d") == general_rows(text, "d.yaml", "d")


def test_random_edits_of_a_plain_deck_are_declined_or_identical() -> None:
    rng = random.Random(26)
    alphabet = list(" -:#'\"[],{}\n\\abcyz019~&*!|>") + ["\t", "\u00e9", "\x1b"]
    decided_count = 0
    for _ in range(1500):
        chars = list(PLAIN)
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(chars))
            op = rng.random()
            if op < 0.4:
                chars[i] = rng.choice(alphabet)
            elif op < 0.7:
                del chars[i]
            else:
                chars.insert(i, rng.choice(alphabet))
        decided_count += decided("".join(chars))
    assert decided_count > 100  # (most edits inside a text value are still the plain shape)
