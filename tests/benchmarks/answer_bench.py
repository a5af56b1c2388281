"""One answer -> next card, in process, taken apart (issue 26): the quick loop beside
anki_bench.py's full run.

    python tests/benchmarks/answer_bench.py --coll bench-out/100000x10 --work bench-work
        [--answers 60] [--rounds 3] [--profile]

The first run copies the collection's prep database into the work folder and opens it once
(migrating it and filling the deck cache: ~1 min at 100k cards); later runs start from that
copy (``base-vN.db``, N the schema version), so each round costs seconds. Each round rates
Good and fetches the next card (and its four previewed intervals) ``--answers`` times, in
interleaved pairs with Anki's engine on a copy of its collection (limits raised, both syncing
every commit), and prints both medians and the ratio.

``--split`` also prints, for one more round, each engine's user and system CPU and the time
it waited (wall less CPU) an answer. ``--profile`` also prints, for one more round of answers on prep alone: every SQL statement
of one answer with its time (sqlite3's trace callback), the WAL pages written per answer
(autocheckpoint off for the count) and the b-tree each page belongs to (``dbstat``; a page
the answer allocated shows as new), and where the Python time went (cProfile, top entries);
then Anki's WAL pages an answer and their b-trees, on its own copy (anki_pages).
Nothing asserts: read the numbers (tests/test_answer_cost.py holds the statement count).
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import os
import pstats
import shutil
import sqlite3
import statistics
import struct
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import anki_bench  # noqa: E402
from anki_bench import RAISED, answer_pairs, checkpoint  # noqa: E402


def base_db(coll: Path, work: Path, decks: str) -> Path:
    """A migrated, cache-filled copy of the collection's prep database (made once)."""
    from prep.engine.decks import deckcache
    from prep.engine.store import Store
    from prep.engine.store.schema import SCHEMA_VERSION

    base = work / f"base-v{SCHEMA_VERSION}.db"
    if base.exists():
        return base
    older = sorted(work.glob("base-v*.db"))
    tmp = work / "base.tmp.db"
    shutil.copyfile(older[-1] if older else coll / "prep-v3.db", tmp)
    t = time.perf_counter()
    with Store.open(tmp) as store:
        deckcache.load(store, [Path(decks)])
    checkpoint(tmp)
    print(f"made {base.name} in {time.perf_counter() - t:.1f} s", flush=True)
    tmp.rename(base)
    return base


def fresh_copy(src: Path, dst: Path) -> None:
    for extra in ("-wal", "-shm", "-journal"):
        Path(f"{dst}{extra}").unlink(missing_ok=True)
    shutil.copyfile(src, dst)


def _wal_pages(wal: Path, start: int, page: int) -> list[int]:
    """The page numbers of the WAL frames written from byte ``start`` on (a frame: a 24-byte
    header whose first 4 bytes are the page number, then the page)."""
    data = wal.read_bytes()
    start = max(start, 32)  # (the WAL's own header)
    return [
        struct.unpack(">I", data[off : off + 4])[0]
        for off in range(start, len(data) - 23, page + 24)
    ]


def _statements(trace: list[str]) -> list[str]:
    """The statements run, from sqlite3's trace lines: Python's callback reports a trigger's
    sub-program with its outer statement's text again (so a run of one text is one statement;
    two real runs of the same text back to back would count once) and a table function's
    pragma as an ``-- `` comment."""
    return [
        sql
        for i, sql in enumerate(trace)
        if not sql.startswith("-- ") and (i == 0 or sql != trace[i - 1])
    ]


