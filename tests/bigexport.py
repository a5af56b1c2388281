"""A large, valid JSON export written row by row (for the import's memory tests and the
benchmark in the README's promises): ``cards`` cards of the small test deck's shape, each
with ``per_card`` reviews (a new id and time each), about 800 bytes a review."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
_STATE = {
    "deck": "small",
    "state": 2,
    "step": None,
    "stability": 13.826903694354568,
    "difficulty": 2.111214235785395,
    "due": "2026-03-19T09:00:00.000000Z",
    "last_review": "2026-03-05T09:00:00.000000Z",
    "reps": 2,
    "lapses": 0,
    "content_hash": "83453b18145cecff",
}
_PARAMS = {"w": None}  # replaced by a real replay-params object in write_big_export


def _time(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def write_big_export(path: Path, cards: int, per_card: int, params: dict) -> int:
    """Write the export; returns the number of reviews."""
    state = {"leech": False, "changed": False, "removed": False, **_STATE}
    with open(path, "w", encoding="utf-8") as out:
        out.write('{"format": "prep-export", "version": 1, "exported_at": ')
        out.write(f'"{_time(T0)}", "settings": null, "cards": [\n')
        for k in range(cards):
            row = {"id": f"c{k}", **_STATE, "leech": 0, "changed": 0, "removed": 0}
            out.write(("," if k else "") + json.dumps(row) + "\n")
        out.write('], "reviews": [\n')
        n = 0
        for k in range(cards):
            prev = {**state, "id": f"c{k}", "state": 1, "step": 1}
            nxt = {**state, "id": f"c{k}"}
            for j in range(per_card):
                review = {
                    "card_id": f"c{k}",
                    "reviewed_at": _time(T0 + timedelta(minutes=j)),
                    "rating": 3,
                    "duration_ms": 500,
                    "prev_state": 1,
                    "prev": prev,
                    "next": nxt,
                    "device": "11c89d92ab42f651",
                    "seq": n + 1,
                    "params": "p",
                }
                out.write(("," if n else "") + json.dumps(review) + "\n")
                n += 1
        out.write(f'], "params": {{"p": {json.dumps(params)}}}, "demo_runs": [], "marks": []}}\n')
    return n
