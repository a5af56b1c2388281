"""A card merge (Store.adopt_aliases) keeps its marks' clocks: every device merges the same
cards itself, so the merge is no new change of the mark. Round seven stamped the merged mark
with the merge's own time, which outranked a change made on another device after its own
merge: an unsuspend was undone (the suspension resurrected) and a flag was dropped."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from prep.engine.store import Mark
from prep.engine.sync.run import sync
from tests.test_sync import T0, stores

MERGE = {"x": "y"}  # y lists x under aliases


@pytest.mark.parametrize(
    "change", [Mark(), Mark(suspended=True, flagged=True)], ids=["unsuspend", "flag"]
)
def test_a_change_after_the_merge_outlives_another_devices_later_merge(
    tmp_path: Path, change: Mark
) -> None:
    (a, b), folder = stores(tmp_path, 2)
    a.set_mark("x", Mark(suspended=True), at=T0)
    sync(a, folder)
    sync(b, folder)
    assert b.mark("x") == Mark(suspended=True)
    # a merges, then changes the kept card's mark an hour later
    assert a.adopt_aliases(MERGE) == 1
    assert a.mark("y") == Mark(suspended=True) and a.mark("x") == Mark()
    a.set_mark("y", change, at=T0 + timedelta(hours=1))
    sync(a, folder)
    # b merges afterwards (now, by the wall clock), then takes a's change
    assert b.adopt_aliases(MERGE) == 1
    sync(b, folder)
    sync(a, folder)
    assert a.mark("y") == change and b.mark("y") == change
    assert a.mark("x") == Mark() and b.mark("x") == Mark()


def test_the_merged_mark_has_the_later_clock_and_a_stale_alias_entry_stays_out(
    tmp_path: Path,
) -> None:
    (a, b), folder = stores(tmp_path, 2)
    b.set_mark("x", Mark(flagged=True), at=T0)  # b has not merged and sends later
    sync(b, folder)  # the entry is in the folder before a reads it
    a.set_mark("x", Mark(suspended=True), at=T0 + timedelta(hours=2))
    a.set_mark("y", Mark(flagged=True), at=T0 + timedelta(hours=1))
    a.adopt_aliases(MERGE)
    clock = a.conn.execute("SELECT at, seq FROM mark_clock WHERE card_id = 'y'").fetchone()
    x_clock = a.conn.execute("SELECT at, seq FROM mark_clock WHERE card_id = 'x'").fetchone()
    assert clock == x_clock  # x's clock, the later one, moved with its mark
    assert a.mark("y") == Mark(suspended=True, flagged=True)
    # b's older flag on x (from before a's suspension) does not bring x's row back
    assert sync(a, folder).applied.marks == 0
    assert a.mark("x") == Mark() and a.mark_rows("x") == []
