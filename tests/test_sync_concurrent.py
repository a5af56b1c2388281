"""Two machines syncing through one folder at the same moment, over and over, while both rate:
no entry is lost and both end with the same reviews (real processes, not threads)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from prep.engine.store import Store
from prep.engine.sync.run import sync
from tests.test_sync import view

ROOT = Path(__file__).resolve().parents[1]

# one machine: rate a card, undo now and then, mark now and then, sync; over and over. It
# prints the reviews it made that it did not undo, as "device:seq" lines.
WORKER = r"""
import random, sys, time
from datetime import timedelta
from pathlib import Path
from prep.engine.store import Mark, Store, devices
from prep.engine.study.scheduler import CardState, Scheduler
from prep.engine.sync.run import sync
from prep.engine.timeutil import utcnow

db, folder, seed, rounds, go = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), Path(sys.argv[5])
rng = random.Random(seed)
kept = []
with Store.open(db) as store:
    me = devices.device_id(store.conn)
    while not go.exists():
        time.sleep(0.005)
    for i in range(rounds):
        cid = f"c{rng.randint(0, 5)}"
        sched = Scheduler(store.settings())
        rating = rng.randint(1, 4)
        def decide(prev):
            now = utcnow()
            at = now if prev.last_review is None else max(now, prev.last_review + timedelta.resolution)
            return sched.review(prev, rating, at, store.next_review_key()).state
        rid = store.rate_card(CardState(id=cid), decide, rating, utcnow(), None, sched.replay_params())[0]
        kept.append(rid)
        if rng.random() < 0.2:
            undone = store.undo_last(expected_id=rid)  # (not another process's rating)
            if undone is not None:
                kept.remove(undone.id)
        if rng.random() < 0.2:
            store.set_mark(cid, Mark(flagged=rng.random() < 0.5))
        sync(store, folder)
print("\n".join(f"{me}:{r}" for r in kept))
"""


@pytest.mark.parametrize("twice", [False, True], ids=["two machines", "two preps on one"])
def test_two_machines_syncing_at_once_lose_nothing(tmp_path: Path, twice: bool) -> None:
    """``twice``: machine a runs two preps on its database (the app and `prep sync`), both
    writing a's journal at the same moments: a file name taken meanwhile moves on."""
    folder = tmp_path / "shared"
    folder.mkdir()
    go = tmp_path / "go"
    dbs = [tmp_path / "a.db", tmp_path / "b.db"]
    for db in dbs:  # made (and migrated) before the race starts
        Store.open(db).close()
    runs = [*dbs, dbs[0]] if twice else dbs
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(db), str(folder), str(seed), "25", str(go)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed, db in enumerate(runs)
    ]
    time.sleep(0.5)  # both started and waiting: they go at the same instant
    go.touch()
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (_out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
    made = [line for out, _ in outs for line in out.split()]
    assert len(made) > 30  # both rated (kept ones; a few undone)
    a, b = (Store.open(db) for db in dbs)
    try:
        for s in (a, b, a):
            sync(s, folder)
        assert view(a) == view(b)
        held = Counter(f"{r['device']}:{r['seq']}" for r in a.dump()["reviews"])
        assert all(n == 1 for n in held.values())
        assert set(held) == set(made), "a review made and kept is missing, or one undone is held"
        # every journal file in place is whole (none half-written, none replaced)
        for f in folder.glob("*/*.jsonl"):
            assert f.read_bytes().endswith(b"\n")
        assert not list(folder.glob("*/.tmp-*"))
    finally:
        a.close()
        b.close()
