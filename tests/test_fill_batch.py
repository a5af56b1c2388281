"""The deck cache's fill writes in few transactions (issue 26, item 4): the number of commits
does not grow with the number of files, the write lock is let go before waiting for a parse,
and a fill killed half-way leaves a database the next open completes, with nothing the user
saved lost."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from prep.engine.decks import assembly, deckcache
from prep.engine.decks.deckcache import load_collection
from prep.engine.decks.fillbatch import Batch
from prep.engine.store import Store
from prep.engine.store.deckfill import FILL_CACHE_KIB, FILL_CHECKPOINT_PAGES
from prep.engine.study.scheduler import CardState, Scheduler

from .killedfill import kill_a_fill, opened_noting_parsed
from .test_fill_progress import write_decks


def commits_of_a_fill(tmp_path: Path, n_files: int) -> int:
    decks = write_decks(tmp_path / f"decks-{n_files}", n_files=n_files, per_file=30)
    store = Store.open(tmp_path / f"{n_files}.db")
    statements: list[str] = []
    store.conn.set_trace_callback(statements.append)
    coll = deckcache.load(store, [decks], include_bundled=False)
    store.conn.set_trace_callback(None)
    assert [c.id for c in coll.cards] == [
        c.id for c in load_collection([decks], include_bundled=False).cards
    ]
    return sum(s.strip().upper() == "COMMIT" for s in statements)


def test_the_commits_of_a_fill_do_not_grow_with_its_files(tmp_path: Path) -> None:
    # one transaction per file made 2 files cost 2 synced commits and 8 files 8
    assert commits_of_a_fill(tmp_path, 8) == commits_of_a_fill(tmp_path, 2)


def test_a_batch_lets_the_lock_go_before_a_wait_and_after_its_time(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "p.db")
    cache = store.conn.execute("PRAGMA cache_size").fetchone()[0]
    checkpoint = store.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
    assert store.conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL, as opened
    with Batch(store, seconds=3600) as batch:
        # a page cache that holds the id index while every file's ids land all over it
        assert store.conn.execute("PRAGMA cache_size").fetchone()[0] == -FILL_CACHE_KIB
        # the cache's batches (derived data) committed without a sync each, fewer checkpoints
        assert store.conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        assert store.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == (
            FILL_CHECKPOINT_PAGES
        )
        batch.begin()
        store.set_meta("a", "1")
        batch.pause(next_ready=True)  # the next file is parsed: keep writing in this one
        assert store.conn.in_transaction
        batch.pause(next_ready=False)  # it must be waited for: commit first
        assert not store.conn.in_transaction and batch.commits == 1
        batch.begin()
        store.set_meta("b", "2")
    assert batch.commits == 2 and not store.conn.in_transaction
    assert store.conn.execute("PRAGMA cache_size").fetchone()[0] == cache  # the connection's own
    # every commit after the fill (a rating's) synced again, as the store opened it
    assert store.conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert store.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == checkpoint
    with Batch(store, seconds=0) as batch:
        batch.begin()
        store.set_meta("c", "3")
        batch.pause(next_ready=True)  # held long enough (0 s here)
        assert not store.conn.in_transaction
    other = sqlite3.connect(tmp_path / "p.db")
    assert dict(other.execute("SELECT key, value FROM meta WHERE key IN ('a', 'b', 'c')")) == {
        "a": "1",
        "b": "2",
        "c": "3",
    }


def test_the_lock_goes_before_a_wait_for_a_worker_or_a_long_parse_here() -> None:
    from concurrent.futures import Future

    from prep.engine.decks.parsepool import QUICK_PARSE_CHARS, ParsePool

    pool = ParsePool([], 0)  # no worker: every file is parsed in this process
    assert pool.ready("small.yaml", 3_000)
    assert not pool.ready("big.yaml", QUICK_PARSE_CHARS)  # a long parse: commit before it
    running: Future = Future()
    pool._futures["w.yaml"] = running
    assert not pool.ready("w.yaml", 10)  # a worker still parses it
    running.set_result(None)
    assert pool.ready("w.yaml", 10**9)


def test_a_failure_rolls_back_only_the_open_batch(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "p.db")
    with pytest.raises(RuntimeError, match="half-way"), Batch(store, seconds=3600) as batch:
        batch.begin()
        store.set_meta("kept", "1")
        batch.commit()
        batch.begin()
        store.set_meta("lost", "1")
        raise RuntimeError("half-way")
    assert not store.conn.in_transaction
    assert store.get_meta("kept") == "1" and store.get_meta("lost") is None


@pytest.mark.parametrize(("seconds", "reparsed"), [(0.0, 3), (3600.0, 6)])
def test_a_fill_killed_half_way_is_completed_by_the_next_open(
    tmp_path: Path, seconds: float, reparsed: int
) -> None:
    """Killed with three files committed (one batch a file) or with all of them in the
    open batch: the next open parses what is missing, serves the same collection as a
    parse of every file, and the reviews saved before the fill are all there."""
    decks = write_decks(tmp_path / "decks", n_files=6, per_file=30)
    db = tmp_path / "p.db"
    at = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    with Store.open(db) as store:
        sched = Scheduler(store.settings())
        for cid in ("gen-0-1", "gen-4-2", "gen-5-3"):
            store.rate_card(
                CardState(id=cid),
                lambda prev: sched.review(prev, 3, at, store.next_review_key()).state,
                3,
                at,
            )
        saved = store.count_reviews()
    kill_a_fill(db, decks, seconds)
    with opened_noting_parsed(db, decks) as (store, coll, parsed):
        full = load_collection([decks], include_bundled=False)
        assert [(c.id, c.content_hash) for c in coll.cards] == [
            (c.id, c.content_hash) for c in full.cards
        ]
        assert len(parsed) == reparsed
        assert store.count_reviews() == saved == 3
        assert {cid for cid in ("gen-0-1", "gen-4-2", "gen-5-3") if store.card(cid)} == {
            "gen-0-1",
            "gen-4-2",
            "gen-5-3",
        }
    with opened_noting_parsed(db, decks) as (_, _, parsed):  # the open after parses nothing
        assert parsed == []


def test_the_outline_kept_from_the_fill_is_the_one_the_cache_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checks across files read the outline of the files parsed now as they were
    written, not read back: it must be what a later open reads from the cache."""
    decks = write_decks(tmp_path / "decks", n_files=3, per_file=20)
    (decks / "more.yaml").write_text(
        "deck: more\ncards:\n"
        "  - {id: m-1, kind: recall, prompt: p, answer: a, demo: [dla, induction]}\n"
        "  - {id: m-2, kind: follow-up, parent: m-1, prompt: p, answer: a}\n"
        "  - {id: gen-0-1, kind: recall, prompt: dup, answer: a}\n",
        encoding="utf-8",
    )
    kept: dict[str, list] = {}
    real = assembly.assemble_cached

    def spy(*args, **kwargs):  # noqa: ANN002, ANN003
        kept.update(args[-1] or {})  # (deckcache.load_collection passes no outline)
        return real(*args, **kwargs)

    monkeypatch.setattr(assembly, "assemble_cached", spy)
    store = Store.open(tmp_path / "p.db")
    coll = deckcache.load(store, [decks], include_bundled=False)
    assert len(kept) == 4
    for key, refs in kept.items():
        assert refs == assembly._refs(store, key, refs[0].file)
    full = load_collection([decks], include_bundled=False)
    assert [(c.id, c.parent, c.demos) for c in coll.cards] == [
        (c.id, c.parent, c.demos) for c in full.cards
    ]
    assert [str(e) for e in coll.errors] == [str(e) for e in full.errors]
