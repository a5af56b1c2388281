"""Two preps opening one fresh database: each sees no cache format and resets the cache; the second
reset dropped what the first had just filled, which it then filled again (note 10: "deck cache
double reset on fresh db"). The format is checked again inside the reset's transaction: the cache
is reset once, and the second prep uses the first one's fill."""

from __future__ import annotations

from pathlib import Path

import pytest

from prep.engine.decks import deckcache
from prep.engine.store import Store

DECK = """\
deck: {name}
title: {name}
cards:
  - id: {name}-a
    kind: recall
    prompt: first?
    answer: one.
"""


@pytest.fixture
def decks(tmp_path: Path) -> Path:
    folder = tmp_path / "decks"
    folder.mkdir()
    for name in ("one", "two"):
        (folder / f"{name}.yaml").write_text(DECK.format(name=name), encoding="utf-8")
    return folder


def _trace(store: Store, into: list[str]) -> None:
    store.conn.set_trace_callback(into.append)


def test_two_preps_opening_a_fresh_database_reset_the_cache_once(
    tmp_path: Path, decks: Path
) -> None:
    db = tmp_path / "prep.db"
    first, second = Store.open(db), Store.open(db)
    by_first: list[str] = []
    by_second: list[str] = []
    _trace(first, by_first)
    _trace(second, by_second)
    real = second.deck_cache_format

    def then_the_other_opens() -> str | None:
        seen = real()  # no format: a fresh database
        if second.deck_cache_format is then_the_other_opens:
            del second.deck_cache_format  # (once)
            deckcache.load(first, [decks], include_bundled=False)  # resets and fills it
        return seen

    second.deck_cache_format = then_the_other_opens  # type: ignore[method-assign]
    coll = deckcache.load(second, [decks], include_bundled=False)
    assert {c.id for c in coll.cards} == {"one-a", "two-a"}
    resets = [s for s in by_first + by_second if s == "DELETE FROM deck_files"]
    assert len(resets) == 1  # was 2: the cache dropped (a prune names its files) by each
    assert [s for s in by_first if s.startswith("INSERT INTO deck_files")]  # (the first fills)
    fills = [s for s in by_second if s.startswith("INSERT INTO deck_files")]
    assert fills == []  # the first's fill is used (was: parsed and stored again)
    first.close()
    second.close()
