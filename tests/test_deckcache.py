"""The deck cache: the same collection as a full parse, and a file is parsed again only when
its content changes."""

from __future__ import annotations

import os
import sqlite3
import time
from datetime import timedelta
from pathlib import Path

import pytest

from prep.engine.decks import assembly, deckcache
from prep.engine.decks.checks import parse_decks
from prep.engine.decks.deckcache import load_collection
from prep.engine.store import Mark, Store
from prep.engine.study import stats
from prep.engine.study.scheduler import Rating
from prep.engine.study.session import ReviewSession, build_queue, limits_today
from tests.conftest import SMALL_DECK

OTHER_DECK = """\
deck: other
cards:
  - id: other-one
    kind: recall
    prompt: Why scale by sqrt(d_head)?
    answer: To keep the softmax out of saturation.
    tags: [scaling]
  - id: roles
    kind: recall
    prompt: A duplicate id (an error).
    answer: The first definition wins.
  - id: orphan
    kind: follow-up
    parent: missing-parent
    prompt: A follow-up of nothing.
    answer: An error.
"""


@pytest.fixture
def decks(small_deck_dir: Path) -> Path:
    return small_deck_dir


@pytest.fixture
def store(tmp_path: Path):
    with Store.open(tmp_path / "prep.db") as s:
        yield s


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files the cache parses (not read from the database)."""
    seen: list[str] = []
    real = deckcache._parse

    def counting(text: str, shown: str, stem: str):
        seen.append(Path(shown).name)
        return real(text, shown, stem)

    monkeypatch.setattr(deckcache, "_parse", counting)
    return seen


def age(path: Path, seconds: float = 10) -> None:
    """Set a file's mtime in the past (outside the racy window of the cache)."""
    t = time.time() - seconds
    os.utime(path, (t, t))


def same_as_full_parse(coll, folder: Path) -> None:
    full = parse_decks([folder], include_bundled=False)
    assert coll.cards == full.cards
    assert [str(e) for e in coll.errors] == [str(e) for e in full.errors]
    assert {n: (i.title, i.card_ids, i.file) for n, i in coll.decks.items()} == {
        n: (i.title, i.card_ids, i.file) for n, i in full.decks.items()
    }
    assert len(coll) == len(full) and all(c.id in coll for c in full.cards)


def test_the_cached_collection_is_the_parsed_one(store, decks, parses) -> None:
    (decks / "other.yaml").write_text(OTHER_DECK, encoding="utf-8")
    for p in decks.iterdir():
        age(p)
    first = deckcache.load(store, [decks], include_bundled=False)
    same_as_full_parse(first, decks)
    assert sorted(parses) == ["other.yaml", "small.yaml"]
    assert any("duplicate card id 'roles'" in str(e) for e in first.errors)
    second = deckcache.load(store, [decks], include_bundled=False)
    assert len(parses) == 2  # nothing parsed the second time
    same_as_full_parse(second, decks)
    assert second.get("roles").deck == "other"  # files load in name order: the first one wins
    assert [c.id for c in second.children("roles")] == ["roles-follow"]


def test_the_bundled_decks_come_back_the_same(store) -> None:
    cached = deckcache.load(store, [])
    again = deckcache.load(store, [])
    full = parse_decks([])
    assert again.cards == cached.cards == full.cards
    assert [str(e) for e in again.errors] == [str(e) for e in full.errors]


def test_an_edit_is_parsed_again_and_flags_the_card(store, decks, parses, clock) -> None:
    deck = decks / "small.yaml"
    age(deck)
    coll = deckcache.load(store, [decks], include_bundled=False)
    session = ReviewSession(store, coll, clock=clock, queue=["roles"])
    session.rate(Rating.Good)
    assert not store.card("roles").changed
    deck.write_text(SMALL_DECK.replace("Cross-head mixing", "Mixing across heads"), "utf-8")
    edited = deckcache.load(store, [decks], include_bundled=False)
    assert parses == ["small.yaml", "small.yaml"]
    assert "Mixing across heads" in edited.get("roles").answer
    assert store.card("roles").changed  # the reconciliation ran, in SQL
    same_as_full_parse(edited, decks)