def anki_pages(anki: Path, n: int) -> None:
    """Anki's side of ``profile``'s page count: the WAL pages one answer writes (its reviewer,
    AnkiReviewer, rating Good; autocheckpoint off for the count) and the b-tree each belongs
    to, so that each page prep writes is argued against what Anki writes. Anki's statements
    run in its Rust core, out of sqlite3's trace callback's reach: not listed."""
    from anki.collection import Collection

    col = Collection(str(anki))
    try:
        anki_bench.raise_limits(col)  # as answer_pairs raises them
        reviewer = anki_bench.AnkiReviewer(col)
        col.db.execute("PRAGMA wal_autocheckpoint = 0")
        col.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page = col.db.scalar("PRAGMA page_size")
        side = sqlite3.connect(f"file:{anki}?mode=ro", uri=True)
        try:
            owner = dict(side.execute("SELECT pageno, name FROM dbstat"))
        finally:
            side.close()
        wal = Path(f"{anki}-wal")
        trees: collections.Counter[str] = collections.Counter()
        frames = []
        for _ in range(n):
            size = wal.stat().st_size if wal.exists() else 0
            if not reviewer.answer():
                break
            frames.append((wal.stat().st_size - size) // (page + 24))
            trees.update(owner.get(pgno, "(new page)") for pgno in _wal_pages(wal, size, page))
        if not frames:
            print("Anki: no card left to answer")
            return
        print(f"Anki: WAL pages per answer: median {statistics.median(frames)} ({page} B a page)")
        for name, count in trees.most_common():
            print(f"  {count / len(frames):5.2f}  {name}")
        col.db.execute("PRAGMA wal_autocheckpoint = 1000")
    finally:
        col.close()


def profile(db: Path, decks: str, n: int) -> None:
    from prep.engine.decks import deckcache
    from prep.engine.store import Store
    from prep.engine.study.session import ReviewSession

    with Store.open(db) as store:
        store.update_settings(review_limit=RAISED, new_per_day=RAISED)
        coll = deckcache.load(store, [Path(decks)])
        session = ReviewSession(store, coll)
        session.preview()
        store.conn.execute("PRAGMA wal_autocheckpoint = 0")
        wal = Path(f"{db}-wal")
        page = store.conn.execute("PRAGMA page_size").fetchone()[0]
        trace: list[tuple[float, str]] = []
        last = [time.perf_counter()]

        def on_sql(sql: str) -> None:  # called as each statement starts
            now = time.perf_counter()
            trace.append((now - last[0], sql))
            last[0] = now

        owner = dict(
            (pgno, name) for name, pgno in store.conn.execute("SELECT name, pageno FROM dbstat")
        )
        trees: collections.Counter[str] = collections.Counter()
        frames, statements, lines = [], [], []
        for i in range(n):
            size = wal.stat().st_size if wal.exists() else 0
            trace.clear()
            last[0] = time.perf_counter()
            store.conn.set_trace_callback(on_sql)
            session.rate(3)
            if session.current is not None:
                session.preview()
            store.conn.set_trace_callback(None)
            lines.append(len(trace))
            statements.append(len(_statements([sql for _, sql in trace])))
            frames.append((wal.stat().st_size - size) // (page + 24))
            trees.update(owner.get(pgno, "(new page)") for pgno in _wal_pages(wal, size, page))
            if i == n // 2:
                shown = list(trace)
        print(
            f"statements per answer: median {statistics.median(statements)} "
            f"(trace lines {statistics.median(lines)}: sqlite3 repeats a statement's text for each "
            "trigger program it runs, and a table function's pragma shows as a comment)"
        )
        print(f"WAL pages per answer: median {statistics.median(frames)} ({page} B a page)")
        for name, count in trees.most_common():  # whose pages they are
            print(f"  {count / n:5.2f}  {name}")
        print("one answer's statements (ms since the one before: Python + the previous one):")
        for dt, sql in shown:
            print(f"  {dt * 1000:7.3f}  {' '.join(sql.split())[:150]}")
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(n):
            session.rate(3)
            if session.current is not None:
                session.preview()
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
        store.conn.execute("PRAGMA wal_autocheckpoint = 1000")


def warm(db: Path, decks: str, anki: Path, n: int) -> None:
    """``n`` answers in each engine before the timing (syncing off: their speed is not the
    point): an upgrade's VACUUM leaves every index page full, so the first answers split the
    pages their entries move to (~10 of v14's 14 WAL pages an answer); a collection in use
    has room in its pages, as Anki's generated one has (~12% of each index leaf free)."""
    from anki.collection import Collection

    from prep.engine.decks import deckcache
    from prep.engine.store import Store
    from prep.engine.study.session import ReviewSession

    with Store.open(db) as store:
        store.update_settings(review_limit=RAISED, new_per_day=RAISED)
        store.conn.execute("PRAGMA synchronous = OFF")
        session = ReviewSession(store, deckcache.load(store, [Path(decks)]))
        for _ in range(n):
            if session.current is None:
                break
            session.rate(3)
    col = Collection(str(anki))
    try:
        col.db.execute("PRAGMA synchronous = OFF")
        anki_bench.raise_limits(col)
        for _ in range(n):
            card = col.sched.getCard()
            if card is None:
                break
            col.sched.answerCard(card, 3)
    finally:
        col.close()


def split(db: Path, decks: str, anki: Path, n: int) -> None:
    """Where an answer's time goes, per engine: user and system CPU (getrusage) and the
    rest of the wall time (waiting: the commit's fsync, the other processes on the cores),
    each engine's ``n`` answers interleaved as answer_pairs times them."""
    import resource

    from anki.collection import Collection

    from prep.engine.decks import deckcache
    from prep.engine.store import Store
    from prep.engine.study.session import ReviewSession

    def now() -> tuple[float, float, float]:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime, r.ru_stime, time.perf_counter()

    spent = {"prep": [0.0, 0.0, 0.0], "Anki": [0.0, 0.0, 0.0]}
    with Store.open(db) as store:
        store.update_settings(review_limit=RAISED, new_per_day=RAISED)
        session = ReviewSession(store, deckcache.load(store, [Path(decks)]))
        session.preview()
        col = Collection(str(anki))
        try:
            anki_bench.raise_limits(col)
            anki = anki_bench.AnkiReviewer(col)
            for _ in range(n):
                if session.current is None or anki.top is None:
                    break
                a = now()
                session.rate(3)
                if session.current is not None:
                    session.preview()
                b = now()
                anki.answer()
                c = now()
                for k in range(3):
                    spent["prep"][k] += b[k] - a[k]
                    spent["Anki"][k] += c[k] - b[k]
        finally:
            col.close()
    for name, (user, system, wall) in spent.items():
        print(
            f"{name}: user {user / n * 1000:.3f} ms, system {system / n * 1000:.3f} ms, "
            f"waiting {(wall - user - system) / n * 1000:.3f} ms, wall {wall / n * 1000:.3f} ms "
            "an answer (means)"
        )


def cpu_pairs(db: Path, decks: str, anki: Path, n: int) -> tuple[float, float | None]:
    """answer_pairs timed in CPU seconds of this process (Anki's engine runs in it too): each
    engine's own work, without the wait for the disk, which on a shared machine swings by
    more than either engine's work."""
    wall = anki_bench.time.perf_counter
    anki_bench.time.perf_counter = time.process_time  # type: ignore[assignment]
    try:
        return answer_pairs(db, decks, anki, n)
    finally:
        anki_bench.time.perf_counter = wall  # type: ignore[assignment]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--coll", type=Path, required=True, help="gencoll's folder (NxR)")
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--answers", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--warm", type=int, default=0, help="answers in each engine before timing")
    ap.add_argument("--cpu", action="store_true", help="CPU time, not wall (no disk wait)")
    ap.add_argument(
        "--split", action="store_true", help="also: user, system and waiting time an answer"
    )
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    decks = str(args.coll / "decks")
    base = base_db(args.coll, args.work, decks)
    db, anki = args.work / "answer.db", args.work / "answer.anki2"
    print(f"load average {os.getloadavg()[0]:.2f}", flush=True)
    for r in range(args.rounds):
        fresh_copy(base, db)
        fresh_copy(args.coll / "collection.anki2", anki)
        if args.warm:
            warm(db, decks, anki, args.warm)
        p, a = (cpu_pairs if args.cpu else answer_pairs)(db, decks, anki, args.answers)
        assert a is not None
        print(
            f"round {r + 1}: prep {p * 1000:.2f} ms, Anki {a * 1000:.2f} ms = {p / a:.2f}x "
            f"(load {os.getloadavg()[0]:.2f})",
            flush=True,
        )
    if args.split:
        fresh_copy(base, db)
        fresh_copy(args.coll / "collection.anki2", anki)
        if args.warm:
            warm(db, decks, anki, args.warm)
        split(db, decks, anki, args.answers)
    if args.profile:
        fresh_copy(base, db)
        fresh_copy(args.coll / "collection.anki2", anki)
        if args.warm:
            warm(db, decks, anki, args.warm)
        profile(db, decks, args.answers)
        anki_pages(anki, args.answers)
    for path in (db, anki):
        for extra in ("", "-wal", "-shm"):
            Path(f"{path}{extra}").unlink(missing_ok=True)
    sqlite3.connect(":memory:").close()


if __name__ == "__main__":
    main()
