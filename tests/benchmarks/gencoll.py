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
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TextIO

GENERATOR_VERSION = 7  # v7: the Anki collection's rows written by executemany (ids, guids)
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
    """``dt`` as _FMT writes it (isoformat: the same text, faster than strftime)."""
    return None if dt is None else f"{dt.astimezone(UTC).isoformat(timespec='microseconds')[:26]}Z"


def deck_names(n_cards: int) -> list[str]:
    """The decks ``n_cards`` generated cards are dealt into, in turn."""
    return [f"deck-{k:02d}" for k in range(max(N_DECKS, -(-n_cards // CARDS_PER_DECK_FILE)))]


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
    decks = deck_names(n_cards)
    for i in range(n_cards):
        deck = decks[i % len(decks)]
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


def _batches(items: Iterable, n: int) -> Iterator[list]:
    it = iter(items)
    while batch := list(itertools.islice(it, n)):
        yield batch


class DeckWriter:
    """One YAML file per deck, written as the cards stream by (every deck's file open)."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.files: dict[str, TextIO] = {}

    def add(self, batch: list[GenCard]) -> None:
        for c in batch:
            f = self.files.get(c.deck)
            if f is None:
                f = self.files[c.deck] = (self.folder / f"{c.deck}.yaml").open(
                    "w", encoding="utf-8"
                )
                f.write(f"deck: {c.deck}\ntitle: Generated deck {c.deck}\ncards:\n")
            f.write(
                f"  - id: {c.id}\n    kind: recall\n    prompt: {_yaml_str(c.prompt)}\n"
                f"    answer: {_yaml_str(c.answer)}\n    explain: {_yaml_str(c.explain)}\n"
                f"    tags: [{', '.join(c.tags)}]\n"
            )

    def close(self) -> None:
        for f in self.files.values():
            f.close()


_V3_CARD_COLS = (
    "id, deck, state, step, stability, difficulty, due, last_review, reps, lapses, leech, "
    "content_hash, changed, removed"
)
_V3_LOG_INDEXES = [  # built after the log is copied in: one sort each, not 10M B-tree inserts
    s.strip()
    for s in SCHEMA_V3.split(";")
    if s.strip().startswith("CREATE INDEX") and '"reviews"' in s
]


class PrepV3Writer:
    """A schema-v3 prep database holding the cards' states and histories. Streamed: the
    reviews wait in a temporary table (on disk) and are copied into the log in time order;
    the log's indexes are built after (the same DDL as SCHEMA_V3's)."""

    def __init__(self, path: Path) -> None:
        path.unlink(missing_ok=True)
        self.conn = conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("PRAGMA journal_mode = OFF")  # a fresh file: a crash means a rebuild
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("PRAGMA cache_size = -262144")  # 256 MiB
        conn.execute("PRAGMA temp_store = FILE")
        conn.executescript(SCHEMA_V3)
        conn.execute("BEGIN")
        for ddl in _V3_LOG_INDEXES:
            conn.execute(f"DROP INDEX {ddl.split()[2]}")
        conn.execute(
            "CREATE TEMP TABLE staged (n INTEGER PRIMARY KEY, card_id, rating, reviewed_at, "
            "duration_ms, prev_state, prev, next)"
        )

    def add(self, batch: list[GenCard]) -> None:
        conn = self.conn
        conn.executemany(
            f"INSERT INTO cards ({_V3_CARD_COLS}) VALUES ({', '.join('?' * 14)})",
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
            (row for c in batch for row in self._log_rows(c)),
        )

    @staticmethod
    def _log_rows(c: GenCard) -> Iterator[tuple]:
        prev_json = None  # a review's "prev" is the review before's "next": encoded once
        for at, rating, dur, prev, nxt in c.reviews:
            next_json = json.dumps(nxt)
            yield (
                c.id,
                rating,
                fmt(at),
                dur,
                None if prev is None else prev["state"],
                prev_json,
                next_json,
            )
            prev_json = next_json

    def close(self) -> None:
        conn = self.conn
        # the log is in time order, as a real one is (ties in the order generated)
        conn.execute(
            "INSERT INTO reviews (card_id, rating, reviewed_at, duration_ms, prev_state, prev, "
            "next) SELECT card_id, rating, reviewed_at, duration_ms, prev_state, prev, next "
            "FROM staged ORDER BY reviewed_at, n"
        )
        conn.execute("DROP TABLE staged")
        for ddl in _V3_LOG_INDEXES:
            conn.execute(ddl)
        conn.execute("COMMIT")
        conn.close()


def _guid(card_id: str) -> str:
    """A stable note guid (Anki draws a random one; a build is reproducible)."""
    return hashlib.sha1(card_id.encode()).hexdigest()[:10]


class AnkiWriter:
    """The same cards as an Anki collection with FSRS on: one Basic note per card, the card's
    state (FSRS memory state in card.data) and its revlog.

    Anki creates the collection (schema, the Basic notetype, FSRS on, the decks); the notes,
    cards and log rows are then written into its SQLite file with executemany (through
    Anki's Python API, 1M notes took most of an hour), and Anki opens the result and
    schedules from it on close. Rows are what Anki writes for an added note (usn -1, the
    sort field and checksum of the front); tests/test_gencoll.py holds a small build against
    one made through the API, and against Anki's database check."""

    def __init__(self, path: Path, now: datetime, n_cards: int) -> None:
        from anki.collection import Collection

        self.path = path
        path.unlink(missing_ok=True)
        col = Collection(str(path))
        try:
            col.set_config("fsrs", True)
            model = col.models.by_name("Basic")
            assert model is not None
            self.mid = model["id"]
            # under one parent, studied as one collection
            self.deck_ids = {d: col.decks.id(f"bench::{d}") for d in deck_names(n_cards)}
            col.decks.select(col.decks.id("bench"))
            self.today = col.sched.today
        finally:
            col.close()
        self.now_s = now.timestamp()
        self.mod = int(self.now_s)
        # note and card ids are milliseconds, as Anki's: the i-th card's the i-th before now
        self.next_id = int(self.now_s * 1000) - n_cards
        self.conn = conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("PRAGMA journal_mode = OFF")
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("PRAGMA cache_size = -262144")
        conn.execute("PRAGMA temp_store = FILE")
        conn.execute("BEGIN")
        conn.execute("CREATE TEMP TABLE rev (id, cid, ease, ivl, lastIvl, time, type)")

    def add(self, batch: list[GenCard]) -> None:
        notes, cards, revlog = [], [], []
        for c in batch:
            nid = self.next_id
            self.next_id += 1
            csum = int(hashlib.sha1(c.prompt.encode()).hexdigest()[:8], 16)
            flds = f"{c.prompt}\x1f{c.answer}<br>{c.explain}"
            tags = f" {' '.join(c.tags)} "
            notes.append((nid, _guid(c.id), self.mid, self.mod, tags, flds, c.prompt, csum))
            s = c.state
            due_dt = datetime.fromisoformat(s["due"])
            last_dt = datetime.fromisoformat(s["last_review"])
            ivl = max(1, round((due_dt - last_dt).total_seconds() / 86400))
            due_day = self.today + int((due_dt.timestamp() - self.now_s) // 86400)
            data = json.dumps(
                {
                    "s": s["stability"],
                    "d": s["difficulty"],
                    "dr": 0.9,
                    "lrt": int(last_dt.timestamp()),
                }
            )
            cards.append(
                (nid, nid, self.deck_ids[c.deck], self.mod, due_day, ivl, len(c.reviews), s["lapses"], data)
            )  # fmt: skip
            last_ivl = 0
            for at, rating, dur, prev, nxt in c.reviews:
                n_ivl = max(1, round(nxt["stability"]))
                revlog.append(
                    (int(at.timestamp() * 1000), nid, rating, n_ivl, last_ivl, dur, 0 if prev is None else 1)
                )  # fmt: skip
                last_ivl = n_ivl
        conn = self.conn
        conn.executemany(
            "INSERT INTO notes (id, guid, mid, mod, usn, tags, flds, sfld, csum, flags, data) "
            "VALUES (?, ?, ?, ?, -1, ?, ?, ?, ?, 0, '')",
            notes,
        )
        conn.executemany(
            "INSERT INTO cards (id, nid, did, ord, mod, usn, type, queue, due, ivl, factor, reps, "
            "lapses, left, odue, odid, flags, data) "
            "VALUES (?, ?, ?, 0, ?, -1, 2, 2, ?, ?, 2500, ?, ?, 0, 0, 0, 0, ?)",
            cards,
        )
        conn.executemany("INSERT INTO rev VALUES (?, ?, ?, ?, ?, ?, ?)", revlog)

    def close(self) -> None:
        from anki.collection import Collection

        conn = self.conn
        conn.execute(  # in id (time) order: appended, not 10M inserts all over the table
            "INSERT INTO revlog (id, cid, usn, ease, ivl, lastIvl, factor, time, type) "
            "SELECT id, cid, -1, ease, ivl, lastIvl, 2500, time, type FROM rev ORDER BY id"
        )
        conn.execute("DROP TABLE rev")
        conn.execute("COMMIT")
        conn.close()
        col = Collection(str(self.path))  # Anki reads it back: a card is scheduled from it
        try:
            if col.card_count() and col.sched.getCard() is None:
                raise RuntimeError(f"{self.path}: Anki schedules no card from the build")
        finally:
            col.close()


def _feed(cards: Iterable[GenCard], writer) -> None:
    try:
        for batch in _batches(cards, BATCH):
            writer.add(batch)
    finally:
        writer.close()


def write_decks(cards: Iterable[GenCard], folder: Path) -> None:
    _feed(cards, DeckWriter(folder))


def write_prep_v3(cards: Iterable[GenCard], path: Path) -> None:
    _feed(cards, PrepV3Writer(path))


def write_anki(cards: Iterable[GenCard], path: Path, now: datetime, n_cards: int) -> None:
    _feed(cards, AnkiWriter(path, now, n_cards))


def build(out: Path, n_cards: int, reviews_per_card: int, *, anki: bool = True, log=print) -> dict:
    """Build (or reuse from ``out``) the decks, the v3 prep database and the Anki collection
    of one size. Returns the manifest: paths, sizes, ``now``, seconds per phase."""
    folder = out / f"{n_cards}x{reviews_per_card}"
    manifest_path = folder / "manifest.json"
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
        if manifest.get("version") == GENERATOR_VERSION and (manifest["anki"] or not anki):
            return manifest
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.now(UTC)
    log(f"  generating {n_cards:,} cards x {reviews_per_card} reviews in {folder} ...")
    anki_path = folder / "collection.anki2" if anki else None
    # one pass of the (seeded) generator, batch by batch, feeds every writer: 1M cards x 10
    # reviews never sit in memory at once (they took ~10 GB)
    phases = dict.fromkeys(("generate", "decks", "prep v3", "anki"), 0.0)
    t = time.perf_counter()
    writers: dict[str, DeckWriter | PrepV3Writer | AnkiWriter] = {
        "decks": DeckWriter(folder / "decks"),
        "prep v3": PrepV3Writer(folder / "prep-v3.db"),
    }
    if anki_path is not None:
        writers["anki"] = AnkiWriter(anki_path, now, n_cards)
    phases["anki"] = time.perf_counter() - t
    batches = _batches(generate(n_cards, reviews_per_card, now), BATCH)
    done = 0
    while True:
        t = time.perf_counter()
        batch = next(batches, None)
        phases["generate"] += time.perf_counter() - t
        if batch is None:
            break
        for name, writer in writers.items():
            t = time.perf_counter()
            writer.add(batch)
            phases[name] += time.perf_counter() - t
        done += len(batch)
        if done % 100_000 == 0:
            log(f"    {done:,} cards  ({', '.join(f'{k} {v:.0f} s' for k, v in phases.items())})")
    for name, writer in writers.items():  # sorts the logs, builds their indexes
        t = time.perf_counter()
        writer.close()
        phases[name] += time.perf_counter() - t
    phases = {k: round(v, 1) for k, v in phases.items()}
    log(f"    built: {phases} s")
    manifest = {
        "version": GENERATOR_VERSION,
        "cards": n_cards,
        "reviews": n_cards * reviews_per_card,
        "now": fmt(now),
        "decks": str(folder / "decks"),
        "prep_v3": str(folder / "prep-v3.db"),
        "anki": str(anki_path) if anki_path else None,
        "build_seconds": phases,
    }
    manifest_path.write_text(json.dumps(manifest, indent=2))
    return manifest
