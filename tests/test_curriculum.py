"""The curriculum keys: a deck's ``order:``, a card's ``level:`` — validated with file and
line, carried on Card and DeckInfo, and kept by the deck cache (an old cache is rebuilt)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prep.engine.decks import deckcache
from prep.engine.decks.deck import Card, load_collection
from prep.engine.store import SCHEMA_VERSION, Store

LEVELLED = """\
deck: lv
title: Levelled
order: 12
cards:
  - id: first
    kind: recall
    prompt: p1
    answer: a1
    level: basics
  - id: second
    kind: recall
    prompt: p2
    answer: a2
  - id: third
    kind: recall
    prompt: p3
    answer: a3
    level: advanced
"""


def load(tmp_path: Path, text: str, name: str = "d.yaml"):
    f = tmp_path / name
    f.write_text(text, encoding="utf-8")
    return load_collection([f], include_bundled=False)


def test_order_and_level_are_read(tmp_path: Path) -> None:
    coll = load(tmp_path, LEVELLED)
    assert coll.errors == []
    assert coll.decks["lv"].order == 12
    assert [(c.id, c.level, c.level_rank) for c in coll.cards] == [
        ("first", "basics", 0),
        ("second", None, 1),  # no level: core
        ("third", "advanced", 2),
    ]


@pytest.mark.parametrize("value", ["soon", "true", "[1]", ".nan"])
def test_an_order_that_is_not_a_number_names_file_and_line(
    tmp_path: Path, value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    coll = load(tmp_path, LEVELLED.replace("order: 12", f"order: {value}"))
    assert len(coll.errors) == 1
    assert str(coll.errors[0]).startswith("d.yaml:3: deck field 'order' must be a number")


def test_an_unknown_level_names_file_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    coll = load(tmp_path, LEVELLED.replace("level: advanced", "level: expert"))
    assert [str(e) for e in coll.errors] == [
        "d.yaml:18: card 'third': unknown level 'expert' (expected one of: basics, core, advanced)"
    ]
    assert [c.id for c in coll.cards] == ["first", "second"]


def test_deck_ranks_put_declared_orders_first_then_file_order(tmp_path: Path) -> None:
    for name, order in [("a", None), ("b", 30), ("c", 10), ("d", None)]:
        head = f"deck: {name}\n" + (f"order: {order}\n" if order is not None else "")
        (tmp_path / f"{name}.yaml").write_text(
            head + f"cards:\n  - {{id: {name}-1, kind: recall, prompt: p, answer: a}}\n"
        )
    coll = load_collection([tmp_path], include_bundled=False)
    assert coll.deck_ranks() == {"c": 0, "b": 1, "a": 2, "d": 3}


def test_the_deck_cache_keeps_levels_and_order(tmp_path: Path) -> None:
    (tmp_path / "d.yaml").write_text(LEVELLED, encoding="utf-8")
    with Store.open(tmp_path / "p.db") as store:
        first = deckcache.load(store, [tmp_path / "d.yaml"], include_bundled=False)
        again = deckcache.load(store, [tmp_path / "d.yaml"], include_bundled=False)
        assert isinstance(again, deckcache.CachedCollection)
        assert [c.level for c in again.cards] == ["basics", None, "advanced"]
        assert [c.level for c in first.cards] == ["basics", None, "advanced"]
        assert again.decks["lv"].order == 12
        levels = store.conn.execute("SELECT id, level FROM deck_cards ORDER BY key").fetchall()
        assert levels == [("first", 0), ("second", 1), ("third", 2)]


def test_a_cache_filled_by_the_previous_format_is_rebuilt(tmp_path: Path) -> None:
    """A v8 database whose deck cache holds cards without a level (one JSON field fewer, no
    level column) opens: the upgrade empties the cache and the decks are cached again."""
    deck = tmp_path / "d.yaml"
    deck.write_text(LEVELLED, encoding="utf-8")
    db = tmp_path / "p.db"
    with Store.open(db) as store:
        deckcache.load(store, [deck], include_bundled=False)
        store.conn.execute("DROP INDEX deck_cards_level")
        store.conn.execute("ALTER TABLE deck_cards DROP COLUMN level")
        rows = store.conn.execute("SELECT key, data FROM deck_cards").fetchall()
        for key, data in rows:  # as a v8 prep cached them: no level at the end
            store.conn.execute(
                "UPDATE deck_cards SET data = ? WHERE key = ?",
                (json.dumps(json.loads(data)[:-1]), key),
            )
        store.set_meta("schema_version", "8")
    with Store.open(db) as store:
        assert store.schema_version() == SCHEMA_VERSION == 9
        coll = deckcache.load(store, [deck], include_bundled=False)
        assert [(c.id, c.level) for c in coll.cards] == [
            ("first", "basics"),
            ("second", None),
            ("third", "advanced"),
        ]


def test_a_card_cached_without_a_later_field_reads_with_its_default() -> None:
    card = Card(id="x", kind="recall", prompt="p", answer="a", deck="d", level="basics")
    data = json.loads(deckcache.card_fields(card))[:-1]
    back = deckcache.card_from_fields(
        json.dumps(data), card_id="x", deck="d", parent=None, file="f", line=1
    )
    assert back.level is None and back.prompt == "p"


def test_bundled_decks_declare_their_order() -> None:
    coll = load_collection()
    assert {n: i.order for n, i in coll.decks.items()} == {
        "wo-core": 10,
        "wo-followups": 15,
        "wo-practice": 20,
        "wo-red-flags": 25,
        "wo-attribution": 30,
        "wo-systems": 40,
    }
