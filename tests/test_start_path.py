"""What the TUI's first card costs beyond a minimal Textual app (issue 26, item 3), held as
structure, not as time (tests/benchmarks/pty_bench.py measures the time):

- the day's due cards are looked up in the deck cache in one query, not one query a card,
  and found exactly as one by one;
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from prep.engine.decks import deckcache
from prep.engine.decks.deckcache import load_collection
from prep.engine.store import Store
from prep.engine.study.session import build_queue
from tests.conftest import FIXED_NOW
from tests.test_lookups import add_progress, write_mixed_decks

pytestmark = pytest.mark.usefixtures("utc_local_time")


def test_the_due_cards_are_found_in_one_query(tmp_path: Path) -> None:
    decks = write_mixed_decks(tmp_path / "decks", size=500)
    db = tmp_path / "prep.db"
    with Store.open(db) as store:
        full = load_collection([decks], include_bundled=False)
        add_progress(store, full, seed=5, fraction=0.8)
        store.update_settings(review_limit=5000)
        deckcache.load(store, [decks], include_bundled=False)  # the cache filled once
    with Store.open(db) as store:
        one_by_one = deckcache.load(store, [decks], include_bundled=False)
        want = build_queue(store, one_by_one, FIXED_NOW, new_limit=0)
        ids = [*want.due, "gone", "m0-004", "m1-000", *(c.id for c in full.cards[:50])]
        expected = [c for c in ids if c in one_by_one]  # looked up one id at a time
        statements: list[str] = []
        store.conn.set_trace_callback(statements.append)
        coll = deckcache.load(store, [decks], include_bundled=False)
        got = build_queue(store, coll, FIXED_NOW, new_limit=0)
        store.conn.set_trace_callback(None)
        assert got == want
        assert len(want.due) > 500  # (more than one statement's worth of ids)
        lookups = [s for s in statements if "FROM deck_cards dc" in s]
        assert lookups and all("dc.id IN (" in s for s in lookups), lookups[:3]
        assert len(lookups) == math.ceil(len(want.due) / 500)
        assert coll._where_map is None  # (not by reading every cached id instead)
        fresh = deckcache.load(store, [decks], include_bundled=False)
        assert fresh.known(ids) == expected
        assert "gone" not in expected and len(expected) < len(ids)
        assert fresh.known([]) == []
