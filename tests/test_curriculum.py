"""The curriculum keys: a deck's ``order:``, a card's ``level:`` — validated with file and
line, carried on Card and DeckInfo, and kept by the deck cache (an old cache is rebuilt)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prep.engine.decks import deckcache
from prep.engine.decks.deck import Card
from prep.engine.decks.deckcache import load_collection
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
        assert store.schema_version() == SCHEMA_VERSION == 17
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


# --- the order new cards come in -----------------------------------------------------------


def _deck(name: str, cards: list[tuple[str, str, str | None, str | None]], order=None) -> str:
    """A deck's YAML: cards as (id, kind, level, parent)."""
    lines = [f"deck: {name}"] + ([f"order: {order}"] if order is not None else []) + ["cards:"]
    for cid, kind, level, parent in cards:
        lines += [f"  - id: {cid}", f"    kind: {kind}", f"    prompt: {cid}?", "    answer: a"]
        if kind in ("choice", "red-flag"):
            lines += ["    choices: [x, y]", "    correct: a"]
        if level:
            lines.append(f"    level: {level}")
        if parent:
            lines.append(f"    parent: {parent}")
    return "\n".join(lines) + "\n"


@pytest.fixture
def curriculum(tmp_path: Path) -> Path:
    folder = tmp_path / "decks"
    folder.mkdir()
    # file order: a-systems, b-core, c-mine; orders: core 10, systems 40, mine none
    (folder / "a-systems.yaml").write_text(
        _deck(
            "systems",
            [
                ("sys-1", "recall", None, None),
                ("sys-2", "choice", None, None),
                ("sys-3", "red-flag", None, None),
                ("sys-4", "follow-up", None, "sys-1"),
                ("sys-adv", "recall", "advanced", None),
            ],
            order=40,
        )
    )
    (folder / "b-core.yaml").write_text(
        _deck(
            "core",
            [
                ("core-root", "recall", "basics", None),
                ("core-fu", "follow-up", "basics", "core-root"),
                ("core-2", "recall", None, None),
                ("core-3", "choice", None, None),
            ],
            order=10,
        )
    )
    (folder / "c-mine.yaml").write_text(
        _deck("mine", [("mine-1", "recall", None, None), ("mine-2", "choice", None, None)])
    )
    return folder


def _queues(store: Store, folder: Path, **kw):
    from prep.engine.study.session import build_queue
    from tests.conftest import FIXED_NOW

    full = load_collection([folder], include_bundled=False)
    cached = deckcache.load(store, [folder], include_bundled=False)
    got = [build_queue(store, c, FIXED_NOW, **kw).new for c in (full, cached)]
    assert got[0] == got[1]  # the deck cache's indexed read gives the same order
    return got[0]


def test_new_cards_come_by_level_then_deck_order_kinds_mixed(tmp_path, curriculum) -> None:
    with Store.open(tmp_path / "p.db") as store:
        assert _queues(store, curriculum, new_limit=100) == [
            "core-root",  # basics first, whatever the file order
            "core-fu",  # (its parent is queued before it)
            # core level: the kinds take turns, each kind in deck order (core 10, systems
            # 40, then the deck without an order)
            "core-2",
            "core-3",
            "sys-3",
            # (sys-4 waits: its parent is not queued yet)
            "sys-1",
            "sys-2",
            "sys-4",
            "mine-1",
            "mine-2",
            "sys-adv",  # advanced last
        ]
        assert _queues(store, curriculum, new_limit=3) == ["core-root", "core-fu", "core-2"]


def test_a_deck_option_keeps_the_curriculum_within_the_deck(tmp_path, curriculum) -> None:
    with Store.open(tmp_path / "p.db") as store:
        assert _queues(store, curriculum, deck="systems", new_limit=100) == [
            "sys-1",
            "sys-2",
            "sys-3",
            "sys-4",
            "sys-adv",
        ]


def test_a_follow_up_waits_for_its_parent_to_be_answered(tmp_path, curriculum) -> None:
    """Burying (or suspending) a never-answered parent holds its follow-up back: in the
    queue, and in a session whose queue already holds both (issue 19 item 7)."""
    from prep.engine.store import Mark
    from prep.engine.study.scheduler import Rating
    from prep.engine.study.session import ReviewSession
    from tests.conftest import FIXED_NOW, Clock

    with Store.open(tmp_path / "p.db") as store:
        coll = deckcache.load(store, [curriculum], include_bundled=False)
        s = ReviewSession(store, coll, clock=Clock(FIXED_NOW), new_limit=100)
        assert s.current.id == "core-root" and s.queue[1] == "core-fu"
        s.set_mark("bury", card_id="core-root")
        assert s.current.id == "core-2"  # not core-fu: its parent was never answered
        store.set_mark("sys-1", Mark(suspended=True))
        queue = _queues(store, curriculum, new_limit=100)
        assert "core-fu" not in queue and "sys-4" not in queue
        s.rate(Rating.Good, card_id="core-2")
        assert "core-fu" not in s.queue
        # once the parent is answered, the follow-up comes
        store.set_mark("core-root", Mark())
        s2 = ReviewSession(store, coll, clock=Clock(FIXED_NOW), queue=["core-root"])
        s2.rate(Rating.Good, card_id="core-root")
        assert "core-fu" in _queues(store, curriculum, new_limit=100)
