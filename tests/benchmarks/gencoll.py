"""Generated collections for the side-by-side benchmark: the same cards, due dates and review
histories written three ways — YAML decks, a prep database, an Anki collection.

The prep database is written in schema v3 (the last layout that kept a JSON copy of the
state before and after every review), with the DDL frozen below: a prep that has a newer
layout migrates it when it first opens it, as it would a user's database. The same frozen
DDL builds the v3 databases the migration tests start from.

Histories: every card has ``reviews_per_card`` reviews (the first of a new card), intervals
growing with a synthetic stability; the last review's state is the card's state now; due
dates spread from 30 days overdue to 60 days ahead. Ratings are drawn 1/6 Again, 1/6 Hard,
1/2 Good, 1/6 Easy. Everything is seeded: two builds of one size are identical but for ``now``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TextIO

GENERATOR_VERSION = 6
N_DECKS = 20  # at least; more where a deck file would pass prep's cap (deck.MAX_DECK_BYTES)
# A generated card is about 450 bytes of YAML: 4,000 of them stay under the 2 MB cap on a
# deck file (v6: 100k cards in 20 files of 2.2 MB each were refused, as they should be).
CARDS_PER_DECK_FILE = 4000
_FMT = "%Y-%m-%dT%H:%M:%S.%fZ"
BATCH = 10_000  # cards per batch of inserts (and of notes added to Anki)

SCHEMA_V3 = """
CREATE TABLE "meta" ("key" TEXT PRIMARY KEY, "value" TEXT);
CREATE TABLE "cards" (
   "id" TEXT PRIMARY KEY,
   "deck" TEXT NOT NULL DEFAULT '',
   "state" INTEGER NOT NULL,
   "step" INTEGER,
   "stability" REAL,
   "difficulty" REAL,
   "due" TEXT,
   "last_review" TEXT,
   "reps" INTEGER NOT NULL DEFAULT 0,
   "lapses" INTEGER NOT NULL DEFAULT 0,
   "leech" INTEGER NOT NULL DEFAULT 0,
   "content_hash" TEXT,
   "changed" INTEGER NOT NULL DEFAULT 0,
   "removed" INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX "cards_removed_due" ON "cards" ("removed", "due");
CREATE TABLE "reviews" (
   "id" INTEGER PRIMARY KEY,
   "card_id" TEXT NOT NULL,
   "rating" INTEGER NOT NULL,
   "reviewed_at" TEXT NOT NULL,
   "duration_ms" INTEGER,
   "prev_state" INTEGER,
   "prev" TEXT,
   "next" TEXT NOT NULL
);
CREATE INDEX "reviews_card" ON "reviews" ("card_id");
CREATE INDEX "reviews_at" ON "reviews" ("reviewed_at");
CREATE TABLE "demo_runs" (
   "id" INTEGER PRIMARY KEY,
   "name" TEXT NOT NULL,
   "device" TEXT NOT NULL,
   "device_name" TEXT,
   "dtype" TEXT,
   "scale" TEXT,
   "seed" INTEGER,
   "passed" INTEGER NOT NULL,
   "seconds" REAL NOT NULL,
   "metrics" TEXT,
   "ran_at" TEXT NOT NULL
);
CREATE INDEX "demo_runs_name" ON "demo_runs" ("name");
CREATE INDEX "reviews_state_at" ON "reviews" ("prev_state", "reviewed_at", "rating");
CREATE INDEX "cards_removed_deck" ON "cards" ("removed", "deck", "stability");
CREATE INDEX "cards_removed_state_due" ON "cards" ("removed", "state", "due");
INSERT INTO meta VALUES ('schema_version', '3');
"""


def fmt(dt: datetime | None) -> str | None:
    return None if dt is None else dt.astimezone(UTC).strftime(_FMT)


def content_hash(kind: str, prompt: str, answer: str) -> str:
    """prep's Card.content_hash for a recall card (kept here so the generator is standalone)."""
    payload = json.dumps([kind, prompt, answer, [], None], ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


@dataclass
class GenCard:
    id: str
    deck: str
    prompt: str
    answer: str
    explain: str
    tags: list[str]
    # the history: (reviewed_at, rating, duration_ms, prev state dict | None, next state dict)
    reviews: list[tuple[datetime, int, int, dict | None, dict]]

    @property
    def state(self) -> dict:
        return self.reviews[-1][4]


def _state(card_id, deck, chash, state, step, s, d, due, last, reps, lapses) -> dict:
    return {
        "id": card_id,
        "deck": deck,
        "state": state,
        "step": step,
        "stability": s,
        "difficulty": d,
        "due": due,
        "last_review": last,
        "reps": reps,
        "lapses": lapses,
        "leech": False,
        "content_hash": chash,
        "changed": False,
        "removed": False,
    }


def generate(n_cards: int, reviews_per_card: int, now: datetime, seed: int = 0):
    """Yield GenCards; review times are unique to the millisecond (Anki's revlog id)."""
    rng = random.Random(seed)
    used_ms: set[int] = set()
    n_decks = max(N_DECKS, -(-n_cards // CARDS_PER_DECK_FILE))
    for i in range(n_cards):
        deck = f"deck-{i % n_decks:02d}"
        cid = f"c-{i:07d}"
        prompt = (
            f"Question {i}: why does the output projection W_O matter for head {i % 97} "
            f"when the residual stream has width {256 + i % 512}?"
        )
        answer = (
            f"Because W_O mixes the per-head outputs back into the residual stream; answer {i} "
            "names the mixing, the per-head weighting, and the rank limit of each OV circuit."
        )
        explain = f"Card {i} explains the reason in one short paragraph, as the real decks do."
        chash = content_hash("recall", prompt, answer)
        # the card's last review (1 to 90 days ago) and its next due date (about 40% are due
        # now), then the history walked backwards: every review is in the past
        last = now - timedelta(days=rng.uniform(1, 90))
        s_final = rng.uniform(2, 120)
        due = last + timedelta(days=s_final)
        gaps = [
            max(0.01, s_final * (0.55**k) * rng.uniform(0.8, 1.2))
            for k in range(1, reviews_per_card)
        ]
        times = [last]
        for gap in gaps:
            times.append(times[-1] - timedelta(days=gap))
        times.reverse()
        reviews = []
        prev = None
        lapses = 0
        for k, at in enumerate(times):
            ms = int(at.timestamp() * 1000)
            while ms in used_ms:
                ms += 1
            used_ms.add(ms)
            at = datetime.fromtimestamp(ms / 1000, UTC)
            rating = rng.choice((1, 2, 3, 3, 3, 4))
            if prev is not None and prev["state"] == 2 and rating == 1:
                lapses += 1
            nxt_at = times[k + 1] if k + 1 < len(times) else due
            s = max(0.1, (nxt_at - at).total_seconds() / 86400)
            state = 2 if k > 0 or s > 1 else 1
            nxt = _state(
                cid,
                deck,
                chash,
                state,
                None if state == 2 else 1,
                round(s, 6),
                round(rng.uniform(3, 8), 6),
                fmt(nxt_at),
                fmt(at),
                k + 1,
                lapses,
            )
            reviews.append((at, rating, rng.randint(2000, 20000), prev, nxt))
            prev = nxt
        yield GenCard(cid, deck, prompt, answer, explain, [f"t{i % 50}"], reviews)


def _yaml_str(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)  # a JSON string is a valid YAML flow scalar


def write_decks(cards: Iterable[GenCard], folder: Path) -> None:
    """One YAML file per deck, written as the cards stream by (every deck's file open)."""
    folder.mkdir(parents=True, exist_ok=True)
    files: dict[str, TextIO] = {}
    try:
        for c in cards:
            f = files.get(c.deck)
            if f is None:
                f = files[c.deck] = (folder / f"{c.deck}.yaml").open("w", encoding="utf-8")
                f.write(f"deck: {c.deck}\ntitle: Generated deck {c.deck}\ncards:\n")
            f.write(
                f"  - id: {c.id}\n    kind: recall\n    prompt: {_yaml_str(c.prompt)}\n"
                f"    answer: {_yaml_str(c.answer)}\n    explain: {_yaml_str(c.explain)}\n"
                f"    tags: [{', '.join(c.tags)}]\n"
            )
    finally:
        for f in files.values():
            f.close()


def _batches(items: Iterable, n: int) -> Iterator[list]:
    it = iter(items)
    while batch := list(itertools.islice(it, n)):
        yield batch


def write_prep_v3(cards: Iterable[GenCard], path: Path) -> None:
    """A schema-v3 prep database holding these cards' states and histories. Streamed: the
    reviews wait in a temporary table (on disk) and are copied into the log in time order."""
    path.unlink(missing_ok=True)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(SCHEMA_V3)
    conn.execute("PRAGMA temp_store = FILE")
    conn.execute(
        "CREATE TEMP TABLE staged (n INTEGER PRIMARY KEY, card_id, rating, reviewed_at, "
        "duration_ms, prev_state, prev, next)"
    )
    conn.execute("BEGIN")
    cols = (
        "id, deck, state, step, stability, difficulty, due, last_review, reps, lapses, leech, "
        "content_hash, changed, removed"
    )
    for batch in _batches(cards, BATCH):
        conn.executemany(
            f"INSERT INTO cards ({cols}) VALUES ({', '.join('?' * 14)})",
            (
                (
                    s["id"], s["deck"], s["state"], s["step"], s["stability"], s["difficulty"],
                    s["due"], s["last_review"], s["reps"], s["lapses"], 0, s["content_hash"], 0, 0,
                )
                for s in (c.state for c in batch)
            ),
        )  # fmt: skip
        conn.executemany(
            "INSERT INTO staged (card_id, rating, reviewed_at, duration_ms, prev_state, prev, "
            "next) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                (
                    c.id,
                    rating,
                    fmt(at),
                    dur,
                    None if prev is None else prev["state"],
                    None if prev is None else json.dumps(prev),
                    json.dumps(nxt),
                )
                for c in batch
                for at, rating, dur, prev, nxt in c.reviews
            ),
        )
    # the log is in time order, as a real one is (ties in the order generated)
    conn.execute(
        "INSERT INTO reviews (card_id, rating, reviewed_at, duration_ms, prev_state, prev, next) "
        "SELECT card_id, rating, reviewed_at, duration_ms, prev_state, prev, next FROM staged "
        "ORDER BY reviewed_at, n"
    )
    conn.execute("COMMIT")
    conn.execute("DROP TABLE staged")
    conn.close()


def write_anki(cards: Iterable[GenCard], path: Path, now: datetime) -> None:
    """The same cards as an Anki collection with FSRS on: one Basic note per card, the
    card's state (FSRS memory state in card.data) and its revlog. Streamed: notes are added
    in batches, the states and the log wait in a scratch database beside it."""
    from anki.collection import AddNoteRequest, Collection

    path.unlink(missing_ok=True)
    scratch = path.with_name(path.name + ".scratch")
    scratch.unlink(missing_ok=True)
    stash = sqlite3.connect(scratch, isolation_level=None)
    stash.execute("PRAGMA journal_mode = OFF")
    stash.execute("PRAGMA synchronous = OFF")
    stash.execute("CREATE TABLE upd (i INTEGER PRIMARY KEY, due, ivl, reps, lapses, data)")
    stash.execute("CREATE TABLE rev (id, i, ease, ivl, lastIvl, time, type)")
    stash.execute("BEGIN")
    col = Collection(str(path))
    try:
        col.set_config("fsrs", True)
        model = col.models.by_name("Basic")
        deck_ids: dict[str, int] = {}
        today = col.sched.today
        now_s = now.timestamp()
        i = 0
        for batch in _batches(cards, BATCH):
            requests = []
            for c in batch:
                if c.deck not in deck_ids:  # under one parent, studied as one collection
                    deck_ids[c.deck] = col.decks.id(f"bench::{c.deck}")
                note = col.new_note(model)
                note["Front"] = c.prompt
                note["Back"] = c.answer + "<br>" + c.explain
                note.tags = list(c.tags)
                requests.append(AddNoteRequest(note=note, deck_id=deck_ids[c.deck]))
            col.add_notes(requests)
            updates, revlog = [], []
            for c in batch:
                s = c.state
                due_dt = datetime.fromisoformat(s["due"])
                last_dt = datetime.fromisoformat(s["last_review"])
                ivl = max(1, round((due_dt - last_dt).total_seconds() / 86400))
                due_day = today + int((due_dt.timestamp() - now_s) // 86400)
                data = json.dumps(
                    {
                        "s": s["stability"],
                        "d": s["difficulty"],
                        "dr": 0.9,
                        "lrt": int(last_dt.timestamp()),
                    }
                )
                updates.append((i, due_day, ivl, len(c.reviews), s["lapses"], data))
                last_ivl = 0
                for at, rating, dur, prev, nxt in c.reviews:
                    n_ivl = max(1, round(nxt["stability"]))
                    revlog.append(
                        (int(at.timestamp() * 1000), i, rating, n_ivl, last_ivl, dur,
                         0 if prev is None else 1)
                    )  # fmt: skip
                    last_ivl = n_ivl
                i += 1
            stash.executemany("INSERT INTO upd VALUES (?, ?, ?, ?, ?, ?)", updates)
            stash.executemany("INSERT INTO rev VALUES (?, ?, ?, ?, ?, ?, ?)", revlog)
        col.decks.select(col.decks.id("bench"))
    finally:
        col.close()
        stash.execute("COMMIT")
        stash.close()
    # Anki's DB proxy commits row by row (minutes at 100k): write the states and the log
    # straight into the closed collection's SQLite file, in one transaction; the i-th card
    # generated is the i-th card by note id (notes were added in that order)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("ATTACH DATABASE ? AS st", (str(scratch),))
        conn.execute("BEGIN")
        conn.execute(
            "CREATE TEMP TABLE m AS SELECT row_number() OVER (ORDER BY nid, id) - 1 AS i, "
            "id FROM cards"
        )
        conn.execute("CREATE UNIQUE INDEX temp.m_i ON m (i)")
        conn.execute(
            "UPDATE cards SET type = 2, queue = 2, due = u.due, ivl = u.ivl, factor = 2500, "
            "reps = u.reps, lapses = u.lapses, data = u.data "
            "FROM (SELECT m.id AS cid, s.* FROM st.upd s JOIN m ON m.i = s.i) AS u "
            "WHERE cards.id = u.cid"
        )
        conn.execute(
            "INSERT INTO revlog (id, cid, usn, ease, ivl, lastIvl, factor, time, type) "
            "SELECT r.id, m.id, -1, r.ease, r.ivl, r.lastIvl, 2500, r.time, r.type "
            "FROM st.rev r JOIN m ON m.i = r.i ORDER BY r.rowid"
        )
        conn.execute("COMMIT")
        conn.execute("DETACH DATABASE st")
    finally:
        conn.close()
        scratch.unlink(missing_ok=True)


def build(out: Path, n_cards: int, reviews_per_card: int, *, anki: bool = True, log=print) -> dict:
    """Build (or reuse from ``out``) the decks, the v3 prep database and the Anki collection
    of one size. Returns the manifest: paths, sizes, ``now`` of the build."""
    folder = out / f"{n_cards}x{reviews_per_card}"
    manifest_path = folder / "manifest.json"
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
        if manifest.get("version") == GENERATOR_VERSION and (manifest["anki"] or not anki):
            return manifest
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.now(UTC)
    log(f"  generating {n_cards:,} cards x {reviews_per_card} reviews in {folder} ...")
    # streamed: each writer takes the cards from its own run of the (seeded) generator, so
    # that 1M cards x 10 reviews never sit in memory at once (they took ~10 GB)
    write_decks(generate(n_cards, reviews_per_card, now), folder / "decks")
    write_prep_v3(generate(n_cards, reviews_per_card, now), folder / "prep-v3.db")
    anki_path = None
    if anki:
        anki_path = folder / "collection.anki2"
        write_anki(generate(n_cards, reviews_per_card, now), anki_path, now)
    manifest = {
        "version": GENERATOR_VERSION,
        "cards": n_cards,
        "reviews": n_cards * reviews_per_card,
        "now": fmt(now),
        "decks": str(folder / "decks"),
        "prep_v3": str(folder / "prep-v3.db"),
        "anki": str(anki_path) if anki_path else None,
    }
    manifest_path.write_text(json.dumps(manifest, indent=2))
    return manifest
