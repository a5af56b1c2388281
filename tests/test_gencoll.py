"""The benchmark's generated collections: the Anki collection written row by row with
executemany (fast at 1M) is the collection Anki's own API builds — the same notes, cards,
due days, memory states and review log, and Anki's database check finds nothing to fix —
and the v3 prep database keeps SCHEMA_V3's exact layout though its log's indexes are built
after the log is written."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.benchmarks import gencoll

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _anki_through_api(cards: list[gencoll.GenCard], path: Path, now: datetime) -> None:
    """The reference: notes added through Anki's Python API (as the bench built them up to
    GENERATOR_VERSION 6), then each card's state and log written by SQL as before."""
    from anki.collection import AddNoteRequest, Collection

    col = Collection(str(path))
    try:
        col.set_config("fsrs", True)
        model = col.models.by_name("Basic")
        deck_ids = {d: col.decks.id(f"bench::{d}") for d in gencoll.deck_names(len(cards))}
        requests = []
        for c in cards:
            note = col.new_note(model)
            note["Front"] = c.prompt
            note["Back"] = c.answer + "<br>" + c.explain
            note.tags = list(c.tags)
            requests.append(AddNoteRequest(note=note, deck_id=deck_ids[c.deck]))
        col.add_notes(requests)
        col.decks.select(col.decks.id("bench"))
        today = col.sched.today
    finally:
        col.close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    ids = [r[0] for r in conn.execute("SELECT id FROM cards ORDER BY nid, id")]
    for cid, c in zip(ids, cards, strict=True):
        s = c.state
        due_dt, last_dt = datetime.fromisoformat(s["due"]), datetime.fromisoformat(s["last_review"])
        ivl = max(1, round((due_dt - last_dt).total_seconds() / 86400))
        due_day = today + int((due_dt.timestamp() - now.timestamp()) // 86400)
        data = {
            "s": s["stability"],
            "d": s["difficulty"],
            "dr": 0.9,
            "lrt": int(last_dt.timestamp()),
        }
        conn.execute(
            "UPDATE cards SET type = 2, queue = 2, due = ?, ivl = ?, factor = 2500, reps = ?, "
            "lapses = ?, data = ? WHERE id = ?",
            (due_day, ivl, len(c.reviews), s["lapses"], json.dumps(data), cid),
        )
        last_ivl = 0
        for at, rating, dur, prev, nxt in c.reviews:
            n_ivl = max(1, round(nxt["stability"]))
            conn.execute(
                "INSERT INTO revlog (id, cid, usn, ease, ivl, lastIvl, factor, time, type) "
                "VALUES (?, ?, -1, ?, ?, ?, 2500, ?, ?)",
                (int(at.timestamp() * 1000), cid, rating, n_ivl, last_ivl, dur, 0 if prev is None else 1),
            )  # fmt: skip
            last_ivl = n_ivl
    conn.execute("COMMIT")
    conn.close()


def _as_anki_reads_it(path: Path) -> dict:
    """What Anki reads from a collection, keyed by the note's front (ids differ by build)."""
    from anki.collection import Collection

    col = Collection(str(path))
    try:
        rows = col.db.all(
            "SELECT n.sfld, n.flds, n.tags, n.csum, n.usn, n.flags, n.data, d.name, c.ord, c.type, "
            "c.queue, c.due, c.ivl, c.factor, c.reps, c.lapses, c.left, c.odue, c.odid, c.usn, "
            "c.flags, c.data FROM cards c JOIN notes n ON n.id = c.nid JOIN decks d ON d.id = c.did"
        )
        log = col.db.all(
            "SELECT r.id, n.sfld, r.usn, r.ease, r.ivl, r.lastIvl, r.factor, r.time, r.type "
            "FROM revlog r JOIN cards c ON c.id = r.cid JOIN notes n ON n.id = c.nid"
        )
        due = col.find_cards("is:due")
        fronts = dict(col.db.all("SELECT c.id, n.sfld FROM cards c JOIN notes n ON n.id = c.nid"))
        memory = {
            fronts[cid]: (col.get_card(cid).memory_state.stability, col.get_card(cid).memory_state.difficulty)
            for cid in due[:50]
        }  # fmt: skip
        return {
            "cards": sorted(rows),
            "log": sorted(log),
            "counts": tuple(col.sched.counts()),
            "due": sorted(fronts[cid] for cid in due),
            "memory": memory,
            "fsrs": col.get_config("fsrs"),
            "deck": col.decks.current()["name"],
        }
    finally:
        col.close()


def test_anki_rows_written_directly_are_what_the_api_builds(tmp_path: Path) -> None:
    pytest.importorskip("anki")
    from anki.collection import Collection

    cards = list(gencoll.generate(1000, 4, NOW))
    ref, fast = tmp_path / "api.anki2", tmp_path / "fast.anki2"
    _anki_through_api(cards, ref, NOW)
    gencoll.write_anki(cards, fast, NOW, len(cards))
    want, got = _as_anki_reads_it(ref), _as_anki_reads_it(fast)
    assert got["counts"] == want["counts"] and sum(want["counts"]) > 0
    assert len(got["due"]) > 100 and got["due"] == want["due"]
    assert got["memory"] == want["memory"]
    assert got["fsrs"] is True and got["deck"] == want["deck"] == "bench"
    assert len(got["cards"]) == 1000 and got["cards"] == want["cards"]
    assert len(got["log"]) == 4000 and got["log"] == want["log"]
    # Anki's own check (Tools > Check Database) finds nothing to fix, and changes nothing read
    col = Collection(str(fast))
    try:
        problems, ok = col.fix_integrity()
    finally:
        col.close()
    assert ok, problems
    assert _as_anki_reads_it(fast) == got


def test_prep_v3_database_keeps_schema_v3_and_time_order(tmp_path: Path) -> None:
    cards = list(gencoll.generate(200, 5, NOW))
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    gencoll.write_prep_v3(cards, a)
    gencoll.write_prep_v3(gencoll.generate(200, 5, NOW), b)
    frozen = sqlite3.connect(":memory:")
    frozen.executescript(gencoll.SCHEMA_V3)

    def schema(conn: sqlite3.Connection) -> list:
        return sorted(conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master"))

    conns = [sqlite3.connect(p) for p in (a, b)]
    assert schema(conns[0]) == schema(frozen)  # the log's indexes, built last, all there
    dumps = [
        [
            c.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall()
            for t in ("cards", "reviews", "meta")
        ]
        for c in conns
    ]
    assert dumps[0] == dumps[1]  # one generator, one database
    log = dumps[0][1]
    assert len(log) == 1000 and [r[3] for r in log] == sorted(r[3] for r in log)
    # a review's prev is the card's review before's next (the text written once, reused)
    by_card: dict[str, list] = {}
    for row in log:
        by_card.setdefault(row[1], []).append(row)
    for rows in by_card.values():
        assert rows[0][6] is None
        assert all(later[6] == earlier[7] for earlier, later in zip(rows, rows[1:], strict=False))
    for c in conns:
        c.close()
