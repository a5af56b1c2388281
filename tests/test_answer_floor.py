"""tests/benchmarks/answer_floor.py replays an answer's recorded statements as the floor of
answer -> next card (issue 26). The floor means something only if the replay does the work
the answers did: a replay on a byte copy must leave the same cards and review log."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from prep.engine.store import Store
from prep.engine.study.session import ReviewSession
from tests.conftest import Clock

sys.path.insert(0, str(Path(__file__).parent / "benchmarks"))
try:
    from answer_floor import record, replayer, same_rows
finally:
    sys.path.pop(0)


def test_the_replayed_statements_leave_the_database_the_answers_left(
    tmp_path: Path, small_collection, clock: Clock
) -> None:
    db, copy = tmp_path / "prep.db", tmp_path / "floor.db"
    with Store.open(db) as store:
        session = ReviewSession(store, small_collection, clock=clock, new_limit=10)
        session.preview()
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        shutil.copyfile(db, copy)

        def answer() -> None:
            clock.advance(minutes=11)
            session.rate(3)
            if session.current is not None:
                session.preview()

        answers = record(store, answer, 5)
        assert store.conn.execute("SELECT count(*) FROM revlog").fetchone()[0] == 5
    assert all(any(sql.startswith("INSERT INTO revlog") for sql, _ in a) for a in answers)
    assert not same_rows(db, copy)  # (the copy is from before the answers)
    conn, one = replayer(copy)
    for statements in answers:
        one(statements)
    conn.close()
    assert same_rows(db, copy)
