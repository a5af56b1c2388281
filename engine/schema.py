"""The progress database's tables: their columns (in one order, shared by the SELECTs, the
export and its CSV headers) and the migrations that build them.

Tables (the schema version is in ``meta``):

- ``cards``: scheduling state per card id (a row exists once a card has been reviewed).
- ``reviews``: the append-only log; each row keeps the card's state before (``prev``, NULL
  for a new card) and after (``next``) as JSON, so undo restores the exact previous state.
- ``demo_runs``: every demo run (name, device, passed, seconds, the full report).
- ``meta``: schema version and settings.

Only engine/storage.py uses this module directly; the export reuses the column lists.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

SCHEMA_VERSION = 3

CARD_COLUMNS = (
    "id",  # card id (the slug in the deck file)
    "deck",  # deck name when last synced
    "state",  # fsrs state: 1 learning, 2 review, 3 relearning
    "step",  # learning step index (empty in the review state)
    "stability",  # FSRS stability, days
    "difficulty",  # FSRS difficulty, 1..10
    "due",  # next due time, UTC ISO-8601
    "last_review",  # last review time, UTC ISO-8601
    "reps",  # number of reviews
    "lapses",  # times forgotten after graduating
    "leech",  # 1 when lapses reached the leech threshold
    "content_hash",  # hash of the card text when last synced
    "changed",  # 1 when the card text changed since the last review
    "removed",  # 1 when the card is no longer in any deck
)
REVIEW_COLUMNS = (
    "card_id",
    "reviewed_at",  # UTC ISO-8601
    "rating",  # 1 Again, 2 Hard, 3 Good, 4 Easy
    "duration_ms",  # time from showing the card to rating it
    "prev_state",  # fsrs state before the review (empty for a new card)
    "prev",  # card state before the review, JSON (empty for a new card)
    "next",  # card state after the review, JSON
)
DEMO_RUN_COLUMNS = (
    "name",
    "device",
    "device_name",
    "dtype",
    "scale",
    "seed",
    "passed",  # 1 when every check held
    "seconds",
    "metrics",  # the demo's report, JSON
    "ran_at",  # UTC ISO-8601
)
# Fields that describe a card's schedule (deck, content_hash, changed and removed describe the
# local decks and are reconciled by Store.sync).
SCHEDULE_COLUMNS = (
    "state",
    "step",
    "stability",
    "difficulty",
    "due",
    "last_review",
    "reps",
    "lapses",
    "leech",
)


def _v0_to_v1(db: Any) -> None:
    db["meta"].create({"key": str, "value": str}, pk="key", if_not_exists=True)
    db["cards"].create(
        {
            "id": str,
            "deck": str,
            "state": int,
            "step": int,
            "stability": float,
            "difficulty": float,
            "due": str,
            "last_review": str,
            "reps": int,
            "lapses": int,
            "leech": int,
            "content_hash": str,
            "changed": int,
            "removed": int,
        },
        pk="id",
        not_null={"deck", "state", "reps", "lapses", "leech", "changed", "removed"},
        defaults={"reps": 0, "lapses": 0, "leech": 0, "changed": 0, "removed": 0, "deck": ""},
        if_not_exists=True,
    )
    db["cards"].create_index(["removed", "due"], index_name="cards_removed_due", if_not_exists=True)
    db["reviews"].create(
        {
            "id": int,
            "card_id": str,
            "rating": int,
            "reviewed_at": str,
            "duration_ms": int,
            "prev_state": int,
            "prev": str,
            "next": str,
        },
        pk="id",
        not_null={"card_id", "rating", "reviewed_at", "next"},
        if_not_exists=True,
    )
    db["reviews"].create_index(["card_id"], index_name="reviews_card", if_not_exists=True)
    db["reviews"].create_index(["reviewed_at"], index_name="reviews_at", if_not_exists=True)
    db["demo_runs"].create(
        {
            "id": int,
            "name": str,
            "device": str,
            "device_name": str,
            "dtype": str,
            "scale": str,
            "seed": int,
            "passed": int,
            "seconds": float,
            "metrics": str,
            "ran_at": str,
        },
        pk="id",
        not_null={"name", "device", "passed", "seconds", "ran_at"},
        if_not_exists=True,
    )
    db["demo_runs"].create_index(["name"], index_name="demo_runs_name", if_not_exists=True)


def _v1_to_v2(db: Any) -> None:
    # true retention counts reviews by the state they were made in: a covering index keeps
    # `prep stats` quick on a log of a million reviews
    db["reviews"].create_index(
        ["prev_state", "reviewed_at", "rating"], index_name="reviews_state_at", if_not_exists=True
    )
    # mastery per deck is a grouped count over live cards
    db["cards"].create_index(
        ["removed", "deck", "stability"], index_name="cards_removed_deck", if_not_exists=True
    )


def _v2_to_v3(db: Any) -> None:
    # the queue asks for due cards by fsrs state (learning steps uncapped, reviews capped),
    # most overdue first: an index range per state instead of a walk over every due card
    db["cards"].create_index(
        ["removed", "state", "due"], index_name="cards_removed_state_due", if_not_exists=True
    )


# MIGRATIONS[v] upgrades a database (a sqlite_utils.Database) from schema v to v + 1; the store
# runs them inside one transaction.
MIGRATIONS: list[Callable[[Any], None]] = [_v0_to_v1, _v1_to_v2, _v2_to_v3]
assert len(MIGRATIONS) == SCHEMA_VERSION
