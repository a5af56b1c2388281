"""Merged cards keep the dropped id as an alias: the loader checks it, the store moves the
dropped id's progress onto the kept card, an import naming the old id lands there too."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from prep.engine.decks import deckcache
from prep.engine.decks.deckcache import load_collection
from prep.engine.store import Mark, Store
from prep.engine.study.scheduler import CardState, Rating, Scheduler
from prep.engine.transfer.export import to_json
from prep.engine.transfer.importer import import_data, read_json
from tests.conftest import FIXED_NOW

OLD = """\
deck: d
cards:
  - id: kept
    kind: recall
    prompt: What does W_O do?
    answer: It mixes heads.
  - id: dropped
    kind: recall
    prompt: Where do heads mix?
    answer: In W_O.
"""

NEW = """\
deck: d
cards:
  - id: kept
    kind: recall
    prompt: What does W_O do, and where do heads mix?
    answer: It mixes heads; only there.
    aliases: [dropped]
"""


def _deck(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "decks"
    folder.mkdir(exist_ok=True)
    (folder / "d.yaml").write_text(text, encoding="utf-8")
    return folder


def _rate(store: Store, coll, card_id: str, day: float, rating: int = Rating.Good) -> None:
    card = coll.get(card_id)
    fresh = CardState(id=card_id, deck=card.deck, content_hash=card.content_hash)
    now = FIXED_NOW + timedelta(days=day)
    sched = Scheduler(store.settings(), enable_fuzzing=False)
    store.rate_card(fresh, lambda prev: sched.review(prev, rating, now).state, rating, now)


# --- the loader -----------------------------------------------------------------------------


def test_aliases_are_read(tmp_path):
    coll = load_collection([_deck(tmp_path, NEW)], include_bundled=False)
    assert coll.errors == []
    assert coll.get("kept").aliases == ("dropped",)
    assert coll.aliases() == {"dropped": "kept"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            OLD.replace("    answer: In W_O.", "    answer: In W_O.\n    aliases: [kept]"),
            "alias 'kept' is the id of a card in the decks",
        ),
        (NEW.replace("[dropped]", "[kept]"), "alias 'kept' is this card's own id"),
        (NEW.replace("[dropped]", "[Not A Slug]"), "alias 'Not A Slug' is not a slug"),
        (
            NEW + "  - id: other\n    kind: recall\n    prompt: p\n    answer: a\n"
            "    aliases: [dropped]\n",
            "alias 'dropped' is already claimed by card 'kept'",
        ),
        (  # (the cache reads the aliases of a card with a level too: fill7's filter)
            NEW + "  - id: other\n    kind: recall\n    prompt: p\n    answer: a\n"
            "    aliases: [dropped]\n    level: advanced\n",
            "alias 'dropped' is already claimed by card 'kept'",
        ),
    ],
    ids=["names-a-live-card", "own-id", "not-a-slug", "claimed-twice", "claimed-with-a-level"],
)
def test_a_bad_alias_is_an_error_with_file_and_line(tmp_path, text, message):
    folder = _deck(tmp_path, text)
    coll = load_collection([folder], include_bundled=False)
    assert any(message in e.message for e in coll.errors), coll.errors
    assert all(e.line > 0 and e.file.endswith("d.yaml") for e in coll.errors)
    # the deck cache (which assembles from the cards' outline) reports the same errors
    with Store.memory() as store:
        cached = deckcache.load(store, [folder], include_bundled=False)
        assert [str(e) for e in cached.errors] == [str(e) for e in coll.errors]
        # and no alias that names a live card or is claimed twice is used
        assert "kept" not in cached.aliases()


# --- the store ------------------------------------------------------------------------------


def _history(store: Store, card_id: str) -> list[tuple]:
    return [(r.id, r.rating, r.reviewed_at, r.prev, r.next) for r in store.reviews(card_id=card_id)]


@pytest.mark.parametrize("path", ["sync", "deck-cache"])
def test_the_dropped_ids_history_moves_to_the_kept_card(tmp_path, path):
    store = Store.memory()
    old = load_collection([_deck(tmp_path, OLD)], include_bundled=False)
    old.reconcile(store)
    _rate(store, old, "dropped", 0)
    _rate(store, old, "dropped", 1)
    store.set_mark("dropped", Mark(flagged=True))
    before = _history(store, "dropped")
    state = store.card("dropped")
    assert len(before) == 2

    folder = _deck(tmp_path, NEW)
    if path == "sync":
        new = load_collection([folder], include_bundled=False)
        new.reconcile(store)
    else:
        new = deckcache.load(store, [folder], include_bundled=False)
    assert store.card("dropped") is None
    assert store.reviews(card_id="dropped") == []
    assert _history(store, "kept") == before  # the same reviews, states and times
    moved = store.card("kept")
    assert (moved.reps, moved.stability, moved.due) == (state.reps, state.stability, state.due)
    assert moved.changed and not moved.removed  # rated on other text: flagged as changed
    assert store.mark("kept").flagged and store.mark("dropped") == Mark()
    # the next rating continues the moved chain; undo restores it under the kept id
    _rate(store, new, "kept", 5)
    assert store.undo_last() is not None
    assert store.card("kept").reps == 2
    assert store.card("dropped") is None
    store.close()


def test_when_both_were_reviewed_all_reviews_stay_and_the_latest_state_wins(tmp_path):
    store = Store.memory()
    old = load_collection([_deck(tmp_path, OLD)], include_bundled=False)
    old.reconcile(store)
    _rate(store, old, "kept", 0)
    _rate(store, old, "dropped", 1)
    _rate(store, old, "kept", 2, Rating.Again)
    later = store.card("kept")
    ids = {r.id for r in store.reviews()}
    load_collection([_deck(tmp_path, NEW)], include_bundled=False).reconcile(store)
    assert {r.id for r in store.reviews(card_id="kept")} == ids
    assert store.card("kept").last_review == later.last_review
    assert store.conn.execute("SELECT count(*) FROM cards").fetchone()[0] == 1
    # the interleaved chain reads back: an export lists every review with its states
    exported = json.loads(to_json(store, FIXED_NOW))
    assert len(exported["reviews"]) == 3
    assert {r["card_id"] for r in exported["reviews"]} == {"kept"}


# --- import ---------------------------------------------------------------------------------


def _export(tmp_path: Path, store: Store, name: str):
    path = tmp_path / name
    path.write_text(to_json(store, FIXED_NOW + timedelta(days=9)), encoding="utf-8")
    return read_json(path)


def test_an_import_naming_the_old_id_lands_on_the_kept_card(tmp_path):
    old_store = Store.memory()
    old = load_collection([_deck(tmp_path, OLD)], include_bundled=False)
    old.reconcile(old_store)
    _rate(old_store, old, "dropped", 0)
    _rate(old_store, old, "dropped", 1)
    old_store.set_mark("dropped", Mark(suspended=True))
    data = _export(tmp_path, old_store, "old.json")

    new = load_collection([_deck(tmp_path, NEW)], include_bundled=False)
    store = Store.memory()
    new.reconcile(store)
    result = import_data(store, data, aliases=new.aliases())
    assert result.reviews_added == 2
    assert store.card("dropped") is None and store.card("kept").reps == 2
    assert store.mark("kept").suspended
    again = import_data(store, data, aliases=new.aliases())  # idempotent
    assert again.reviews_added == 0 and again.reviews_skipped == 2

    # the installation that merged its own progress takes the same file as already there
    load_collection([_deck(tmp_path, NEW)], include_bundled=False).reconcile(old_store)
    same = import_data(old_store, data, aliases=new.aliases())
    assert (same.reviews_added, same.reviews_skipped) == (0, 2)
    assert same.cards_added == 0


def test_without_the_alias_map_the_old_id_is_imported_as_it_was(tmp_path):
    old_store = Store.memory()
    old = load_collection([_deck(tmp_path, OLD)], include_bundled=False)
    old.reconcile(old_store)
    _rate(old_store, old, "dropped", 0)
    data = _export(tmp_path, old_store, "old.json")
    store = Store.memory()
    import_data(store, data)
    assert store.card("dropped") is not None


# --- the bundled decks ------------------------------------------------------------------------


def test_progress_on_a_merged_bundled_card_moves_when_prep_opens(tmp_path):
    """A database that reviewed a card the deck v3 merged away: the next `prep` command that
    opens the decks (here `prep stats`) moves its history onto the kept card, and an export of
    the old history imported elsewhere lands there too."""
    from click.testing import CliRunner

    from prep.tui.cli import main

    old_db, new_db = tmp_path / "old.db", tmp_path / "new.db"
    with Store.open(old_db) as store:
        fresh = CardState(id="wo-rf-zero-block-faster", deck="wo-red-flags", content_hash="x")
        sched = Scheduler(store.settings(), enable_fuzzing=False)
        store.rate_card(
            fresh, lambda p: sched.review(p, Rating.Good, FIXED_NOW).state, 3, FIXED_NOW
        )
        export = tmp_path / "old.json"
        export.write_text(to_json(store, FIXED_NOW), encoding="utf-8")

    runner = CliRunner()
    result = runner.invoke(main, ["--db", str(old_db), "stats"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    with Store.open(old_db) as store:
        assert store.card("wo-rf-zero-block-faster") is None
        assert store.card("wo-pruning-zero-block").reps == 1

    result = runner.invoke(
        main, ["--db", str(new_db), "import", str(export)], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    with Store.open(new_db) as store:
        assert store.card("wo-rf-zero-block-faster") is None
        assert [r.rating for r in store.reviews(card_id="wo-pruning-zero-block")] == [3]
