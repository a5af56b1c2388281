"""Two (here four) terminals rating the same cards of one database at once.

Before the fix, `ReviewSession.rate` read the card's state outside its write transaction: two
sessions could both read state S, both write a review from S, and the card got two "first"
reviews and `reps` below its number of reviews. The invariant, through the store's own API:
every card's reps equals its number of reviews, and every review's prev is the previous
review's next (the first review's prev is empty).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from prep.engine.store import Store

RATER = """
import sys, time
from pathlib import Path
from prep.engine.decks.deckcache import load_collection
from prep.engine.study.session import ReviewSession
from prep.engine.store import Store

db, decks, start, rounds = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
coll = load_collection([Path(decks)], include_bundled=False)
ids = [c.id for c in coll.cards]
with Store.open(db) as store:
    sessions = [
        ReviewSession(store, coll, queue=ids, requeue=False) for _ in range(rounds)
    ]
    while time.time() < start:  # every process starts rating at the same moment
        time.sleep(0.001)
    for session in sessions:
        for i, _ in enumerate(ids):
            session.rate(1 + i % 4, duration_ms=1)
"""

SCHEDULE = ("state", "step", "stability", "difficulty", "due", "last_review", "reps", "lapses")


def schedule(state) -> tuple:  # noqa: ANN001 - a CardState
    return tuple(getattr(state, k) for k in SCHEDULE)


def test_four_concurrent_sessions_keep_the_review_chain(
    tmp_path: Path, small_deck_dir: Path
) -> None:
    db = tmp_path / "shared.db"
    Store.open(db).close()  # created (and migrated) once, before the race
    start = time.time() + 4.0  # time for four interpreters to import and build their queues
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RATER, str(db), str(small_deck_dir), str(start), "8"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-2000:]
    with Store.open(db) as store:
        total = 0
        for card_id, state in store.cards().items():
            reviews = store.reviews(card_id=card_id)
            total += len(reviews)
            assert state.reps == len(reviews), card_id
            assert reviews[0].prev is None, f"{card_id}: two first reviews"
            for before, after in zip(reviews, reviews[1:], strict=False):
                assert after.prev is not None, f"{card_id}: a second first review"
                assert schedule(after.prev) == schedule(before.next), card_id
            assert schedule(reviews[-1].next) == schedule(state)
        assert total == 4 * 8 * 4  # every rating of every process is there
