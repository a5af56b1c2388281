"""The SQL floor of answer -> next card (issue 26): what an answer would cost if prep's Python
around its statements cost nothing.

    python tests/benchmarks/answer_floor.py --coll bench-out/100000x10 --work bench-work
        [--answers 400] [--rounds 3]

One real prep session (answer_bench's: limits raised, 200 warm answers in each engine first)
answers ``--answers`` + 20 cards on a copy of the bench database, with its connection wrapped so
every ``execute`` is recorded (statement and parameters). A byte copy of the database as it was
before those answers then replays them: each answer's statements in order, every row fetched,
on a plain sqlite3 connection (WAL, synchronous FULL, as the store opens it), nothing of prep
imported around it. The replayed database is checked equal to the recorded one (cards and
review log), so the floor did the same work. Each replayed answer is interleaved with one Anki
answer (answer_bench's AnkiReviewer) in this process; the first 20 of each are not counted.

It prints the CPU an answer (user + system, getrusage) of the replay and of Anki, and their
ratio. prep's own answer costs the floor plus its Python: for prep to reach 1.0x Anki, its
Python an answer may cost at most (1 - floor/Anki) of Anki's answer. Nothing asserts: read the
numbers (tests/test_answer_floor.py holds that the replay reproduces the database).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sqlite3
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

Statement = tuple[str, Sequence[Any]]


class Recorder:
    """A connection that records what is executed on it (the store calls ``conn.execute``
    for every statement of an answer) and passes everything else through."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self.log: list[Statement] = []

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        self.log.append((sql, params))
        return self._conn.execute(sql, params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def __enter__(self) -> sqlite3.Connection:
        return self._conn.__enter__()

    def __exit__(self, *exc: object) -> Any:
        return self._conn.__exit__(*exc)  # type: ignore[arg-type]


def record(store: Any, answer: Callable[[], object], n: int) -> list[list[Statement]]:
    """``n`` answers, each its list of statements, through a recorder on ``store.conn``."""
    real = store.conn
    rec = Recorder(real)
    store.conn = rec
    try:
        answers = []
        for _ in range(n):
            start = len(rec.log)
            answer()
            answers.append(rec.log[start:])
        return answers
    finally:
        store.conn = real


def replayer(path: Path) -> tuple[sqlite3.Connection, Callable[[list[Statement]], None]]:
    """A plain connection on ``path`` and a function that replays one answer on it."""
    conn = sqlite3.connect(path, isolation_level=None)
    for pragma in ("busy_timeout = 10000", "journal_mode = WAL", "synchronous = FULL"):
        conn.execute(f"PRAGMA {pragma}")

    def one(statements: list[Statement]) -> None:
        for sql, params in statements:
            conn.execute(sql, params).fetchall()

    return conn, one


def same_rows(a: Path, b: Path) -> bool:
    """The cards and the review log of two databases, row for row."""
    rows = []
    for path in (a, b):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            rows.append(
                [
                    conn.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall()
                    for t in ("cards", "revlog")
                ]
            )
        finally:
            conn.close()
    return rows[0] == rows[1]


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def floor_round(coll: Path, work: Path, n: int) -> tuple[float, float, bool]:
    """One round: (replay CPU an answer, Anki CPU an answer, replayed database identical)."""
    import anki_bench
    import answer_bench as ab
    from anki.collection import Collection
    from anki_bench import RAISED

    from prep.engine.decks import deckcache
    from prep.engine.store import Store
    from prep.engine.study.session import ReviewSession

    decks = str(coll / "decks")
    base = ab.base_db(coll, work, decks)
    db, anki, rep = work / "answer.db", work / "answer.anki2", work / "floor.db"
    ab.fresh_copy(base, db)
    ab.fresh_copy(coll / "collection.anki2", anki)
    ab.warm(db, decks, anki, 200)
    with Store.open(db) as store:
        store.update_settings(review_limit=RAISED, new_per_day=RAISED)
        session = ReviewSession(store, deckcache.load(store, [Path(decks)]))
        session.preview()
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        shutil.copyfile(db, rep)

        def answer() -> None:
            session.rate(3)
            if session.current is not None:
                session.preview()

        answers = record(store, answer, n + 20)
    conn, one = replayer(rep)
    col = Collection(str(anki))
    try:
        anki_bench.raise_limits(col)
        reviewer = anki_bench.AnkiReviewer(col)
        spent = [0.0, 0.0]
        for i, statements in enumerate(answers):
            a = cpu()
            one(statements)
            b = cpu()
            reviewer.answer()
            c = cpu()
            if i >= 20:
                spent[0] += b - a
                spent[1] += c - b
    finally:
        col.close()
        conn.close()
    same = same_rows(db, rep)
    for path in (db, anki, rep):
        for extra in ("", "-wal", "-shm"):
            Path(f"{path}{extra}").unlink(missing_ok=True)
    return spent[0] / n, spent[1] / n, same


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--coll", type=Path, required=True, help="gencoll's folder (NxR)")
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--answers", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    for r in range(args.rounds):
        floor, anki, same = floor_round(args.coll, args.work, args.answers)
        print(
            f"round {r + 1}: SQL floor {floor * 1000:.3f} ms, Anki {anki * 1000:.3f} ms CPU an "
            f"answer = {floor / anki:.2f}x; replayed database identical: {'yes' if same else 'NO'} "
            f"(load {os.getloadavg()[0]:.2f})",
            flush=True,
        )


if __name__ == "__main__":
    main()
