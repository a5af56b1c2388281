"""Migrating a v3 database (review states as JSON) to the compact log loses nothing: the
export of the migrated copy is the v3 database's, row for row, and undo restores each
card's exact previous state all the way back."""

from __future__ import annotations

import json
import shutil
import sqlite3
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from prep.engine.store import SCHEMA_VERSION, Store, state_from_json
from prep.engine.store.schema import REVIEW_COLUMNS_V1
from tests.benchmarks import gencoll

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def v3_database(path: Path) -> None:
    """A v3 database from the benchmark's generator, plus the rows real logs hold besides
    the usual: a card whose text changed between two reviews (its prev is not its last
    next), a card reviewed as new twice (reset), and a hand-made state that is not one."""
    cards = list(gencoll.generate(12, 4, NOW))
    gencoll.write_prep_v3(cards, path)
    conn = sqlite3.connect(path, isolation_level=None)
    last = json.loads(
        conn.execute(
            "SELECT next FROM reviews WHERE card_id = 'c-0000003' ORDER BY id DESC"
        ).fetchone()[0]
    )
    edited = {**last, "content_hash": "0123456789abcdef", "changed": True, "deck": "moved"}
    after = {**edited, "reps": last["reps"] + 1, "changed": False, "last_review": gencoll.fmt(NOW)}
    rows = [
        ("c-0000003", 3, gencoll.fmt(NOW), 4000, last["state"], json.dumps(edited), json.dumps(after)),
        ("c-0000005", 1, gencoll.fmt(NOW + timedelta(seconds=1)), 2000, None, None, json.dumps({**last, "id": "c-0000005"})),
        ("c-0000007", 3, gencoll.fmt(NOW + timedelta(seconds=2)), None, None, None, "{}"),
    ]  # fmt: skip
    conn.executemany(
        "INSERT INTO reviews (card_id, rating, reviewed_at, duration_ms, prev_state, prev, next) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    conn.execute(
        "UPDATE cards SET content_hash = ?, deck = 'moved' WHERE id = 'c-0000003'",
        [after["content_hash"]],
    )
    conn.close()


def v3_export(path: Path) -> dict:
    """What the v3 prep exported: every column of every review and card, states as objects."""
    conn = sqlite3.connect(path)
    cols = ("card_id", "reviewed_at", "rating", "duration_ms", "prev_state", "prev", "next")
    reviews = []
    for row in conn.execute(f"SELECT {', '.join(cols)} FROM reviews ORDER BY id"):
        r = dict(zip(cols, row, strict=True))
        r["prev"] = None if r["prev"] is None else json.loads(r["prev"])
        r["next"] = json.loads(r["next"])
        reviews.append(r)
    conn.row_factory = sqlite3.Row
    cards = [dict(r) for r in conn.execute("SELECT * FROM cards ORDER BY id")]
    conn.close()
    return {"reviews": reviews, "cards": cards}


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("v3")
    v3 = folder / "v3.db"
    v3_database(v3)
    copy = folder / "migrated.db"
    shutil.copyfile(v3, copy)
    Store.open(copy).close()
    return v3, copy


def test_the_export_of_the_migrated_copy_is_the_v3_export(migrated) -> None:
    v3, copy = migrated
    want = v3_export(v3)
    with Store.open(copy) as store:
        assert store.schema_version() == SCHEMA_VERSION == 17
        got = store.dump()
    # (each review now also carries its id and parameters: this device's, by row id)
    assert [{k: r[k] for k in REVIEW_COLUMNS_V1} for r in got["reviews"]] == want["reviews"]
    assert [r["seq"] for r in got["reviews"]] == list(range(1, len(got["reviews"]) + 1))
    assert got["cards"] == want["cards"]


def test_undo_restores_every_previous_state_exactly(migrated, tmp_path: Path) -> None:
    v3, copy = migrated
    work = tmp_path / "undo.db"
    shutil.copyfile(copy, work)
    conn = sqlite3.connect(v3)
    log = conn.execute("SELECT card_id, prev FROM reviews ORDER BY id").fetchall()
    conn.close()
    with Store.open(work) as store:
        for card_id, prev in reversed(log):
            current = store.card(card_id)
            undone = store.undo_last()
            assert undone is not None and undone.card_id == card_id
            restored = store.card(card_id)
            if prev is None:
                assert restored is None  # new before that review: its row goes
                continue
            want = state_from_json(prev)
            if current is not None:  # membership flags describe the decks now
                want = replace(want, removed=current.removed, deck=current.deck)
            assert restored == want
        assert store.last_review() is None


def test_the_compact_log_is_a_fraction_of_the_json_one(migrated) -> None:
    v3, copy = migrated
    # bar argued before measuring: a JSON state is ~330 bytes and each review held two; a
    # compact one is 58 bytes (+ deck and hash when they change), the prev usually none
    sql = "SELECT coalesce(sum(length(prev)), 0) + sum(length(next)) FROM reviews"
    sizes = []
    for path in (v3, copy):
        conn = sqlite3.connect(path)
        sizes.append(conn.execute(sql).fetchone()[0])
        conn.close()
    assert sizes[1] < 0.25 * sizes[0], sizes
