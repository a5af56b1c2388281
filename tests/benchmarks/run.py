"""Benchmarks that print numbers, each beside a floor measured in the same run.

    python tests/benchmarks/run.py [--cards 100000] [--reviews 1000000] [--repeat 7]

Nothing here asserts: timed tests flake on a noisy machine. Read the ratios.
Targets (from the issues): `prep --help` within 1.5x of the `import click` floor; queue
building for 100k cards / 1M reviews under 20 ms; TUI first screen within 2x a minimal
Textual app; TUI rating -> next card under 16 ms with 10k cards.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
PY = sys.executable
PREP = str(Path(PY).with_name("prep"))


def wall(cmd: list[str], repeat: int, env: dict | None = None) -> float:
    """Median wall time of a command, in seconds (one warm-up run first)."""
    subprocess.run(cmd, capture_output=True, env=env, check=False)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(cmd, capture_output=True, env=env, check=False)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def inproc(fn: Callable[[], object], repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def make_large_db(
    path: Path, n_cards: int, n_reviews: int, now: datetime
) -> tuple[list[str], float, float]:
    """A progress database with n_cards card states and n_reviews log rows (the generator of
    anki_bench.py, written as schema v3 and migrated by opening it, as a user's would be).
    Returns the card ids, the seconds the upgrade took, and its floor: reading the v3 log
    and parsing each review's state (JSON), the least any rewrite of it does."""
    sys.path.insert(0, str(HERE))
    import gencoll

    from prep.engine.store import Store

    cards = list(gencoll.generate(n_cards, max(1, n_reviews // n_cards), now))
    gencoll.write_prep_v3(cards, path)
    floor = _read_v3_log(path)
    t = time.perf_counter()
    Store.open(path).close()
    return [c.id for c in cards], time.perf_counter() - t, floor


def _read_v3_log(path: Path) -> float:
    import json
    import sqlite3

    conn = sqlite3.connect(path)
    t = time.perf_counter()
    cur = conn.execute("SELECT card_id, reviewed_at, prev, next FROM reviews ORDER BY id")
    while rows := cur.fetchmany(5000):
        for row in rows:
            json.loads(row[3])
    seconds = time.perf_counter() - t
    conn.close()
    return seconds


def big_collection(ids: list[str], extra_new: int):
    from prep.engine.decks.deck import Card, ParsedDecks
    from prep.engine.decks.deckcache import from_parsed

    coll = ParsedDecks()
    for cid in ids + [f"new-{i:06d}" for i in range(extra_new)]:
        coll.add(Card(id=cid, kind="recall", prompt="p", answer="a", deck=f"deck-{len(coll) % 20}"))
    return from_parsed(coll)


def row(label: str, seconds: float, floor: float | None = None, target: str = "") -> None:
    ratio = f"{seconds / floor:6.2f}x" if floor else " " * 7
    print(f"  {label:<46} {seconds * 1000:9.1f} ms  {ratio}  {target}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cards", type=int, default=100_000)
    ap.add_argument("--reviews", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    now = datetime.now(UTC)
    tmp = Path(tempfile.mkdtemp(prefix="prep-bench-"))
    env = {**os.environ, "PREP_DB": str(tmp / "empty.db")}

    print(f"prep benchmarks on {os.cpu_count()} CPU(s), Python {sys.version.split()[0]}")
    print("\nCommand start-up (median wall time of a fresh process; ratio to the click floor)")
    floor_pass = wall([PY, "-c", "pass"], args.repeat, env)
    floor_click = wall([PY, "-c", "import click"], args.repeat, env)
    row("floor: python -c pass", floor_pass)
    row("floor: python -c 'import click'", floor_click, floor_click)
    row("prep --help", wall([PREP, "--help"], args.repeat, env), floor_click, "target <= 1.5x")
    row("prep check (bundled decks)", wall([PREP, "check"], args.repeat, env), floor_click)
    row("prep stats (empty database)", wall([PREP, "stats"], args.repeat, env), floor_click)

    print(f"\nBuilding a database: {args.cards:,} cards, {args.reviews:,} reviews ...", flush=True)
    t = time.perf_counter()
    big = tmp / "big.db"
    ids, upgrade, floor_up = make_large_db(big, args.cards, args.reviews, now)
    print(f"  built in {time.perf_counter() - t:.1f} s ({big.stat().st_size / 1e6:.0f} MB)")
    from prep.engine.store.schema import SCHEMA_VERSION

    print(
        f"\nIts first open: the schema 3 -> {SCHEMA_VERSION} upgrade (the log rewritten compactly, "
        "one transaction)"
    )
    row("floor: read the v3 log, json.loads each state", floor_up)
    row("Store.open (upgrade, indexes, VACUUM)", upgrade, floor_up)

    from prep.engine.store import Store
    from prep.engine.study.session import build_queue

    coll = big_collection(ids, extra_new=1000)
    with Store.open(big) as store:
        floor_q = inproc(
            lambda: store.conn.execute("SELECT count(*) FROM cards WHERE removed = 0").fetchone(),
            args.repeat,
        )
        q = build_queue(store, coll, now)
        print(
            f"\nQueue building, in process ({len(coll):,} cards in decks; queue: {len(q.due)} due + {len(q.new)} new)"
        )
        row("floor: SELECT count(*) over the cards table", floor_q)
        seen = store.seen_ids()
        row(
            "build_queue (cold: reads seen ids)",
            inproc(lambda: build_queue(store, coll, now), args.repeat),
            floor_q,
            "target < 20 ms",
        )
        row(
            "build_queue (session holds seen ids)",
            inproc(lambda: build_queue(store, coll, now, seen=seen), args.repeat),
            floor_q,
            "target < 20 ms",
        )

    # `prep stats` reconciles with the loaded decks (here: the bundled ones), so after its
    # warm-up run the synthetic cards count as removed; the log is still all there.
    env_big = {**os.environ, "PREP_DB": str(big)}
    print("\nStats on the large database")
    row(
        "prep stats (subprocess)",
        wall([PREP, "stats"], max(3, args.repeat // 2), env_big),
        floor_click,
    )
    from prep.engine.study import stats

    with Store.open(big) as store:
        store.conn.execute("UPDATE cards SET removed = 0")
        row(
            "stats.compute (in process, all cards live)",
            inproc(lambda: stats.compute(store, coll, now), 3),
            floor_q,
        )

    tui = HERE / "tui_bench.py"
    if tui.exists():
        print("\nTerminal app", flush=True)
        subprocess.run([PY, str(tui), "--repeat", str(args.repeat)], check=False)


if __name__ == "__main__":
    main()
