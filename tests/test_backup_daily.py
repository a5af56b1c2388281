"""The daily backup is one a study day of its own reason (sync14's note): a sync's, an import's
or a manual backup made that day suppressed it, so a learner who synced each morning before
studying had no daily backup at all, and the daily tier of the retention (7 days, 4 weeks,
3 months) never filled."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from prep.engine.store import Store, backup

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def _reasons(db: Path) -> list[str]:
    return [p.name.rsplit("-", 1)[1].removesuffix(".db") for p in backup.listing(db)]


@pytest.mark.parametrize("other", ["sync", "import", "manual", "upgrade"])
def test_another_reason_made_today_does_not_stand_for_the_daily(
    tmp_path: Path, utc_local_time: None, other: str
) -> None:
    db = tmp_path / "p.db"
    with Store.open(db) as store:
        backup.make(store, other, T0)
        assert backup.daily(store, T0 + timedelta(minutes=5)) is not None
        # one a study day: a second the same day is not made, whatever else was made since
        backup.make(store, other, T0 + timedelta(hours=1))
        assert backup.daily(store, T0 + timedelta(hours=2)) is None
        assert backup.daily(store, T0 + timedelta(days=1)) is not None
    assert _reasons(db).count("daily") == 2


def test_a_sync_every_morning_keeps_the_daily_tier(tmp_path: Path, utc_local_time: None) -> None:
    """Two weeks of a sync at 08:00 and study at 09:00: 7 daily backups kept (the retention's
    last 7 days), the syncs rotated apart."""
    db = tmp_path / "p.db"
    with Store.open(db) as store:
        for day in range(14):
            morning = T0 + timedelta(days=day)
            backup.make(store, "sync", morning - timedelta(hours=1))
            assert backup.daily(store, morning) is not None
    reasons = _reasons(db)
    assert reasons.count("daily") >= 7
    assert reasons.count("sync") <= backup.PER_REASON
