"""`prep import` writes a card's state with ``logged`` (schema v14: the review whose state the
row is), as a rating and a sync do: the next rating here stores the state before it as "that
review's next" (NULL), never in full. Round eight's import left ``logged`` NULL for the cards
it added or brought up to date, so the next local rating stored a whole state, once."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from prep.engine.transfer import importer
from tests.test_sync import T0, rate, stores
from tests.test_sync_import import export
from tests.test_sync_logged import _logged, _newest_prev_blob


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_cards_an_import_adds_or_continues_are_logged(tmp_path: Path, fmt: str) -> None:
    (a, b), _ = stores(tmp_path, 2)
    # interleaved in the log (an export lists reviews by id, not by card)
    for day in range(3):
        for cid in ("x", "y", "z"):
            rate(a, cid, 3, T0 + timedelta(days=day))
    importer.import_file(b, export(a, tmp_path / f"1.{fmt}"))  # x, y, z added on b
    rate(a, "x", 4, T0 + timedelta(days=9))
    result = importer.import_file(b, export(a, tmp_path / f"2.{fmt}"))  # x continued on b
    assert result.cards_updated == 1
    for cid in ("x", "y", "z"):
        logged, newest = _logged(b, cid)
        assert logged is not None and logged == newest, cid
        before = b.card(cid)
        rate(b, cid, 3, T0 + timedelta(days=30))
        assert _newest_prev_blob(b, cid) is None, cid  # "that review's next": no whole state
        assert b.reviews(card_id=cid)[-1].prev == before  # and it decodes to the row's state


def test_a_row_unlike_the_files_newest_review_is_not_logged(tmp_path: Path) -> None:
    """A card whose row in the file is not its newest review's state (the deck's text changed
    after it was rated): its row is not marked, and the next rating stores the state before
    it in full, which decodes to the row."""
    (a, b), _ = stores(tmp_path, 2)
    rate(a, "x", 3, T0)
    a.conn.execute("UPDATE cards SET changed = 1, content_hash = 'edited' WHERE id = 'x'")
    importer.import_file(b, export(a, tmp_path / "1.json"))
    assert _logged(b, "x")[0] is None
    before = b.card("x")
    assert before is not None and before.changed
    rate(b, "x", 3, T0 + timedelta(days=30))
    assert _newest_prev_blob(b, "x") is not None
    assert b.reviews(card_id="x")[-1].prev == before


def test_a_card_rated_here_after_the_import_keeps_its_own_logged(tmp_path: Path) -> None:
    (a, b), _ = stores(tmp_path, 2)
    rate(a, "x", 3, T0)
    importer.import_file(b, export(a, tmp_path / "1.json"))
    rate(b, "x", 3, T0 + timedelta(days=3))
    again = importer.import_file(b, tmp_path / "1.json")  # nothing new: nothing marked
    assert again.reviews_added == 0
    logged, newest = _logged(b, "x")
    assert logged == newest
