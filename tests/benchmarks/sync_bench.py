"""`prep sync` cost: a day's reviews into a big history, and the journal's bytes per review.

    python tests/benchmarks/sync_bench.py [--cards 100000] [--reviews 1000000] [--day 300]

Two installations share one history (the second a copy of the first under a new device id);
the first writes its whole history to the folder once; the second studies a day (``--day``
ratings) and syncs; then the first syncs: that last sync is the number the issue asks about
(target: well under a second; it reads and writes only what is new). Also: the journal's
bytes per review beside the database's bytes per review. Nothing asserts; read the numbers.

    python tests/benchmarks/sync_bench.py --devices 50 [--files 20]

Many devices instead: ``--devices`` folders of ``--files`` journal files each (10 reviews a
file), applied once by a fresh database; then the time of a sync with nothing new (every
applied file checked for another version in place: one stat a file, none read), and of one
after a single older file was replaced.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cards", type=int, default=100_000)
    ap.add_argument("--reviews", type=int, default=1_000_000)
    ap.add_argument("--day", type=int, default=300)
    ap.add_argument("--devices", type=int, default=0)
    ap.add_argument("--files", type=int, default=20)
    args = ap.parse_args()
    if args.devices:
        many_devices(args.devices, args.files)
        return
    from run import make_large_db  # tests/benchmarks/run.py

    from prep.engine.store import Store
    from prep.engine.store import devices as local
    from prep.engine.study.scheduler import CardState, Scheduler
    from prep.engine.sync.run import sync

    now = datetime.now(UTC)
    tmp = Path(tempfile.mkdtemp(prefix="prep-sync-bench-"))
    folder = tmp / "shared"
    folder.mkdir()
    big, other = tmp / "big.db", tmp / "other.db"
    print(f"Building {args.cards:,} cards, {args.reviews:,} reviews ...", flush=True)
    ids, _, _ = make_large_db(big, args.cards, args.reviews, now)

    with Store.open(big) as a:
        n = a.count_reviews()
        t = time.perf_counter()
        first = sync(a, folder)
        first_s = time.perf_counter() - t
    assert first.journal is not None
    journal_bytes = first.journal.stat().st_size
    db_bytes = big.stat().st_size
    print(f"\nFirst sync of the whole history ({n:,} reviews): {first_s:.2f} s")
    print(f"  journal: {journal_bytes / n:6.1f} bytes per review ({journal_bytes / 1e6:.0f} MB)")
    print(
        f"  database: {db_bytes / n:6.1f} bytes per review ({db_bytes / 1e6:.0f} MB, cards and indexes included)"
    )
    # a second installation with the same history (a copy made after that sync, as a
    # restored backup is: a new device id, the old one's reviews in the folder already)
    src, dst = sqlite3.connect(big), sqlite3.connect(other)
    src.backup(dst)
    src.close()
    dst.close()
    with Store.open(other) as s, s.transaction():
        local.new_device(s.conn)

    with Store.open(other) as b:
        t = time.perf_counter()
        sync(b, folder)
        print(
            f"The other installation takes it in (all {n:,} already held): {time.perf_counter() - t:.2f} s"
        )
        sched = Scheduler(b.settings())
        day = now + timedelta(days=1)
        for cid in ids[: args.day]:

            def decide(prev: CardState, at=day) -> CardState:
                when = (
                    at
                    if prev.last_review is None
                    else max(at, prev.last_review + timedelta.resolution)
                )
                return sched.review(prev, 3, when, b.next_review_key()).state

            b.rate_card(CardState(id=cid), decide, 3, day, 4000, sched.replay_params())
        t = time.perf_counter()
        sent = sync(b, folder)
        print(
            f"\nA day's sync on the machine that studied ({sent.sent_reviews} reviews sent): {(time.perf_counter() - t) * 1000:.0f} ms"
        )

    with Store.open(big) as a:
        t = time.perf_counter()
        got = sync(a, folder)
        s = time.perf_counter() - t
        print(
            f"A day's sync on the other ({got.summary()}): {s * 1000:.0f} ms   target: well under 1 s"
        )
        t = time.perf_counter()
        sync(a, folder)
        print(f"A sync with nothing new: {(time.perf_counter() - t) * 1000:.0f} ms")


def many_devices(devices: int, per_device: int) -> None:
    import os
    import statistics

    from prep.engine.store import Store
    from prep.engine.study.scheduler import Settings, replay_params
    from prep.engine.sync import journal
    from prep.engine.sync.run import sync

    tmp = Path(tempfile.mkdtemp(prefix="prep-sync-bench-"))
    folder = tmp / "shared"
    params = {"1": replay_params(Settings(), True, 0)}
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    for d in range(devices):
        dev = f"{d:016x}"
        for f in range(per_device):
            entries: list[list] = []
            for k in range(10):
                seq = f * 10 + k + 1
                at = int((t0 + timedelta(days=f, minutes=d * 17 + k)).timestamp() * 1e6)
                entries.append(["r", seq, f"c{d}-{k}", 3, at, 4000, "1"])
            header = {
                "format": journal.FORMAT,
                "version": 2,
                "device": dev,
                "name": f"d{d}",
                "written_at": f"2026-01-{1 + f % 28:02d}T00:00:{d % 60:02d}.000000Z",
                "params": params,
            }
            journal.write(folder / dev, header, entries)
    with Store.open(tmp / "c.db") as c:
        t = time.perf_counter()
        got = sync(c, folder)
        print(
            f"{devices} devices x {per_device} files: the first sync ({got.applied.reviews:,} "
            f"reviews) {time.perf_counter() - t:.2f} s"
        )
        runs = []
        for _ in range(15):
            t = time.perf_counter()
            sync(c, folder)
            runs.append(time.perf_counter() - t)
        print(
            f"A sync with nothing new: median {statistics.median(runs) * 1000:.1f} ms, "
            f"fastest {min(runs) * 1000:.1f} ms of 15"
        )
        victim = folder / f"{devices // 2:016x}" / journal.file_name(per_device // 2)
        data = victim.read_bytes()
        head, rest = data.split(b"\n", 1)
        other = head.replace(b'"written_at": "2026', b'"written_at": "2027', 1) + b"\n" + rest
        for what, version in (("the same file", data), ("another version", other)):
            tmpf = victim.with_name(".replacing")
            tmpf.write_bytes(version)
            os.replace(tmpf, victim)  # put in place (a tool re-delivering, or settling)
            t = time.perf_counter()
            sync(c, folder)
            took = (time.perf_counter() - t) * 1000
            print(f"A sync after {what} of an older file was put in place: {took:.1f} ms")


if __name__ == "__main__":
    main()