def test_touch_without_change_reads_but_does_not_parse(store, decks, parses, monkeypatch) -> None:
    deck = decks / "small.yaml"
    age(deck, 20)
    deckcache.load(store, [decks], include_bundled=False)
    age(deck, 10)  # touched: another mtime, same bytes
    reads: list[Path] = []
    real_read = deckcache.read_deck_text

    def counting_read(path: Path, shown: str):
        reads.append(path)
        return real_read(path, shown)

    monkeypatch.setattr(deckcache, "read_deck_text", counting_read)
    deckcache.load(store, [decks], include_bundled=False)
    assert parses == ["small.yaml"] and len(reads) == 1  # read and hashed, not parsed
    deckcache.load(store, [decks], include_bundled=False)
    assert len(reads) == 1  # size and mtime remembered: not even read


def test_a_same_size_edit_within_the_clock_tick_is_seen(store, decks, parses) -> None:
    """An edit that keeps size and mtime (a coarse mtime clock) is caught: a file modified
    within RACY_NS of the cache write is always read and hashed."""
    deck = decks / "small.yaml"
    before = deck.stat()
    deckcache.load(store, [decks], include_bundled=False)
    deck.write_text(SMALL_DECK.replace("Cross-head", "Crosshead!"), encoding="utf-8")
    os.utime(deck, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert deck.stat().st_size == before.st_size
    coll = deckcache.load(store, [decks], include_bundled=False)
    assert parses == ["small.yaml", "small.yaml"]
    assert "Crosshead!" in coll.get("roles").answer


def test_a_removed_deck_marks_its_cards_removed_and_back(store, decks, clock) -> None:
    (decks / "other.yaml").write_text(OTHER_DECK.replace("- id: roles", "- id: roles2"), "utf-8")
    coll = deckcache.load(store, [decks], include_bundled=False)
    ReviewSession(store, coll, clock=clock, queue=["other-one"]).rate(Rating.Good)
    (decks / "other.yaml").unlink()
    deckcache.load(store, [decks], include_bundled=False)
    assert store.card("other-one").removed
    (decks / "other.yaml").write_text(OTHER_DECK.replace("- id: roles", "- id: roles2"), "utf-8")
    deckcache.load(store, [decks], include_bundled=False)
    assert not store.card("other-one").removed


def test_the_queue_is_the_same_through_the_cache(store, decks, clock) -> None:
    (decks / "other.yaml").write_text(OTHER_DECK, encoding="utf-8")
    cached = deckcache.load(store, [decks], include_bundled=False)
    full = load_collection([decks], include_bundled=False)
    for deck in (None, "small", "other"):
        assert build_queue(store, cached, clock(), deck=deck) == build_queue(
            store, full, clock(), deck=deck
        )
    # in deck "small" the follow-up waits for its parent (whose card is in "other")
    assert build_queue(store, cached, clock(), deck="small").new == ["pick-one", "flag"]
    ReviewSession(store, cached, clock=clock, queue=["roles"]).rate(Rating.Good)
    q = build_queue(store, cached, clock(), deck="small")
    assert q == build_queue(store, full, clock(), deck="small")
    assert q.new == ["pick-one", "roles-follow", "flag"]
    # i14's queue policy through the cache: a suspended card is never served (nor its
    # follow-up before it is seen), a buried one not until the next day; limits agree
    store.set_mark("pick-one", Mark(suspended=True))
    store.set_mark("flag", Mark(buried_until=clock() + timedelta(days=1)))
    for deck in (None, "small", "other"):
        q = build_queue(store, cached, clock(), deck=deck)
        assert q == build_queue(store, full, clock(), deck=deck)
        assert "pick-one" not in q.ids and "flag" not in q.ids
        assert limits_today(store, cached, clock(), q, deck) == limits_today(
            store, full, clock(), q, deck
        )
    assert build_queue(store, cached, clock(), deck="small").new == ["roles-follow"]


def test_a_database_that_refuses_writes_still_opens(tmp_path, decks, clock) -> None:
    """Read-only, or another prep holds the write lock: the decks are read through a cache
    private to the connection (TEMP tables), the same cards as a parse, new cards served from
    it beside the database's progress, and nothing written to the database."""
    db = tmp_path / "p.db"
    Store.open(db).close()
    parsed = parse_decks([decks], include_bundled=False)
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, isolation_level=None)
    with Store(conn, db) as read_only:
        coll = deckcache.load(read_only, [decks], include_bundled=False)
        assert read_only.deck_cache_is_private()
        assert coll.cards == parsed.cards and len(coll) == 4
        assert build_queue(read_only, coll, clock()).new == [
            "roles",
            "pick-one",
            "roles-follow",
            "flag",
        ]
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another prep, mid-write
    try:
        with Store.open(db) as busy:
            busy.set_busy_timeout(50)
            coll = deckcache.load(busy, [decks], include_bundled=False)
            assert busy.deck_cache_is_private()
            assert coll.cards == parsed.cards
            assert build_queue(busy, coll, clock()).new == [
                "roles",
                "pick-one",
                "roles-follow",
                "flag",
            ]
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with Store.open(db) as store:
        assert store.deck_cache_files() == {}  # the database's own cache: never written


