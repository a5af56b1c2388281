"""The fast deck reader (engine/decks/fastyaml.py) and the hardened loader agree on every text:
where the fast one decides, it builds exactly what the hardened one builds (values, types, the
line of every mapping and key, repeated keys); everything else it leaves to the hardened one,
so every refusal (aliases, tags, depth, syntax, values that cannot be read) stays that loader's.
Held on every bundled deck, a corpus of odd and hostile YAML, random structures dumped in every
style PyYAML writes and random edits of the bundled decks."""

from __future__ import annotations

import random
import string
from typing import Any

import pytest
import yaml

from prep.engine.decks import deckyaml
from prep.engine.decks.deck import parse_deck_text
from prep.engine.decks.fastyaml import Undecided, fast_load
from prep.engine.decks.files import bundled_deck_files


def canon(value: Any) -> Any:
    """Everything the loaders build, types and line numbers included, as comparable data."""
    if isinstance(value, dict):
        return (
            "map",
            type(value).__name__,
            getattr(value, "line", None),
            [(canon(k), line) for k, line in getattr(value, "key_lines", {}).items()],
            [(canon(k), line) for k, line in getattr(value, "duplicate_keys", [])],
            [(canon(k), canon(v)) for k, v in value.items()],
        )
    if isinstance(value, list):
        return ("list", [canon(v) for v in value])
    if isinstance(value, float) and value != value:
        return ("float", "nan")
    return (type(value).__name__, value)


def full(text: str) -> tuple[str, Any]:
    try:
        return "ok", canon(deckyaml.load_yaml(text, fast=False))
    except (yaml.YAMLError, deckyaml.Refused, RecursionError) as exc:
        return "error", str(exc)


def agree(text: str) -> bool:
    """True when the fast reader decided ``text`` (and built what the hardened loader
    builds); False when it left the text to the hardened loader."""
    try:
        fast = canon(fast_load(text))
    except Undecided:
        return False
    assert full(text) == ("ok", fast), text[:500]
    return True


