"""The lookups that must not grow with the collection (issue 15's left-overs), in process.

    python tests/benchmarks/lookups_bench.py [--sizes 10000 100000] [--repeat 5] [--out DIR]

On generated decks of mixed kinds (recall, choice, follow-up chains; 60-second bullets on
some, a demo cited by 1 card in 50), each number is the median of ``--repeat`` runs after a
warm-up (the deck cache filled, as on every start after the first):

- `prep cram`, `prep export --format apkg` and `prep demo --list` (each demo's "cards that
  cite this demo"), in process through the CLI;
- ``home counts``: the home screen's new / learning / due per deck (a collection whose cards
  all have progress: reviews due and learning steps);
- ``first queue``: today's queue on a new collection (no card seen yet).

The floor beside them is opening the store and loading the decks through the cache (what
every command pays before its own work). Nothing here asserts; read the numbers.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import inproc  # noqa: E402 - the median of repeated runs after a warm-up

PER_FILE = 4000  # cards per deck file: under the 2 MB cap on a file
DEMO = "dla"


def _q(s: str) -> str:
    return json.dumps(s)  # a JSON string is a valid YAML flow scalar


def write_decks(folder: Path, n: int) -> None:
    """n cards in files of PER_FILE: a main card (recall or choice; bullets on every other
    one) followed by a chain of 0-3 follow-ups."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    i = 0
    for f in range(-(-n // PER_FILE)):
        deck = f"gen-{f:03d}"
        lines = [f"deck: {deck}", f"title: Generated {deck}", "cards:"]
        parent = None
        for _ in range(min(PER_FILE, n - i)):
            cid = f"g{i:07d}"
            follow = parent is not None and rng.random() < 0.5
            kind = "follow-up" if follow else ("choice" if i % 3 == 0 else "recall")
            lines += [f"  - id: {cid}", f"    kind: {kind}"]
            lines.append(f"    prompt: {_q(f'Question {i} about W_O and head {i % 97}?')}")
            lines.append(f"    answer: {_q(f'Answer {i}: W_O mixes the heads back in.')}")
            if kind == "choice":
                lines += ['    choices: ["mixing", "nothing"]', "    correct: a"]
            if follow:
                lines.append(f"    parent: {parent}")
            elif i % 2 == 0:
                lines.append(f'    bullets: ["bullet one of {i}", "bullet two"]')
            if i % 50 == 0:
                lines.append(f"    demo: [{DEMO}]")
            lines.append(f"    tags: [t{i % 40}]")
            parent = cid if not follow or rng.random() < 0.6 else None
            i += 1
        (folder / f"{deck}.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def seed_progress(db: Path, decks: Path, now: datetime) -> None:
    """Every card reviewed once or more: 40% due now, 3% in a learning step, the rest later."""
    from prep.engine.decks import deckcache
    from prep.engine.store import Store
    from prep.engine.study.scheduler import CardState, State

    rng = random.Random(1)
    with Store.open(db) as store:
        coll = deckcache.load(store, [decks], include_bundled=False)
        with store.transaction():
            for cid, deck, _ in coll.outline():
                r = rng.random()
                learning = r < 0.03
                due = (
                    now - timedelta(days=rng.uniform(0, 30))
                    if r < 0.4
                    else now + timedelta(days=rng.uniform(1, 60))
                )
                store.put_card(
                    CardState(
                        id=cid,
                        deck=deck,
                        state=State.Learning if learning else State.Review,
                        step=0 if learning else None,
                        stability=rng.uniform(1, 50),
                        difficulty=5.0,
                        due=due,
                        last_review=now - timedelta(days=2),
                        reps=3,
                        content_hash=coll.get(cid).content_hash,
                    )
                )


def cli(*args: str) -> None:
    from prep.tui.cli import main

    out = io.StringIO()
    with (
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(io.StringIO()),
        contextlib.suppress(SystemExit),
    ):
        main.main(args=list(args), prog_name="prep", standalone_mode=False)


def measure(n: int, work: Path, repeat: int, skip: tuple[str, ...] = ()) -> dict[str, float]:
    from prep.engine.decks import deckcache
    from prep.engine.store import Store
    from prep.engine.study.session import build_queue
    from prep.tui.app import PrepApp

    decks = work / f"decks-{n}"
    if not decks.exists():
        write_decks(decks, n)
    now = datetime.now(UTC)
    seen_db, new_db = work / f"seen-{n}.db", work / f"new-{n}.db"
    if not seen_db.exists():
        seed_progress(seen_db, decks, now)
    base = ["--questions", str(decks)]
    out: dict[str, float] = {}

    def floor() -> None:
        with Store.open(seen_db) as store:
            deckcache.load(store, [decks])

    out["floor: open + cached load"] = inproc(floor, repeat)
    out["prep cram"] = inproc(lambda: cli("--db", str(seen_db), *base, "cram"), repeat)
    apkg = work / "out.apkg"
    out["prep export apkg"] = inproc(
        lambda: cli("--db", str(seen_db), *base, "export", "--format", "apkg", "-o", str(apkg)),
        repeat,
    )

    if "demo-list" not in skip:
        out["prep demo --list (cited by)"] = inproc(
            lambda: cli("--db", str(seen_db), *base, "demo", "--list", "--json"), repeat
        )

    with Store.open(seen_db) as store:
        coll = deckcache.load(store, [decks])
        app = PrepApp(store=store, collection=coll, clock=lambda: now, demos={})
        out["home counts"] = inproc(app.deck_counts, repeat)

    def first_queue() -> None:
        new_db.unlink(missing_ok=True)
        with Store.open(new_db) as store:
            coll = deckcache.load(store, [decks])
            t = time.perf_counter()
            build_queue(store, coll, now)
            first_queue.took = time.perf_counter() - t  # type: ignore[attr-defined]

    times = []
    for _ in range(repeat + 1):
        first_queue()
        times.append(first_queue.took)  # type: ignore[attr-defined]
    out["first queue (new collection)"] = statistics.median(times[1:])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, help="keep the generated decks and databases here")
    parser.add_argument("--skip", nargs="*", default=(), help="demo-list: leave it out")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.out or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for n in args.sizes:
            results = measure(n, work, args.repeat, tuple(args.skip))
            print(f"{n:,} cards (median of {args.repeat}, seconds)")
            for name, secs in results.items():
                print(f"  {name:32s} {secs * 1000:9.1f} ms")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