def test_stats_are_the_same_through_the_cache(store, decks, clock) -> None:
    tagged = OTHER_DECK.replace(
        "kind: follow-up\n    parent: missing-parent", "kind: recall\n    tags: [scaling, x]"
    )
    (decks / "other.yaml").write_text(tagged, encoding="utf-8")
    # a duplicate id in a later file: its tags are not the card's
    third = (
        "cards:\n  - {id: other-one, kind: recall, prompt: p, answer: a, tags: [scaling, dup]}\n"
    )
    (decks / "third.yaml").write_text(third, encoding="utf-8")
    cached = deckcache.load(store, [decks], include_bundled=False)
    full = load_collection([decks], include_bundled=False)
    session = ReviewSession(store, cached, clock=clock, queue=["other-one", "roles"])
    session.rate(Rating.Easy)
    session.rate(Rating.Good)
    assert (
        cached.tag_progress(store, 0.0)
        == full.tag_progress(store, 0.0)
        == {
            "scaling": (2, 1, 1),
            "x": (1, 0, 0),
        }
    )
    assert stats.compute(store, cached, clock()) == stats.compute(store, full, clock())
    # stats counts the seen cards from the per-deck progress, not a query of its own
    assert stats.compute(store, cached, clock()).cards.seen == store.count_cards() == 2


def test_another_working_directory_renames_files_but_parses_nothing(
    store, decks, parses, monkeypatch
) -> None:
    (decks / "other.yaml").write_text(OTHER_DECK, encoding="utf-8")
    for p in decks.iterdir():
        age(p)
    monkeypatch.chdir(decks)
    here = deckcache.load(store, [decks], include_bundled=False)
    assert any(e.file == "other.yaml" for e in here.errors)
    monkeypatch.chdir(decks.parent)
    there = deckcache.load(store, [decks], include_bundled=False)
    assert len(parses) == 2  # names are the load's, not the parse's
    assert any(e.file == "decks/other.yaml" for e in there.errors)
    assert there.get("other-one").file == "decks/other.yaml"
    same_as_full_parse(there, decks)


# --- pruning the entries of deck files that are gone ------------------------------------------


def cache_rows(store: Store) -> dict[str, tuple[int, int]]:
    """Each cached file (by name) -> (its cached cards, its cached tags)."""
    out = {}
    for path in store.deck_cache_files():
        (fid,) = store.conn.execute("SELECT fid FROM deck_files WHERE path = ?", (path,)).fetchone()
        lo, hi = fid << 32, (fid << 32) | 0xFFFFFFFF
        cards, tags = (
            store.conn.execute(
                f"SELECT count(*) FROM {t} WHERE key BETWEEN ? AND ?", (lo, hi)
            ).fetchone()[0]
            for t in ("deck_cards", "deck_tags")
        )
        out[Path(path).name] = (cards, tags)
    return out


def test_alternating_deck_folders_keeps_both_caches(store, tmp_path, parses) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    (a / "small.yaml").write_text(SMALL_DECK, encoding="utf-8")
    (b / "other.yaml").write_text(OTHER_DECK, encoding="utf-8")
    for p in (a / "small.yaml", b / "other.yaml"):
        age(p)
    for folder in (a, b, a, b):  # --questions A, then B, then A again ...
        deckcache.load(store, [folder], include_bundled=False)
    assert set(cache_rows(store)) == {"small.yaml", "other.yaml"}
    assert parses == ["small.yaml", "other.yaml"]  # each parsed once, then read from the cache


