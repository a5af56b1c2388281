"""Fuzzing deck loading: whatever the file holds, `prep check` ends with exit 0, or with exit 2
and one short FILE:LINE: line per problem; never a traceback, and in bounded memory.

Inputs are random YAML structures (dumped by PyYAML, which writes anchors and aliases for
shared values) and random mutations of a real deck. The default run is small and
derandomized (the same examples every run); PREP_LONG_FUZZ=1 runs 3000 more (≈2 minutes).
"""

from __future__ import annotations

import os
import re
import tracemalloc
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prep.engine.decks.deck import CARD_KEYS, DECK_KEYS
from prep.engine.decks.deckcache import load_collection
from prep.tui.cli import main
from tests.conftest import SMALL_DECK

# What a deck's load may cost, whatever the file: decks here are at most a few kB, and
# loading a real 20 kB deck peaks near 1 MB. An alias bomb went to 670 MB.
PEAK_BYTES = 20_000_000
LINE = re.compile(r"^[^\n]+:\d+: [^\n]+$")

KEYS = st.sampled_from(sorted(DECK_KEYS | CARD_KEYS | {"x", "<<", "? a"}))
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.sampled_from(["recall", "choice", "follow-up", "red-flag", "a", "b", "c1", "wo-core"]),
)


def _shared(children: st.SearchStrategy) -> st.SearchStrategy:
    """Lists and mappings, sometimes holding one value twice (so PyYAML writes an alias)."""
    lists = st.lists(children, max_size=5)
    maps = st.dictionaries(st.one_of(KEYS, st.text(max_size=8)), children, max_size=6)
    twice = children.map(lambda v: [v, v] if isinstance(v, (list, dict)) else [v])
    return st.one_of(lists, maps, twice)


STRUCTURES = st.recursive(SCALARS, _shared, max_leaves=30)
DECKS = st.fixed_dictionaries(
    {"cards": st.lists(st.dictionaries(KEYS, STRUCTURES, max_size=8), max_size=4)},
    optional={k: STRUCTURES for k in ("deck", "title", "description")},
)

MUTATION_CHARS = "&*[]{}:-!|>?'\"#%@`,\n\t \\\x1b\x00\x85\u2028é7"
# whole tokens that PyYAML's constructors or our checks treat specially
TOKENS = [
    " &a ",
    " *a ",
    "<<: *a\n",
    "? [k]\n: v\n",
    " !!binary aGk= ",
    " !!binary ?? ",
    " !!set {a}",
    " !!python/object:os.system ",
    " !!timestamp 2024-13-45 ",
    " 2024-02-30 ",
    " 0x_ ",
    " 1e999 ",
    " " + "9" * 5000 + " ",
    " .nan ",
    " yes ",
    " ~ ",
    '"\\e]0;t\\a"',
    ' "\\x9b" ',
    " %YAML 1.1\n",
    "---\n",
    "...\n",
    "\n" + "  " * 40 + "- x\n",
    "[" * 50,
    "{" * 50,
]


@st.composite
def mutated_deck(draw: st.DrawFn) -> str:
    text = SMALL_DECK
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["insert", "token", "delete", "repeat"]))
        if op == "token":
            text = text[:at] + draw(st.sampled_from(TOKENS)) + text[at:]
        elif op == "insert":
            text = (
                text[:at]
                + draw(st.text(alphabet=MUTATION_CHARS, min_size=1, max_size=6))
                + text[at:]
            )
        elif op == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 30)) :]
        else:
            piece = text[at : at + draw(st.integers(1, 40))]
            text = text[:at] + piece * draw(st.integers(2, 5)) + text[at:]
    return text


def _dump(data: object) -> str:
    # both ways of writing text (escaped and raw) get their share
    return yaml.safe_dump(data, allow_unicode=len(repr(data)) % 2 == 0, sort_keys=False)


def assert_loads_cleanly(folder: Path, text: str) -> None:
    deck = folder / "fuzz.yaml"
    deck.write_text(text, encoding="utf-8", errors="surrogatepass")
    tracemalloc.start()
    try:
        coll = load_collection([deck], include_bundled=False, demo_names=["block-diagonal"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < PEAK_BYTES, peak
    for error in coll.errors:
        assert error.line >= 1
        assert LINE.match(str(error)) and len(str(error)) < 600, str(error)[:300]


FAST = settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
SLOW = settings(FAST, max_examples=3000)


@FAST
@given(data=DECKS)
def test_random_structures_load_cleanly(tmp_path: Path, data: object) -> None:
    assert_loads_cleanly(tmp_path, _dump(data))


@FAST
@given(text=mutated_deck())
def test_mutated_decks_load_cleanly(tmp_path: Path, text: str) -> None:
    assert_loads_cleanly(tmp_path, text)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("PREP_LONG_FUZZ"), reason="set PREP_LONG_FUZZ=1 (≈2 min)")
@SLOW
@given(data=DECKS, text=mutated_deck())
def test_fuzz_decks_long(tmp_path: Path, data: object, text: str) -> None:
    assert_loads_cleanly(tmp_path, _dump(data))
    assert_loads_cleanly(tmp_path, text)


@settings(FAST, max_examples=15)
@given(text=st.one_of(mutated_deck(), DECKS.map(_dump)))
def test_prep_check_exits_0_or_2_with_one_line_per_error(tmp_path: Path, text: str) -> None:
    deck = tmp_path / "fuzz.yaml"
    deck.write_text(text, encoding="utf-8", errors="surrogatepass")
    result = CliRunner().invoke(main, ["check", str(deck)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code in (0, 2), result.output
    if result.exit_code == 2:
        lines = result.stderr.splitlines()
        assert lines and all(LINE.match(line) for line in lines), lines[:3]
        assert "Traceback" not in result.output
