"""Lookups that must not grow with the collection (issue 15): the new-card rotation reads only
what the day's limit needs, home's counts come from grouped SQL, and cram, the apkg export and
"cards that cite this demo" go through the deck cache. Each is checked against the computation
it replaced (kept here as the oracle) on a mixed collection."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from prep.engine.decks import deckcache
from prep.engine.decks.collection import CachedCollection
from prep.engine.decks.deckcache import load_collection
from prep.engine.store import Mark, Store
from prep.engine.study.scheduler import CardState, State
from prep.engine.study.session import build_queue, deck_counts
from prep.engine.timeutil import study_day_start
from tests.conftest import FIXED_NOW
from tests.test_deckcache import parses  # noqa: F401 - a fixture

KINDS = ("recall", "choice", "red-flag", "follow-up")
DEMOS = ("dla", "per-head-sum", "no-wo")


def _card(cid: str, kind: str, parent: str | None, rng: random.Random) -> list[str]:
    lines = [f"  - id: {cid}", f"    kind: {kind}", f"    prompt: Question {cid}?"]
    lines.append(f"    answer: Answer {cid}.")
    level = rng.random()
    if level < 0.3:  # the curriculum: some basics, some advanced, the rest core
        lines.append("    level: basics" if level < 0.15 else "    level: advanced")
    if kind in ("choice", "red-flag"):
        lines += ["    choices: [one, two, three]", "    correct: b"]
    if parent is not None:
        lines.append(f"    parent: {parent}")
    if rng.random() < 0.3:
        lines.append(f"    demo: [{', '.join(rng.sample(DEMOS, rng.randint(1, 2)))}]")
    if rng.random() < 0.5 and kind != "follow-up":
        lines.append("    bullets: [first, second]")
    return lines


def write_mixed_decks(folder: Path, seed: int = 0, size: int = 45) -> Path:
    """Four decks of mixed kinds in an uneven order; follow-up chains, some of them with a
    parent in another deck (before or after it); a duplicate id (the first one wins)."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    ids: list[str] = []
    for d in range(4):
        # decks 1 and 3 declare their place (3 before 1); 0 and 2 come after, in file order
        order = {1: ["order: 20"], 3: ["order: 5"]}.get(d, [])
        lines = [f"deck: mixed-{d}", *order, "cards:"]
        for i in range(size + 10 * d):
            cid = f"m{d}-{i:03d}"
            kind = rng.choice(KINDS if ids else KINDS[:3])
            parent = None
            if kind == "follow-up":
                pool = [p for p in ids if p.startswith(f"m{d}-")] or ids
                if rng.random() < 0.2:
                    pool = ids  # often in another deck
                parent = rng.choice(pool[-12:] if rng.random() < 0.7 else pool)
            lines += _card(cid, kind, parent, rng)
            ids.append(cid)
        if d == 3:  # a duplicate id: an error, the first definition wins
            lines += _card("m0-004", "recall", None, rng)
        (folder / f"mixed-{d}.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    # a follow-up whose parent is in a later file
    extra = ["deck: early", "cards:"]
    extra += _card("early-fu", "follow-up", "m3-010", rng)
    extra += _card("early-main", "recall", None, rng)
    (folder / "a-early.yaml").write_text("\n".join(extra) + "\n", encoding="utf-8")
    return folder


def add_progress(store: Store, coll: CachedCollection, seed: int, fraction: float) -> None:
    """Some cards seen (learning, relearning, review; due now or later); marks on a few,
    seen and unseen alike."""
    rng = random.Random(seed)
    now = FIXED_NOW
    for cid, deck, _ in coll.outline():
        if rng.random() >= fraction:
            if rng.random() < 0.05:
                store.set_mark(cid, Mark(suspended=True))
            elif rng.random() < 0.05:
                store.set_mark(cid, Mark(buried_until=now + timedelta(days=1)))
            continue
        state = rng.choice((State.Learning, State.Review, State.Review, State.Relearning))
        due = now + timedelta(hours=rng.uniform(-200, 200))
        store.put_card(
            CardState(
                id=cid,
                deck=deck,
                state=state,
                step=None if state == State.Review else 0,
                stability=rng.uniform(0.5, 40),
                difficulty=5.0,
                due=due,
                last_review=now - timedelta(days=1),
                reps=2,
                content_hash=coll.get(cid).content_hash,
            )
        )
        r = rng.random()
        if r < 0.05:
            store.set_mark(cid, Mark(suspended=True))
        elif r < 0.1:
            store.set_mark(cid, Mark(buried_until=now + timedelta(days=1)))
        elif r < 0.12:
            store.set_mark(cid, Mark(buried_until=now - timedelta(days=1)))  # over: served


# --- the oracles: the computations these lookups replaced, as they were ------------------


def old_unseen(
    coll: CachedCollection, store: Store, deck: str | None, seen: set[str] | None
) -> Iterator[tuple[str, str, str, str | None, bool]]:
    if seen is None:
        seen = store.seen_ids()
    for c in coll.cards:
        if (deck is None or c.deck == deck) and c.id not in seen:
            yield c.id, c.deck, c.kind, c.parent, c.parent is not None and c.parent in seen


def old_new_cards(
    store: Store, coll: CachedCollection, hidden: set[str], limit: int, deck: str | None
) -> list[str]:
    """The curriculum's new cards, computed eagerly: every unseen card placed by (level,
    deck rank, position) and grouped by (level, kind); the groups of a level take turns
    (in the order of their first card) before the next level's join; a follow-up waits
    for its parent to be answered or queued before it."""
    ranks = coll.deck_ranks()
    placed = []
    for pos, (cid, cdeck, kind, parent, parent_seen) in enumerate(
        old_unseen(coll, store, deck, None)
    ):
        if cid in hidden:
            continue
        level = coll.get(cid).level_rank
        placed.append(((level, ranks[cdeck], pos), cid, kind, parent, parent_seen))
    placed.sort()
    groups: dict[tuple[int, str], list[tuple]] = {}
    for place, cid, kind, parent, parent_seen in placed:
        groups.setdefault((place[0], kind), []).append((cid, parent, parent_seen))
    levels = sorted({level for level, _ in groups})
    new: list[str] = []
    queued: set[str] = set()
    upto = 0
    while levels and len(new) < limit:
        progress = False
        for (level, _), pending in groups.items():
            if level > levels[upto]:
                continue
            for i, (cid, parent, parent_seen) in enumerate(pending):
                if parent is not None and not parent_seen and parent not in queued:
                    continue
                new.append(cid)
                queued.add(cid)
                del pending[i]
                progress = True
                break
            if len(new) >= limit:
                break
        if not progress:
            if upto + 1 == len(levels):
                break
            upto += 1
    return new


def old_deck_counts(store: Store, coll: CachedCollection, new_limit: int | None) -> list[tuple]:
    """PrepApp.deck_counts before the grouped SQL: a queue built per deck (the queue's new
    cards from the old rotation)."""
    now = FIXED_NOW
    rows = []
    for name in [None, *coll.decks]:
        queue = build_queue(store, coll, now, deck=name, new_limit=0)
        settings = store.settings()
        limit = new_limit
        if limit is None:
            from prep.engine.study.session import extra_new_today
            from prep.engine.timeutil import day_start

            done = store.count_reviews(day_start(now), new_only=True)
            limit = max(0, settings.new_per_day + extra_new_today(store, now) - done)
        new = old_new_cards(store, coll, store.hidden_ids(now), limit, name) if limit else []
        # learning: the steps due within the learn-ahead window (as the session holds them),
        # and the interday steps the queue took (due by day, under the review limit: a step on
        # a later study day than its last review, engine/study/due.py)
        ahead = now + timedelta(minutes=settings.learn_ahead_min)
        decks = None if name is None else [name]
        hidden = store.hidden_ids(now)
        steps = store.due_ids(ahead, decks=decks, not_state=int(State.Review))
        states = store.cards(steps)
        learning = len(
            [
                c
                for c in steps
                if c in coll
                and c not in hidden
                and study_day_start(states[c].due) <= study_day_start(states[c].last_review)
            ]
        )
        learning += queue.interday
        rows.append((name, len(new), learning, len(queue.due) - queue.learning))
    return rows


# --- fixtures ---------------------------------------------------------------------------


@pytest.fixture
def decks(tmp_path: Path) -> Path:
    return write_mixed_decks(tmp_path / "decks")


@pytest.fixture
def store(tmp_path: Path):
    with Store.open(tmp_path / "prep.db") as s:
        yield s


LIMITS = (0, 1, 2, 5, 13, 40, 1000)


@pytest.mark.parametrize("fraction", [0.0, 0.3, 0.9])
def test_new_cards_are_served_in_the_curriculum_order(store, decks, fraction) -> None:
    cached = deckcache.load(store, [decks], include_bundled=False)
    full = load_collection([decks], include_bundled=False)
    assert cached.errors and len(cached.decks) == 5  # the duplicate id is reported
    add_progress(store, full, seed=int(fraction * 10), fraction=fraction)
    hidden = store.hidden_ids(FIXED_NOW)
    for deck in (None, *full.decks):
        for limit in LIMITS:
            want = old_new_cards(store, full, hidden, limit, deck)
            for coll in (cached, full):
                got = build_queue(store, coll, FIXED_NOW, deck=deck, new_limit=limit).new
                assert got == want, (deck, limit, type(coll).__name__)
    # the rotation is not vacuous here: decks and kinds alternate, follow-ups wait
    served = build_queue(store, cached, FIXED_NOW, new_limit=40).new
    if fraction < 0.9:
        assert len({cached.get(c).deck for c in served}) > 2
        assert len({cached.get(c).kind for c in served[:6]}) > 2
        assert {cached.get(c).kind for c in served} == set(KINDS)


def test_a_new_collection_reads_only_what_the_limit_needs(store, tmp_path, monkeypatch) -> None:
    decks = write_mixed_decks(tmp_path / "big", size=600)
    cached = deckcache.load(store, [decks], include_bundled=False)
    read: list[str] = []
    real = store.deck_cache_unseen_from

    def counting(*args, **kwargs):
        rows = real(*args, **kwargs)
        read.extend(r[0] for r in rows)
        return rows

    monkeypatch.setattr(store, "deck_cache_unseen_from", counting)
    queue = build_queue(store, cached, FIXED_NOW, new_limit=10)
    assert len(queue.new) == 10
    # 20 groups (file, kind): a first step of each, except a follow-up group whose cards all
    # wait for parents not queued yet, read through (the policy must know none can be served)
    assert len(read) < len(cached) / 10, len(read)
    assert not cached._built  # and no card was built


@pytest.mark.parametrize("fraction", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("new_limit", [None, 0, 7])
def test_deck_counts_equal_the_queues_they_replaced(store, decks, fraction, new_limit) -> None:
    cached = deckcache.load(store, [decks], include_bundled=False)
    full = load_collection([decks], include_bundled=False)
    add_progress(store, full, seed=3, fraction=fraction)
    want = old_deck_counts(store, full, new_limit)
    for coll in (cached, full):
        got = deck_counts(store, coll, FIXED_NOW, new_limit=new_limit)
        assert [(r.name or None, r.new, r.learning, r.due) for r in got] == want
    # a deck whose every card has progress (its new cards are known to be none) beside
    # others that have new cards
    for card in full.in_deck("mixed-1"):
        if store.card(card.id) is None:
            store.put_card(CardState(id=card.id, deck=card.deck, content_hash=card.content_hash))
    want = old_deck_counts(store, full, new_limit)
    for coll in (cached, full):
        got = deck_counts(store, coll, FIXED_NOW, new_limit=new_limit)
        assert [(r.name or None, r.new, r.learning, r.due) for r in got] == want
    # the review limit caps "due" per deck as the queue does
    from dataclasses import replace

    store.save_settings(replace(store.settings(), review_limit=3))
    want = old_deck_counts(store, full, new_limit)
    got = deck_counts(store, cached, FIXED_NOW, new_limit=new_limit)
    assert [(r.name or None, r.new, r.learning, r.due) for r in got] == want
    if fraction:  # the limit holds cards back; interday steps and reviews share it
        assert any(r.waiting > 3 for r in got)
        assert all(r.learning - r.steps + r.due == min(3, r.waiting) for r in got)


def test_cards_citing_a_demo_build_no_card(store, decks) -> None:
    cached = deckcache.load(store, [decks], include_bundled=False)
    full = load_collection([decks], include_bundled=False)
    for name in (*DEMOS, "unknown"):
        want = [c.id for c in full.cards_for_demo(name)]
        assert cached.ids_for_demo(name) == full.ids_for_demo(name) == want
        assert [c.id for c in cached.cards_for_demo(name)] == want
    assert cached.ids_for_demo("dla")  # not vacuous
    fresh = deckcache.load(store, [decks], include_bundled=False)
    fresh.ids_for_demo("dla")
    assert not fresh._built  # no card was built for the lookup


def test_a_deck_and_the_cram_sheet_are_the_same_through_the_cache(store, decks) -> None:
    from prep.engine.study.cram import cram_sheet

    cached = deckcache.load(store, [decks], include_bundled=False)
    full = load_collection([decks], include_bundled=False)
    for deck in (None, *full.decks):
        assert cached.in_deck(deck) == full.in_deck(deck)
        assert cram_sheet(cached, deck) == cram_sheet(full, deck)
    assert cram_sheet(cached)  # not vacuous
    # the apkg export's notes, front and back
    from prep.engine.transfer.anki import build_package

    def notes(coll: CachedCollection) -> list:
        return [(n.guid, n.fields, n.tags) for d in build_package(coll).decks for n in d.notes]

    assert notes(cached) == notes(full) and notes(full)


def _prep(db: Path, decks: Path, *args: str) -> str:
    from click.testing import CliRunner

    from prep.tui.cli import main

    result = CliRunner().invoke(main, ["--db", str(db), "--questions", str(decks), *args])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture
def no_full_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*args, **kwargs):
        raise AssertionError("every deck parsed (load_collection), not the cache")

    monkeypatch.setattr(deckcache, "load_collection", refused)


def test_cram_apkg_and_cited_cards_read_the_cache(tmp_path, parses, no_full_parse) -> None:  # noqa: F811
    """`prep cram`, the apkg export and `prep demo --list` open the deck cache: once it is
    filled, an unchanged collection is not parsed again; the output is the full parse's."""
    import json

    from prep.engine.study.cram import cram_sheet
    from prep.tui.cli import demo_names
    from prep.tui.reports import cram_text as render

    decks = write_mixed_decks(tmp_path / "decks")
    # a deck collection without errors (the cram and the export refuse deck errors)
    text = (decks / "mixed-3.yaml").read_text(encoding="utf-8")
    (decks / "mixed-3.yaml").write_text(text.replace("id: m0-004", "id: m3-dup"), "utf-8")
    t = time.time() - 10  # outside the cache's racy window
    for p in decks.iterdir():
        os.utime(p, (t, t))
    db = tmp_path / "prep.db"
    Store.open(db).close()  # (cram only reads: it creates no database, it fills one's cache)
    full = load_collection([decks], demo_names=demo_names())
    assert not full.errors, full.errors
    first = _prep(db, decks, "cram")
    assert parses  # the first run fills the cache
    parses.clear()
    assert _prep(db, decks, "cram") == first == render(cram_sheet(full)) + "\n"
    assert (
        _prep(db, decks, "cram", "--deck", "mixed-1") == render(cram_sheet(full, "mixed-1")) + "\n"
    )
    listed = json.loads(_prep(db, decks, "demo", "--list", "--json"))
    assert {e["name"]: e["cards"] for e in listed} == {
        name: full.ids_for_demo(name) for name in demo_names()
    }
    assert any(e["cards"] for e in listed)
    _prep(db, decks, "export", "--format", "apkg", "-o", str(tmp_path / "out.apkg"))
    assert (tmp_path / "out.apkg").stat().st_size > 0
    assert parses == []  # nothing parsed again


def test_a_v7_database_migrates_and_the_lookups_use_their_indexes(tmp_path, decks) -> None:
    """v8 indexes the cached cards by (kind, key) and the cards that cite a demo, and puts
    the deck in the due index: a v7 database (its cache filled, progress kept) migrates, and
    the rotation, the cited cards and home's counts read those indexes."""
    from prep.engine.store import SCHEMA_VERSION

    db = tmp_path / "v7.db"
    with Store.open(db) as store:
        coll = deckcache.load(store, [decks], include_bundled=False)
        add_progress(store, coll, seed=5, fraction=0.4)
        before = build_queue(store, coll, FIXED_NOW, new_limit=30)
        cited = coll.ids_for_demo("dla")
        # as a v7 prep left it (v11 dropped deck_cards_kind again and indexes the ids)
        store.conn.execute("DROP INDEX deck_cards_id")
        store.conn.execute("DROP INDEX deck_cards_demos")
        for index in ("cards_due", "cards_learning"):  # (v14's)
            store.conn.execute(f"DROP INDEX {index}")
        store.conn.execute("CREATE INDEX cards_removed_due ON cards (removed, due)")
        store.conn.execute("CREATE INDEX cards_removed_deck ON cards (removed, deck, stability)")
        store.conn.execute("CREATE INDEX cards_removed_state_due ON cards (removed, state, due)")
        store.set_meta("schema_version", "7")
    with Store.open(db) as store:
        assert store.schema_version() == SCHEMA_VERSION == 17
        coll = deckcache.load(store, [decks], include_bundled=False)
        assert build_queue(store, coll, FIXED_NOW, new_limit=30) == before
        assert coll.ids_for_demo("dla") == cited and cited

        def plan(sql: str, args: tuple = ()) -> str:
            return " ".join(r[3] for r in store.conn.execute("EXPLAIN QUERY PLAN " + sql, args))

        # (v14: the learning cards' partial index and the one due index, each covering)
        assert "COVERING INDEX cards_learning" in plan(
            "SELECT deck, count(*) FROM cards INDEXED BY cards_learning "
            "WHERE removed = 0 AND state != 2 AND state IN (1, 3) AND due <= '2026' GROUP BY deck"
        )
        assert "COVERING INDEX cards_due" in plan(
            "SELECT deck, count(*) FROM cards INDEXED BY cards_due "
            "WHERE removed = 0 AND due <= '2026' AND state = 2 GROUP BY deck"
        )
        assert "INDEX deck_cards_demos" in plan(
            "SELECT key & 0xFFFFFFFF, id, demos FROM deck_cards INDEXED BY deck_cards_demos "
            "WHERE demos != '' AND key BETWEEN 0 AND 9 ORDER BY key"
        )


def test_cards_another_prep_parsed_since_are_not_served(tmp_path, decks) -> None:
    """Another prep on the same database parses an edited file: this one's collection still
    serves (and lists as citing a demo) only its own cards."""
    db = tmp_path / "shared.db"
    with Store.open(db) as mine:
        coll = deckcache.load(mine, [decks], include_bundled=False)
        before = build_queue(mine, coll, FIXED_NOW, new_limit=1000).new
        cited = coll.ids_for_demo("dla")
        path = decks / "mixed-0.yaml"
        text = path.read_text(encoding="utf-8").replace(
            "cards:\n",
            "cards:\n  - {id: brand-new, kind: recall, prompt: p, answer: a, demo: [dla]}\n",
            1,
        )
        path.write_text(text, encoding="utf-8")
        with Store.open(db) as theirs:
            other = deckcache.load(theirs, [decks], include_bundled=False)
            assert "brand-new" in build_queue(theirs, other, FIXED_NOW, new_limit=1000).new
            assert "brand-new" in other.ids_for_demo("dla")
        again = build_queue(mine, coll, FIXED_NOW, new_limit=1000).new
        assert "brand-new" not in again and "brand-new" not in coll.ids_for_demo("dla")
        # the other cards of the edited file moved down a line: not this collection's rows
        assert set(again) <= set(before) and set(coll.ids_for_demo("dla")) <= set(cited)