def parsed_both_ways(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """parse_deck_text gives the same deck, cards and errors with and without the fast reader."""
    fast = parse_deck_text(text, "d.yaml", "d")
    with monkeypatch.context() as m:
        m.setattr(deckyaml, "fast_load", _never)
        slow = parse_deck_text(text, "d.yaml", "d")
    assert fast == slow, text[:500]


def _never(text: str, cards_budget: int | None = None) -> Any:
    raise Undecided("off")


def test_every_bundled_deck_is_read_fast_and_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    files = bundled_deck_files()
    assert len(files) >= 6
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert agree(text), f"{path.name} left to the slow loader"
        parsed_both_ways(text, monkeypatch)


ODD = [
    # refusals of the hardened loader: never decided here
    "a: &x [1, 2]\nb: *x\ncards: []\n",
    "a: &a [*a]\n",
    "cards:\n  - !!python/object:os.system {}\n",
    "cards: !custom [1]\n",
    "deck: !!str 12\ncards: []\n",
    "x: " + "[" * 40 + "]" * 40 + "\n",
    "x:\n" + "".join("  " * d + "- \n" for d in range(1, 40)),
    "x:\n" + "".join("  " * d + f"k{d}:\n" for d in range(1, 40)) + "  " * 40 + "v: 1\n",
    "x: 2024-13-45\n",
    "x: " + "9" * 5000 + "\n",
    "%YAML 1.1\n---\nx: 1\n",
    "x: 1\n---\ny: 2\n",
    "x: 1\n...\n",
    "\ufeffx: 1\n",
    "x: 1\r\ny: 2\r\n",
    "x: a\x85b\n",
    "x: a\u2028b\n",
    "x: a\tb\n",
    "x:\ta\n",
    "x: a\x1bb\n",
    "x: a\x00b\n",
    "? [a, b]\n: c\n",
    "? a\n: b\n",
    '"quoted key": 1\n',
    "<<: {a: 1}\nb: 2\n",
    "=: 1\n",
    # plain scalars that YAML resolves to something other than text
    "a: yes\nb: No\nc: ON\nd: off\ne: ~\nf: null\ng: Null\nh: NULL\ni: true\nj: False\n",
    "a: 1\nb: -1\nc: +1\nd: 0\ne: 007\nf: 0x1F\ng: 0b101\nh: 1_000\ni: 1:30\nj: 99999999999999999999\n",
    "a: 1.5\nb: .5\nc: 1.\nd: 1e3\ne: 1.0e+3\nf: .inf\ng: -.Inf\nh: .NaN\ni: 6.8523015e+5\n",
    "a: 2024-01-01\nb: 2001-12-14t21:59:43.10-05:00\n",
    "yes: 1\nno: 2\n1: 3\nnull: 4\n~: 5\n0x10: 6\n1.5: 7\n",
    # plain and quoted text
    "a: b: c\n",
    "a: b:c\n",
    "a:b\n",
    "a: b #c\nd: e#f\n",
    "a: b   \n",
    "a: 'it''s'\nb: ''\nc: \"\"\n",
    'a: "x" y\n',
    'a: "\\e[31m"\nb: "\\x41\\u00e9\\U0001F600\\N\\_\\L\\P\\/\\ \\0\\t"\n',
    'a: "\\ud800"\n',
    'a: "\\q"\n',
    'a: "\\U00110000"\n',
    'a: "unterminated\n',
    "a: 'unterminated\n",
    'a: "two\n  lines"\n',
    "a: two\n  lines\n",
    "a: C# and F#\nb: 50% off\nc: a & b\nd: a * b\ne: x!y\nf: -x\ng: ?x\nh: :x\n",
    "a: - b\n",
    "a: @x\n",
    "a: `x`\n",
    "a: |x\n",
    "a: >2\n   b\n",
    "a: \u00a0b\u00a0\n",
    "ключ: значение\nemoji: 😀 ok\n",
    # flow collections
    "a: [b, c, 'd', \"e\", [f, g], {h: i}]\n",
    "a: [ b , c ]\nb: []\nc: {}\nd: {x: 1, y: [2, 3]}\n",
    "a: [b, c,]\n",
    "a: [b,,c]\n",
    "a: [b: c]\n",
    "a: {b}\n",
    "a: {b: }\n",
    "a: {b:c}\n",
    "a: {b: c, b: d}\n",
    "a: [b, c] d\n",
    "a: [b, c] # ok\n",
    "a: [b,\n  c]\n",
    "a: {b: Q?}\n",
    "a: [Q?, b]\n",
    "a: [a:b]\n",
    # block structure
    "a: 1\na: 2\nb:\n  c: 1\n  c: 2\n",
    "cards:\n- id: x\n  tags:\n  - a\n  - b\n- id: y\n",
    "cards:\n  - id: x\n    tags:\n      - a\n  - id: y\n",
    "cards:\n  -   id: x\n      kind: recall\n",
    "cards:\n  -\n    id: x\n  -\n  - y\n",
    "cards:\n  - - a\n",
    "cards:\n  - a\n  b: c\n",
    "a:\n  b: 1\n   c: 2\n",
    "a:\n  b: 1\n c: 2\n",
    "a: 1\n  b: 2\n",
    "cards:\n  - id: x\n  # a comment\n\n  - id: y # why\n# end\n",
    "cards:\n- {}\n- {}\n-\n- []\n",
    "a:\nb:\n",
    "a:\n  # only a comment\nb: 1\n",
    "- a\n- b\n",
    "just text\n",
    "",
    "# only a comment\n",
    "\n\n",
    "a: 1",
    "a:",
    # block scalars
    "a: >-\n  one\n  two\n\n  three\n\n\n  four\nb: 1\n",
    "a: >\n  one\n    more\n  two\n\n  three\nb: 1\n",
    "a: |\n  one\n    more\n  two\n\n\nb: 1\n",
    "a: |-\n  one\n  two\n",
    "a: |+\n  one\n  two\n\n\nb: 1\n",
    "a: >+\n  one\n\n",
    "a: >+\n  one",
    "a: >\n  one",
    "a: |\n  one\n  # not a comment\n  two\n",
    "a: >\n\n  one\n",
    "a: >\n  one\n   \n  two\n",
    "a: >\n  one\n \n  two\n",
    "a: >\nb: 1\n",
    "a: >\n",
    "a: > # comment\n  one\n",
    "a: >-   \n  one\n",
    "cards:\n  - >\n    folded item\n",
    "cards:\n  - id: x\n    answer: >-\n      one\n      two\n    tags: [a]\n",
]


@pytest.mark.parametrize("text", ODD)
def test_odd_and_hostile_yaml_agrees(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    agree(text)
    parsed_both_ways(text, monkeypatch)


def test_the_fast_reader_never_reads_an_alias_a_tag_or_deep_nesting() -> None:
    for text in ODD[:8]:
        with pytest.raises(Undecided):
            fast_load(text)


WORDS = [
    "id", "kind", "prompt", "yes", "No", "null", "~", "1", "-2", "0x1F", "1_0", "1:2", "1.5",
    "1e3", ".inf", "2024-01-01", "<<", "=", "a b", "a: b", "a #b", "a#b", "", " ", "'", '"',
    "[x]", "{x}", "- x", "? x", "&a", "*a", "!t", "%", "@", "`", "|", ">", "é", "\u2028",
    "\x85", "\t", "\n", "\\", "C#", "W_O[h]", "x:", ":x", "-", "--- x", "... x",
]  # fmt: skip


def _random_text(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.4:
        return rng.choice(WORDS)
    if roll < 0.7:
        return " ".join(rng.choice(WORDS[:30]) for _ in range(rng.randint(1, 6)))
    pool = string.ascii_letters + string.digits + " :#-?,[]{}&*!|>'\"%@`\\.\n\té_~"
    return "".join(rng.choice(pool) for _ in range(rng.randint(0, 30)))


def _random_value(rng: random.Random, depth: int) -> Any:
    roll = rng.random()
    if depth > 3 or roll < 0.5:
        return rng.choice([None, True, 1, -7, 1.5, _random_text(rng), _random_text(rng)])
    if roll < 0.75:
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {_random_text(rng): _random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def _random_dump(rng: random.Random) -> str:
    data = {rng.choice(WORDS[:20]): _random_value(rng, 0) for _ in range(rng.randint(1, 5))}
    return yaml.dump(
        data,
        default_flow_style=rng.choice([False, False, True, None]),
        default_style=rng.choice([None, None, None, None, '"', "'", "|", ">"]),
        allow_unicode=rng.random() < 0.7,
        width=rng.choice([20, 80, 1000]),
        indent=rng.choice([2, 4]),
    )


def _edited_deck(rng: random.Random, decks: list[list[str]]) -> str:
    lines = rng.choice(decks)
    cards = [i for i, line in enumerate(lines) if line.startswith("  - id:")]
    start = rng.choice(cards)
    lines = ["deck: d", "cards:", *lines[start : start + rng.randint(1, 80)]]
    for _ in range(rng.choice([0, 1, 1, 2, 3])):
        i = rng.randrange(len(lines))
        line = lines[i]
        edit = rng.randrange(6)
        if edit == 0:
            at = rng.randint(0, len(line))
            lines[i] = line[:at] + rng.choice(WORDS) + line[at:]
        elif edit == 1 and line:
            at = rng.randrange(len(line))
            lines[i] = line[:at] + line[at + 1 :]
        elif edit == 2:
            lines.insert(i, line)
        elif edit == 3:
            lines[i] = " " * rng.randint(1, 3) + line
        elif edit == 4:
            lines[i] = line[rng.randint(0, 3) :]
        else:
            del lines[i]
    return "\n".join(lines) + rng.choice(["\n", "", "\n\n"])


def test_random_yaml_agrees_and_most_of_it_is_read_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(21)
    decks = [p.read_text(encoding="utf-8").splitlines() for p in bundled_deck_files()]
    decided = {"dump": 0, "edit": 0}
    for n in range(1000):
        family = "dump" if n % 2 else "edit"
        text = _random_dump(rng) if family == "dump" else _edited_deck(rng, decks)
        decided[family] += agree(text)
        if n % 10 == 0:
            parsed_both_ways(text, monkeypatch)
    # the comparison means something only where the fast reader decides: most edited decks
    # and a good share of the dumps (the rest are aliases, tags, multi-line text, errors)
    assert decided["edit"] > 200 and decided["dump"] > 50, decided


def _flow_card(i: int) -> str:
    return f"- {{id: c{i}, kind: recall, prompt: p{i}, answer: a{i}}}\n"


TAILS = {
    "broken cards, then only empty ones": "deck: e\ncards:\n" + "- {}\n" * 3000,
    "indented, with comments and blank lines": "deck: e\ncards:\n"
    + "  - {}\n  # why\n\n  -\n  - id:\n  - word\n" * 600,
    "valid cards up to the budget, then empty ones": "deck: e\ncards:\n"
    + "".join(_flow_card(i) for i in range(1000))
    + "- []\n" * 2000,
    "empty cards, then a deck field": "deck: e\ncards:\n" + "-\n" * 3000 + "title: t\n",
    "empty cards, then a date that cannot be read": "deck: e\ncards:\n"
    + "- {}\n" * 3000
    + "- 2024-13-45\n",
    "empty cards, then an alias": "deck: e\ncards:\n" + "- {}\n" * 3000 + "- *a\n",
}


@pytest.mark.parametrize("name", TAILS)
def test_a_long_tail_of_trivial_cards_is_counted_not_read(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = TAILS[name]
    parsed_both_ways(text, monkeypatch)  # the same deck, cards and errors either way
    try:
        cards = fast_load(text, cards_budget=1000)["cards"]
    except Undecided:
        cards = None
    if name.startswith(("broken", "indented", "valid")):
        # read up to the budget, the rest only counted (the error cap is hit long before)
        items = sum(line.lstrip().startswith("-") for line in text.splitlines())
        assert len(cards) == 1000 and cards.skipped == items - 1000
    else:  # anything but trivial items after the budget: the whole file is read
        assert cards is None or not getattr(cards, "skipped", 0)


def test_a_2_mb_deck_of_empty_cards_is_refused_without_reading_it_all() -> None:
    import tracemalloc

    from prep.engine.decks.deck import MAX_DECK_BYTES, MAX_ERRORS_PER_FILE

    text = "deck: empty\ncards:\n" + "- {}\n" * ((MAX_DECK_BYTES - 30) // 5)
    tracemalloc.start()
    info, cards, errors = parse_deck_text(text, "e.yaml", "e")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    checked = (len(errors) - 1) // 4  # each empty card: 4 missing fields
    assert cards == [] and MAX_ERRORS_PER_FILE < len(errors) <= MAX_ERRORS_PER_FILE + 5
    assert errors[-1].message.startswith(f"... {text.count('- {}') - checked:,} more cards")
    # every card built was ~450 MB and 5 s (an alias bomb: refused in ~0.1 s, 5 MB)
    assert peak < 60_000_000, peak
