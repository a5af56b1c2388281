"""Backups kept by reason and by age (cli13), with a fake clock: a day of syncs pushed every
daily backup out (the newest 20 of every reason were kept), and `p` and `p.db` in one folder
shared their backups (each listed, pruned and could restore the other's)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

from click.testing import CliRunner

from prep.engine.store import Store, backup
from prep.tui.cli import main

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def _kinds(db: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for p in backup.listing(db):
        out.setdefault(p.name.rsplit("-", 1)[1].removesuffix(".db"), []).append(p.name)
    return out


def test_a_day_of_syncs_never_removes_the_daily_backups(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    with Store.open(db) as store:
        for day in range(10):
            backup.make(store, "daily", T0 + timedelta(days=day))
        before = _kinds(db)["daily"]
        last = T0 + timedelta(days=9, hours=1)
        for i in range(120):  # a sync every five minutes, for 10 hours (one day)
            backup.make(store, "sync", last + timedelta(minutes=5 * i))
    after = _kinds(db)
    assert after["daily"] == before and len(before) >= 7  # (its last 7 days at least)
    assert len(after["sync"]) == backup.RECENT  # one day, one week, one month: the newest 3


def test_one_a_day_for_months_keeps_days_weeks_and_months(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    days = [T0 + timedelta(days=d) for d in range(130)]  # (past 4 months)
    with Store.open(db) as store:
        for when in days:
            backup.make(store, "daily", when)
    kept = sorted(backup._when(p) for p in backup.listing(db))
    newest = days[-1]
    assert len(kept) <= backup.PER_REASON
    # each of the last 7 days, 4 ISO weeks and 3 months has a backup (the newest of it)
    for d in range(7):
        assert newest - timedelta(days=d) in kept
    weeks = sorted({w.isocalendar()[:2] for w in days})[-4:]
    assert weeks == sorted({k.isocalendar()[:2] for k in kept})[-4:]
    months = sorted({(m.year, m.month) for m in days})[-3:]
    assert months == sorted({(k.year, k.month) for k in kept})
    for year, month in months[:-1]:  # a whole month: its last day's backup
        last = max(w for w in days if (w.year, w.month) == (year, month))
        assert last in kept
    # the oldest kept: the last of the month two months back (the newest 20 reached 19 days)
    assert kept[0] == max(w for w in days if (w.year, w.month) == months[0])


def test_each_reason_keeps_what_it_would_keep_alone(tmp_path: Path) -> None:
    """Any interleaving: the backups kept of a reason are those it keeps with no other reason
    made at all."""
    rng = random.Random(13)
    reasons = ["daily", "sync", "import", "manual"]
    made: list[tuple[datetime, str]] = []
    when = T0
    for _ in range(100):
        when += timedelta(minutes=rng.choice([1, 30, 600, 3000, 20000]))
        made.append((when, rng.choice(reasons)))
    together = tmp_path / "all" / "p.db"
    with Store.open(together) as store:
        for at, reason in made:
            backup.make(store, reason, at)
    kinds = _kinds(together)
    for reason in reasons:
        alone = tmp_path / reason / "p.db"
        with Store.open(alone) as store:
            for at, r in made:
                if r == reason:
                    backup.make(store, r, at)
        assert kinds.get(reason, []) == _kinds(alone).get(reason, []), reason


def test_rescues_and_older_names_are_never_pruned(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    with Store.open(db) as store:
        rescued = backup.make(store, "replaced", T0)
        where = backup.folder(db)
        legacy = where / "p-20251201-000000-000000-daily.db"  # a name from before round 13
        legacy.write_bytes(rescued.read_bytes() if rescued else b"")
        for i in range(40):
            backup.make(store, "manual", T0 + timedelta(days=i))
    names = {p.name for p in backup.listing(db)}
    assert rescued is not None and rescued.name in names and legacy.name in names


def _cli(db: Path, *args: str):
    return CliRunner().invoke(main, ["--db", str(db), *args])


def test_p_and_p_db_in_one_folder_keep_their_backups_apart(tmp_path: Path) -> None:
    bare, dotted = tmp_path / "p", tmp_path / "p.db"
    assert _cli(bare, "config", "new_per_day", "3").exit_code == 0
    assert _cli(dotted, "config", "new_per_day", "8").exit_code == 0
    with Store.open(bare) as store:
        for i in range(30):  # p's rotation: never one of p.db's
            backup.make(store, "manual", T0 + timedelta(hours=i))
    with Store.open(dotted) as store:
        mine = backup.make(store, "manual", T0 + timedelta(hours=5))
    assert mine is not None and mine.exists()
    assert [p.name for p in backup.listing(dotted)] == [mine.name]
    assert mine not in backup.listing(bare)
    # p restores its own backup, never p.db's
    refused = _cli(bare, "backup", "--restore", mine.name)
    assert refused.exit_code == 2 and "no backup named" in refused.output
    (newest,) = backup.listing(bare)[:1]
    assert _cli(bare, "backup", "--restore", newest.name).exit_code == 0
    assert "new_per_day = 3" in _cli(bare, "config", "new_per_day").output
    assert "new_per_day = 8" in _cli(dotted, "config", "new_per_day").output


def test_a_backup_named_before_round_13_still_restores(tmp_path: Path) -> None:
    db = tmp_path / "prep.db"
    assert _cli(db, "config", "new_per_day", "6").exit_code == 0
    with Store.open(db) as store:
        made = backup.make(store, "manual", T0)
    assert made is not None
    old = made.with_name("prep-20260105-090000-000000-manual.db")  # the old naming
    made.rename(old)
    assert _cli(db, "config", "new_per_day", "2").exit_code == 0
    assert old.name in _cli(db, "backup", "--list").output
    result = _cli(db, "backup", "--restore", old.name)
    assert result.exit_code == 0, result.output
    assert "new_per_day = 6" in _cli(db, "config", "new_per_day").output
