"""Hostile deck files: each refused with one short FILE:LINE line, fast, in bounded memory.

Every case here passed `prep check` as "ok", hung, ran out of memory or raised before the
hardening of deck loading (issue 10, item 2).
"""

from __future__ import annotations

import contextlib
import os
import time
import tracemalloc
from pathlib import Path

import pytest

from prep.engine.decks import deck as deck_mod
from prep.engine.decks import deckcache
from prep.engine.decks.deckcache import load_collection
from prep.engine.store import Store

CARD = """\
  - id: c1
    kind: recall
    prompt: What does W_O do?
    answer: It mixes the heads.
"""


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # errors name files relative to the working directory


def load(*paths: Path):
    return load_collection(list(paths), include_bundled=False)


def _view(coll) -> tuple:
    return (
        [str(e) for e in coll.errors],
        [str(w) for w in coll.warnings],
        [c.id for c in coll.cards],
        {name: (i.file, i.line, i.card_ids) for name, i in coll.decks.items()},
    )


def _load_through_cache(*paths: Path):
    """The same load through the deck cache (issue 15): cold, then warm with every file aged
    out of the racy window (served from the cache without reading it, where it may be).
    Both must be exactly what the hardened loader gives: the cache never keeps or serves a
    deck, card or file the loader refuses."""
    full = _view(load_collection(list(paths), include_bundled=False))
    store = Store.memory()
    cold = deckcache.load(store, list(paths), include_bundled=False)
    assert _view(cold) == full
    past = time.time() - 10
    for p in paths:
        for f in [p, *(p.iterdir() if p.is_dir() else ())]:
            with contextlib.suppress(OSError):  # /dev/zero through a link, a loop
                os.utime(f, (past, past))
    warm = deckcache.load(store, list(paths), include_bundled=False)
    assert _view(warm) == full
    return warm


