"""The first open of a collection: filling the deck cache from generated decks.

    python tests/benchmarks/fill_bench.py [--cards 100000] [--million] [--runs 2]

Each run is a fresh process filling a fresh database from the same decks (gencoll's, 4,000
cards a file), as `prep stats` does the first time it sees them. Printed per size: wall
seconds, CPU seconds (the process and its parse workers; then the filling process's own, the
fill's critical path at 1M, and its peak memory) and the load average (the machine is shared:
CPU seconds move less with the load than wall seconds). Beside it, floors measured in
the same run, each in this one process: reading the same bytes (wall), the YAML alone through
prep's fast reader (engine/decks/fastyaml.py: the subset decks are written in, line numbers
kept, no checks, no database) and through PyYAML's C loader (libyaml, no line numbers) — what
the fill cost before the fast reader was mostly the latter — and the whole parse a worker
does, on one core (engine/decks/fastdeck.py's one pass: YAML, checks and the cache's rows).
The fill parses on every core, so its wall time can go below these floors. Goal (issue 26): 100k cards ≤ 3 s,
1M ≤ 30 s on a quiet machine. Nothing asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

FILL = """
import json, resource, sys, time
from pathlib import Path
from prep.engine.decks import deckcache
from prep.engine.store import Store
start, cpu = time.perf_counter(), time.process_time()
store = Store.open(Path(sys.argv[1]))
n = len(deckcache.load(store, [Path(sys.argv[2])], include_bundled=False))
wall = time.perf_counter() - start
children = resource.getrusage(resource.RUSAGE_CHILDREN)
parent = time.process_time() - cpu
workers = children.ru_utime + children.ru_stime
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"cards": n, "wall": wall, "cpu": parent + workers, "parent": parent,
                  "peak_mb": peak}))
"""


def decks_for(n_cards: int, root: Path) -> Path:
    import gencoll

    folder = root / f"decks-{n_cards}"
    if not (folder / ".done").exists():
        print(f"  generating {n_cards:,} cards ...", flush=True)
        cards = list(gencoll.generate(n_cards, 1, datetime.now(UTC)))
        gencoll.write_decks(cards, folder)
        (folder / ".done").write_text("")
    return folder


def fill_once(decks: Path, tmp: Path) -> dict:
    db = tmp / "fill.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, "-c", FILL, str(db), str(decks)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def c_loader_floor(decks: Path) -> float:
    """CPU seconds for yaml.load(CSafeLoader) over every file, in this process."""
    import gc

    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    gc.disable()
    cpu = time.process_time()
    for path in sorted(decks.glob("*.yaml")):
        yaml.load(path.read_text(encoding="utf-8"), Loader=loader)
    gc.enable()
    return time.process_time() - cpu


def read_floor(decks: Path) -> float:
    """Wall seconds to read every deck file's bytes, in this process."""
    start = time.perf_counter()
    for path in sorted(decks.glob("*.yaml")):
        path.read_bytes()
    return time.perf_counter() - start


def fast_reader_floor(decks: Path) -> float:
    """CPU seconds for fastyaml.fast_load over every file, in this process."""
    import gc

    from prep.engine.decks.fastyaml import fast_load

    gc.disable()
    cpu = time.process_time()
    for path in sorted(decks.glob("*.yaml")):
        fast_load(path.read_text(encoding="utf-8"))
    gc.enable()
    return time.process_time() - cpu


def one_pass_floor(decks: Path) -> float:
    """CPU seconds for fastdeck's one pass (parse, checks, the cache's rows; no database) over
    every file, in this process: what the fill's workers do, on one core."""
    import gc

    from prep.engine.decks.fastdeck import parse_rows

    gc.disable()
    cpu = time.process_time()
    for path in sorted(decks.glob("*.yaml")):
        parse_rows(path.read_text(encoding="utf-8"), str(path), path.stem)
    gc.enable()
    return time.process_time() - cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cards", type=int, default=100_000)
    ap.add_argument("--million", action="store_true", help="also 1,000,000 cards")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--out", type=Path, help="keep the generated decks here")
    args = ap.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="prep-fill-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    sizes = [args.cards] + ([1_000_000] if args.million else [])
    print("deck cache fill (first open): fresh process, fresh database")
    print(
        f"{'cards':>10}  {'wall s':>7}  {'CPU s':>6}  {'parent':>6}  {'peak MB':>7}  {'load':>5}"
        "   floors: "
        f"{'read s':>6}  {'one pass CPU s':>14}  {'fast YAML CPU s':>15}  {'C loader CPU s':>14}"
    )
    for n in sizes:
        decks = decks_for(n, root)
        read, fast, floor = read_floor(decks), fast_reader_floor(decks), c_loader_floor(decks)
        one = one_pass_floor(decks)
        for _ in range(args.runs):
            r = fill_once(decks, root)
            load = os.getloadavg()[0]
            print(
                f"{r['cards']:>10,}  {r['wall']:>7.2f}  {r['cpu']:>6.2f}  {r['parent']:>6.2f}  "
                f"{r['peak_mb']:>7.0f}  {load:>5.1f}           "
                f"{read:>6.2f}  {one:>14.2f}  {fast:>15.2f}  {floor:>14.2f}"
            )


if __name__ == "__main__":
    main()