def test_a_deleted_deck_folder_is_pruned_and_progress_kept(store, tmp_path, clock) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    (a / "small.yaml").write_text(SMALL_DECK, encoding="utf-8")
    (b / "other.yaml").write_text(OTHER_DECK.replace("- id: roles", "- id: roles2"), "utf-8")
    coll = deckcache.load(store, [a, b], include_bundled=False)
    ReviewSession(store, coll, clock=clock, queue=["other-one"]).rate(Rating.Good)
    store.set_mark("other-one", Mark(flagged=True))
    before = store.dump()
    rows = cache_rows(store)
    assert rows["other.yaml"][0] == 3 and rows["other.yaml"][1] > 0
    (b / "other.yaml").unlink()
    b.rmdir()  # the folder is deleted (or moved away)
    deckcache.load(store, [a], include_bundled=False)
    assert set(cache_rows(store)) == {"small.yaml"}
    # nothing of the pruned file is left in the cache's tables (no rows outside the ranges)
    n_cards, n_tags = (
        store.conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
        for t in ("deck_cards", "deck_tags")
    )
    assert (n_cards, n_tags) == cache_rows(store)["small.yaml"]
    after = store.dump()
    assert after["reviews"] == before["reviews"]
    assert store.mark("other-one") == Mark(flagged=True)
    assert {c["id"] for c in after["cards"]} == {c["id"] for c in before["cards"]}
    assert store.card("other-one").removed  # not in the decks now, as any removed deck
    # and it comes back whole when the deck does: progress and all
    b.mkdir()
    (b / "other.yaml").write_text(OTHER_DECK.replace("- id: roles", "- id: roles2"), "utf-8")
    coll = deckcache.load(store, [a, b], include_bundled=False)
    assert "other-one" in coll and not store.card("other-one").removed
    assert store.card("other-one").reps == 1


def test_only_files_not_loaded_are_looked_at_and_only_a_missing_one_is_gone(
    store, tmp_path, monkeypatch
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    (a / "small.yaml").write_text(SMALL_DECK, encoding="utf-8")
    (b / "other.yaml").write_text(OTHER_DECK, encoding="utf-8")
    deckcache.load(store, [a, b], include_bundled=False)
    asked: list[str] = []
    real = assembly._gone
    monkeypatch.setattr(assembly, "_gone", lambda p: asked.append(Path(p).name) or real(p))
    deckcache.load(store, [a, b], include_bundled=False)
    assert asked == []  # every cached file is loaded: no stat beyond the loader's own
    deckcache.load(store, [a], include_bundled=False)
    assert asked == ["other.yaml"]  # the one not loaded: it exists, so it stays
    assert set(cache_rows(store)) == {"small.yaml", "other.yaml"}


def test_a_file_that_cannot_be_looked_at_is_not_taken_as_gone(tmp_path, monkeypatch) -> None:
    (tmp_path / "x.yaml").write_text("deck: x\n", encoding="utf-8")
    assert assembly._gone(str(tmp_path / "missing.yaml"))
    assert assembly._gone(str(tmp_path / "x.yaml" / "under-a-file.yaml"))
    assert not assembly._gone(str(tmp_path / "x.yaml"))

    def refused(path, *a, **k):
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(assembly.os, "stat", refused)  # (as root, chmod would not refuse)
    assert not assembly._gone(str(tmp_path / "x.yaml"))


@pytest.mark.parametrize("how", ["touch -d", "cp -p", "rsync -t"])
def test_an_edit_that_keeps_size_and_mtime_is_seen(store, decks, parses, how: str) -> None:
    """Size and mtime are not enough: `touch -d`, `cp -p` and `rsync -t` put an edited file's
    mtime back with the same size. The inode and ctime (which nothing sets back) are kept too."""
    import shutil

    deck = decks / "small.yaml"
    age(deck, 60)
    before = deck.stat()
    deckcache.load(store, [decks], include_bundled=False)
    edited = SMALL_DECK.replace("Cross-head", "Crosshead!")
    assert len(edited) == len(SMALL_DECK)
    if how == "touch -d":  # edit in place, then the old mtime set back
        deck.write_text(edited, encoding="utf-8")
    else:  # a copy made elsewhere with the old times (cp -p; rsync -t renames it in place)
        elsewhere = decks.parent / "elsewhere.yaml"
        elsewhere.write_text(edited, encoding="utf-8")
        if how == "cp -p":
            shutil.copyfile(elsewhere, deck)  # same inode, content replaced
        else:
            os.replace(elsewhere, deck)  # a new inode
    os.utime(deck, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = deck.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    coll = deckcache.load(store, [decks], include_bundled=False)
    assert parses == ["small.yaml", "small.yaml"]
    assert "Crosshead!" in coll.get("roles").answer
    assert "Crosshead!" in deckcache.load(store, [decks], include_bundled=False).get("roles").answer