@pytest.fixture(autouse=True, params=["parse", "cache"])
def _loader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every case runs through the loader and through the deck cache."""
    if request.param == "cache":
        monkeypatch.setitem(globals(), "load", _load_through_cache)


def errors_of(tmp_path: Path, text: str, name: str = "d.yaml") -> list[str]:
    f = tmp_path / name
    f.write_text(text, encoding="utf-8")
    return [str(e) for e in load(f).errors]


def alias_bomb(levels: int) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]")
    return "\n".join(lines) + f"\ntitle: *a{levels}\ncards: []\n"


def test_alias_bomb_is_refused_at_its_line_fast_and_small(tmp_path: Path) -> None:
    # 4 levels keep the pre-fix run small (9**4 strings); the fix refuses any alias at all
    tracemalloc.start()
    start = time.perf_counter()
    try:
        errs = errors_of(tmp_path, alias_bomb(8))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert errs == ["d.yaml:2: YAML aliases (*name) are not allowed in decks; write the value out"]
    # before the fix: 60 s and >600 MB for 8 levels; a 500-byte file needs a few kB
    assert peak < 5_000_000 and time.perf_counter() - start < 5


@pytest.mark.parametrize(
    "text",
    [
        "cards: &a [*a]\n",  # recursive
        "x: &a {k: v}\ncards:\n  - *a\n",  # an alias as a card
        "x: &a [1, 2]\n? *a\n: 3\ncards: []\n",  # a list alias as a mapping key
        "base: &b {kind: recall}\ncards:\n  - <<: *b\n    id: c\n    prompt: p\n    answer: a\n",
    ],
)
def test_every_alias_is_refused(tmp_path: Path, text: str) -> None:
    errs = errors_of(tmp_path, text)
    assert len(errs) == 1 and errs[0].startswith("d.yaml:"), errs
    assert "alias" in errs[0] or "mapping key" in errs[0]


def test_complex_mapping_key_is_refused(tmp_path: Path) -> None:
    assert errors_of(tmp_path, "cards: []\n? [a, b]\n: 3\n") == [
        "d.yaml:2: a mapping key must be plain text, not a list or mapping"
    ]


def test_deep_nesting_and_bad_scalars_are_one_line(tmp_path: Path) -> None:
    assert errors_of(tmp_path, "cards: " + "[" * 200 + "]" * 200 + "\n") == [
        "d.yaml:1: nested more than 32 levels deep; a deck is a list of cards"
    ]
    assert errors_of(tmp_path, "cards: []\ntitle: 2024-13-45\n") == [
        "d.yaml:2: cannot read this value: month must be in 1..12"
    ]
    (err,) = errors_of(tmp_path, "cards: []\ntitle: " + "7" * 5000 + "\n")
    assert err.startswith("d.yaml:2: cannot read this value:") and len(err) < 250


@pytest.mark.timeout(20)
def test_fifo_and_devices_are_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)  # no writer: reading it would block forever
    zero = tmp_path / "zero.yaml"
    zero.symlink_to("/dev/zero")  # reading it would never end
    folder = tmp_path / "dir.yaml"
    folder.mkdir()
    coll = load(fifo, zero)
    assert [str(e) for e in coll.errors] == [
        "pipe.yaml:1: cannot read: not a regular file (a device, FIFO or socket)",
        "zero.yaml:1: cannot read: not a regular file (a device, FIFO or socket)",
    ]
    # a folder whose name ends in .yaml, inside a --questions folder
    assert [e.message for e in load(tmp_path).errors] == [
        "cannot read: is a folder, not a deck file",
        "cannot read: not a regular file (a device, FIFO or socket)",
        "cannot read: not a regular file (a device, FIFO or socket)",
    ]


def test_size_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(deck_mod, "MAX_DECK_BYTES", 1000)
    big = tmp_path / "big.yaml"
    big.write_text("cards:\n" + CARD + "# " + "x" * 1000 + "\n", encoding="utf-8")
    (err,) = load(big).errors
    assert err.line == 1 and err.message.startswith("cannot read: ")
    assert "a deck is at most" in err.message


def test_symlink_loop_is_an_error_not_a_crash(tmp_path: Path) -> None:
    loop = tmp_path / "loop.yaml"
    loop.symlink_to(loop)
    assert [e.message for e in load(loop).errors] == ["cannot read: a symbolic link loop"]
    assert [e.message for e in load(tmp_path).errors] == ["cannot read: a symbolic link loop"]


def test_not_utf8(tmp_path: Path) -> None:
    f = tmp_path / "d.yaml"
    f.write_bytes(b"cards: []\ntitle: caf\xe9\n")
    assert [str(e) for e in load(f).errors] == [
        "d.yaml:2: cannot read: not UTF-8 text (byte 11 of the line)"
    ]


@pytest.mark.parametrize("value", ["[a, b]", "{x: 1}", "3", "''", "yes"])
def test_title_and_description_must_be_text(tmp_path: Path, value: str) -> None:
    errs = errors_of(tmp_path, f"title: {value}\ndescription: {value}\ncards:\n{CARD}")
    assert errs == [
        "d.yaml:1: deck field 'title' must be non-empty text",
        "d.yaml:2: deck field 'description' must be non-empty text",
    ]


def test_quoted_values_are_shortened(tmp_path: Path) -> None:
    long, key = "x" * 5000, "k" * 1000  # libyaml allows keys of up to 1024 characters
    text = f"deck: {long}\n{key}: 1\ncards:\n  - id: {long}\n    kind: {long}\n    {key}: 2\n"
    errs = errors_of(tmp_path, text)
    assert len(errs) >= 5
    assert all(len(e) < 300 for e in errs), [len(e) for e in errs]


def test_duplicate_top_level_keys(tmp_path: Path) -> None:
    errs = errors_of(tmp_path, f"title: one\ncards:\n{CARD}title: two\n")
    assert errs == ["d.yaml:7: deck field 'title' appears twice"]


def test_duplicate_deck_names_across_files_are_an_error(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(f"deck: same\ncards:\n{CARD}", encoding="utf-8")
    other = CARD.replace("c1", "c2")
    (tmp_path / "b.yaml").write_text(f"title: B\ndeck: same\ncards:\n{other}", encoding="utf-8")
    coll = load(tmp_path)
    assert [(Path(e.file).name, e.line, e.message) for e in coll.errors] == [
        (
            "b.yaml",
            2,
            f"deck name 'same' is already used by {coll.decks['same'].file}:1; "
            "give this deck its own `deck:` name",
        )
    ]
    assert list(coll.decks) == ["same"] and [c.id for c in coll.cards] == ["c1"]


def test_a_questions_folder_without_decks_warns(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a deck", encoding="utf-8")
    coll = load(tmp_path)
    assert not coll.errors
    assert [e.message for e in coll.warnings] == ["no deck here (no *.yaml or *.yml files)"]


@pytest.mark.parametrize(
    ("field", "value", "what"),
    [
        ("prompt", r'"\e]0;pwned\a"', "an escape character (ESC) '\\x1b' at position 1"),
        ("answer", r'"red \e[31m"', "an escape character (ESC) '\\x1b' at position 5"),
        ("explain", r'"\x9b31m"', "a control character '\\x9b' at position 1"),
        ("tags", r'[ok, "\x07"]', "a control character '\\x07' at position 1"),
        ("bullets", r'["a\rb"]', "a control character '\\r' at position 2"),
    ],
)
def test_control_characters_in_card_text_are_refused(
    tmp_path: Path, field: str, value: str, what: str
) -> None:
    fields = {"id": "c1", "kind": "recall", "prompt": "p", "answer": "a", field: value}
    card = "".join(f"{'  - ' if k == 'id' else '    '}{k}: {v}\n" for k, v in fields.items())
    line = 2 + list(fields).index(field)
    errs = errors_of(tmp_path, f"cards:\n{card}")
    assert errs == [f"d.yaml:{line}: card 'c1': field {field!r} has {what}; remove it"]


def test_newlines_and_tabs_stay_allowed(tmp_path: Path) -> None:
    card = CARD.replace("answer: It mixes the heads.", 'answer: "line one\\n\\tline two"')
    assert errors_of(tmp_path, f"title: Fine\ncards:\n{card}") == []


def test_deck_title_with_an_escape_is_refused(tmp_path: Path) -> None:
    errs = errors_of(tmp_path, f'title: "\\e]2;x\\a"\ncards:\n{CARD}')
    assert errs == [
        "d.yaml:1: deck field 'title': an escape character (ESC) '\\x1b' at position 1; remove it"
    ]


def test_a_hostile_file_name_is_escaped(tmp_path: Path) -> None:
    f = tmp_path / "\x1b]0;x\x07.yaml"
    f.write_text("cards: 3\n", encoding="utf-8")
    errs = [str(e) for e in load(f).errors]
    assert errs == [
        "\\x1b]0;x\\x07.yaml:1: deck name '\\x1b]0;x\\x07' is not a slug",
        "\\x1b]0;x\\x07.yaml:1: 'cards' must be a list of cards",
    ]


def test_a_newline_in_a_file_name_stays_one_line(tmp_path: Path) -> None:
    f = tmp_path / "two\nlines.yaml"
    f.write_text("cards: 3\n", encoding="utf-8")
    errs = [str(e) for e in load(f).errors]
    assert errs and all("\n" not in e and e.startswith("two\\nlines.yaml:1: ") for e in errs)
