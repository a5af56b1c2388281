"""An import or a sync that takes in many reviews folds them into the review tally (schema
v14) at its end, as every FOLD-th rating does: the counts then read fewer than FOLD rows past
the tally's mark. Round seven folded only on ratings, so after a big `prep import` every
count scanned the imported rows until the next fold."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from prep.engine.store import Store, schema14
from prep.engine.sync.run import sync
from prep.engine.transfer import importer
from tests.test_sync import T0, rate, stores
from tests.test_sync_import import export

FOLD = 8  # the test's fold size (the store's is 1024): 3 × FOLD reviews are "many"


@pytest.fixture(autouse=True)
def small_fold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schema14, "FOLD", FOLD)


def _waiting(store: Store) -> int:
    """Rows past the tally's mark: what every count reads beside the tally."""
    return store.conn.execute(
        f"SELECT count(*) FROM revlog WHERE id > {schema14.TALLY_MARK}"
    ).fetchone()[0]


def _counts_by_hand(store: Store, ps: int) -> tuple[int, int]:
    return store.conn.execute(
        "SELECT count(*), coalesce(sum(rating > 1), 0) FROM revlog "
        "WHERE coalesce(prev_state, 0) = ?",
        (ps,),
    ).fetchone()


def _many(store: Store, n: int) -> None:
    for i in range(n):
        rate(store, f"c{i}", 1 + i % 4, T0 + timedelta(minutes=i))
        rate(store, f"c{i}", 3, T0 + timedelta(days=2, minutes=i))


def test_a_big_import_and_a_big_sync_fold_the_tally(tmp_path: Path) -> None:
    (a, b, c), folder = stores(tmp_path, 3)
    _many(a, 3 * FOLD // 2)  # 3 × FOLD reviews
    assert _waiting(a) == 3 * FOLD  # (no rating here folded: the store's own FOLD is 1024)
    importer.import_file(b, export(a, tmp_path / "a.json"))
    assert _waiting(b) < FOLD
    sync(a, folder)
    sync(c, folder)
    assert _waiting(c) < FOLD
    for store in (b, c):  # and the counts are exact
        for ps in (0, 2):
            assert store._tallied(ps) == _counts_by_hand(store, ps)  # type: ignore[attr-defined]
        assert store.retention_counts() == _counts_by_hand(store, 2)


def test_a_small_import_leaves_the_fold_to_the_ratings(tmp_path: Path) -> None:
    (a, b), _folder = stores(tmp_path, 2)
    _many(a, 2)  # 4 reviews: fewer than FOLD
    importer.import_file(b, export(a, tmp_path / "a.json"))
    assert _waiting(b) == 4
    assert b.retention_counts() == _counts_by_hand(b, 2)
