"""prep beside Anki's own engine (the `anki` package, Rust behind Python, FSRS on), on the same
generated collections: the same cards, due dates and 10 reviews per card of history.

    python tests/benchmarks/anki_bench.py [--sizes 1000,10000,100000] [--repeat 5] [--million]

Prints medians and prep/Anki ratios for
- cold open to first card: a fresh process until the first card's text is on stdout
  (`prep quiz --plain` with the generated decks vs. Anki opening the collection and
  `sched.getCard()` + rendering the question);
- answer -> next card, in process, in interleaved pairs (rate Good, fetch the next card and
  its four intervals; limits raised, both syncing every commit);
- stats: `prep stats --json` vs. Anki computing its full graphs (`graphs`, whole collection,
  one year), each a fresh process;
- database size (prep's after it has opened, migrated and checkpointed it; Anki's file);
and prep's growth table (to 1M cards with --million: built once, cached under bench-out/).

Nothing asserts: read the ratios. The collections are cached in bench-out/ (gitignored); a
copy of the prep database is opened for each run, so the first (warm-up) open pays any
migration and deck-cache fill, and is reported separately.

Targets (issue 15): cold open at 100k <= 1.0x Anki, at 1M under 5 s; stats at 100k cards /
1M reviews <= 0.5x Anki; database <= 1.5x Anki's at 100k.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import gencoll  # noqa: E402
import pty_bench  # noqa: E402

ROOT = HERE.parent.parent
NO_BYTECODE = False  # --no-bytecode
TUI_REPEAT = 5  # --tui-repeat (0: no TUI timing)
RAISED = 9999  # both engines' daily new and review limits for the answer -> next timing
PY = sys.executable
PREP = str(Path(PY).with_name("prep"))

ANKI_OPEN = """
import sys
from anki.collection import Collection
col = Collection(sys.argv[1])
card = col.sched.getCard()
print("FIRST", card.question()[:60] if card else None, flush=True)
sys.stdin.readline()
col.close()
"""

PREP_MIGRATE = """
import json, sys, time
from prep.engine.store import Store, schema
# each step after the conversion of the log, as it ends: (step, wall s, CPU s) since the start
t0, c0, phases = time.perf_counter(), time.process_time(), []
finished = schema.UpgradeTracker.finished
def mark(self, step):
    finished(self, step)
    phases.append((step, round(time.perf_counter() - t0, 2), round(time.process_time() - c0, 2)))
schema.UpgradeTracker.finished = mark
with Store.open(sys.argv[1]):
    pass
print("PHASES", json.dumps(phases), flush=True)
"""

ANKI_GRAPHS = """
import sys
from anki.collection import Collection
col = Collection(sys.argv[1])
g = col._backend.graphs(search="", days=365)
print("GRAPHS", g.ByteSize(), flush=True)
col.close()
"""


def to_first_card(cmd: list[str], marker: str, env: dict | None = None) -> float:
    """Seconds from process start until a stdout line containing ``marker``; then quits."""
    t = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None and proc.stdin is not None
    elapsed = None
    for line in proc.stdout:
        if marker in line:
            elapsed = time.perf_counter() - t
            break
    try:
        proc.stdin.write("q\n")
        proc.stdin.flush()
    except BrokenPipeError:
        pass
    _, err = proc.communicate()
    if elapsed is None:
        raise RuntimeError(f"{cmd[:3]}...: no line with {marker!r} (stderr: {err.strip()[-300:]})")
    return elapsed


def whole(cmd: list[str], env: dict | None = None) -> float:
    return run_whole(cmd, env)[0]


def run_whole(cmd: list[str], env: dict | None = None) -> tuple[float, str]:
    """Seconds a whole run takes, and its stdout."""
    t = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - t
    if out.returncode != 0:
        raise RuntimeError(f"{cmd[:3]}... exit {out.returncode}: {out.stderr.strip()[-300:]}")
    return elapsed, out.stdout


def child_cpu() -> float:
    """CPU seconds (user + system) of the finished child processes so far."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def median_of(fn, repeat: int) -> float:
    return statistics.median(fn() for _ in range(repeat))


def file_size(path: Path) -> int:
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())


def prep_env(*, bytecode: bool = True) -> dict:
    env = {**os.environ}
    env.pop("PREP_QUESTIONS", None)
    if bytecode:
        # as installed: pip compiles Anki's modules (and prep's, from a wheel) at install;
        # with PYTHONDONTWRITEBYTECODE set, an editable prep would compile every module from
        # source in every run (~50 ms) while Anki's come from bytecode. The warm-up run
        # writes prep's.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def prep_cmd(db: Path, decks: str, *args: str) -> list[str]:
    return [PREP, "--db", str(db), "--questions", decks, *args]


class AnkiReviewer:
    """Anki's side of answer -> next as its reviewer does it (aqt/reviewer.py), the same work
    as prep's side: the answer takes the four states computed when the card was shown
    (``build_answer`` from the queued card's states), then the next card comes with its four
    states (``get_queued_cards``) and its content is read (the note). The legacy
    ``answerCard`` + ``getCard`` the bench used before computed the answered card's four
    states a second time and read its row back (``card.load()``), and read no content."""

    def __init__(self, col) -> None:
        from anki.cards import Card

        self.col, self._card = col, Card
        self.top = self._show()

    def _show(self):
        queued = self.col.sched.get_queued_cards(fetch_limit=1).cards
        if not queued:
            return None
        card = self._card(self.col)
        card._load_from_backend_card(queued[0].card)
        card.start_timer()
        card.note()  # its content, as prep's side reads its card's text
        return card, queued[0].states

    def answer(self) -> bool:
        """Rate the card shown Good and show the next; False when none was left to rate."""
        from anki.scheduler.v3 import CardAnswer

        if self.top is None:
            return False
        card, states = self.top
        sched = self.col.sched
        sched.answer_card(sched.build_answer(card=card, states=states, rating=CardAnswer.GOOD))
        self.top = self._show()
        return True


def raise_limits(col: Any) -> None:  # (an anki Collection)
    """Anki's daily new and review limits raised to RAISED in every deck options group."""
    for conf in col.decks.all_config():
        conf["new"]["perDay"] = conf["rev"]["perDay"] = RAISED
        col.decks.update_config(conf)


def answer_pairs(
    db: Path, decks: str, anki_path: Path | None, n: int
) -> tuple[float, float | None]:
    """In process, interleaved: rate Good and show the next card (its text and its four
    intervals: prep's session, Anki's reviewer, AnkiReviewer) in prep, then in Anki, ``n``
    times; the medians of each. Both with
    their daily limits raised, both syncing every commit; pairs, so that a busy disk slows
    both alike. prep's cards come from its deck cache (filled by the first open)."""
    from prep.engine.decks import deckcache
    from prep.engine.store import Store
    from prep.engine.study.session import ReviewSession

    col = None
    prep_t: list[float] = []
    anki_t: list[float] = []
    with Store.open(db) as store:
        store.update_settings(review_limit=RAISED, new_per_day=RAISED)  # as Anki's below
        coll = deckcache.load(store, [Path(decks)])  # as the app opens them
        session = ReviewSession(store, coll)
        session.preview()
        anki = None
        if anki_path is not None:
            from anki.collection import Collection

            col = Collection(str(anki_path))
            # Anki's daily limits raised (at its default of 200 reviews a day an answer costs
            # ~4 ms, recounting the limit: that is not the engine's speed)
            raise_limits(col)
            anki = AnkiReviewer(col)
        try:
            for _ in range(n):
                if session.current is None:
                    break
                t = time.perf_counter()
                session.rate(3)
                if session.current is not None:
                    session.preview()
                prep_t.append(time.perf_counter() - t)
                if anki is not None and anki.top is not None:
                    t = time.perf_counter()
                    anki.answer()
                    anki_t.append(time.perf_counter() - t)
        finally:
            if col is not None:
                col.close()
    return statistics.median(prep_t), statistics.median(anki_t) if anki_t else None


def checkpoint(db: Path) -> None:
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


class _Shown(dict):
    """A size's results, each printed as it is measured (with the load average then): a
    long run that dies late still leaves its numbers."""

    loads: list[float]

    def __setitem__(self, key: str, value) -> None:
        super().__setitem__(key, value)
        if key not in ("cards", "reviews"):
            load = os.getloadavg()[0]
            self.__dict__.setdefault("loads", []).append(load)
            print(f"    {key}: {value}  (load {load:.1f})", flush=True)

    def load_range(self) -> str:
        loads = self.__dict__.get("loads") or [os.getloadavg()[0]]
        return f"{min(loads):.1f}-{max(loads):.1f}"


def migrated(manifest: dict, db: Path, env: dict, res: dict, *, keep: bool) -> None:
    """``db``: the build's v3 database upgraded to this prep's schema (timed alone: the
    store opened in a fresh process; wall, CPU and each step's end in ``res``). With
    ``keep``, the upgraded copy is kept beside the build, keyed by the schema version (and
    the generator's, as the build), and a later run starts from it (the numbers it was made
    with are shown again, marked as kept): a 1M upgrade takes minutes."""
    from prep.engine.store import SCHEMA_VERSION

    kept = Path(manifest["prep_v3"]).with_name(f"prep-v{SCHEMA_VERSION}.db")
    record = kept.with_suffix(".json")
    if keep and kept.exists() and record.exists():
        shutil.copyfile(kept, db)
        was = json.loads(record.read_text())
        res["prep_migrate_kept"] = f"{kept} (made {was.get('at')}, load {was.get('load')})"
        res["prep_migrate"], res["prep_migrate_cpu"] = was["wall"], was["cpu"]
        return
    shutil.copyfile(manifest["prep_v3"], db)
    load, cpu = os.getloadavg()[0], child_cpu()
    res["prep_migrate"], out = run_whole([PY, "-c", PREP_MIGRATE, str(db)], env)
    res["prep_migrate_cpu"] = round(child_cpu() - cpu, 2)
    phases = next((line[7:] for line in out.splitlines() if line.startswith("PHASES ")), "[]")
    res["prep_migrate_phases"] = json.loads(phases)
    if keep:
        checkpoint(db)
        shutil.copyfile(db, kept)
        record.write_text(
            json.dumps(
                {
                    "wall": res["prep_migrate"],
                    "cpu": res["prep_migrate_cpu"],
                    "phases": res["prep_migrate_phases"],
                    "load": round(load, 1),
                    "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                }
            )
        )


def measure(
    manifest: dict, work: Path, repeat: int, *, anki: bool, answers: int, keep: bool = False
) -> dict:
    n = manifest["cards"]
    folder = work / str(n)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    db = folder / "prep.db"
    decks = manifest["decks"]
    env = prep_env(bytecode=not NO_BYTECODE)
    res: dict = _Shown(cards=n, reviews=manifest["reviews"])
    marker = "Question"
    quiz = prep_cmd(db, decks, "quiz", "--plain")
    # warm-up: the first open migrates an older database (timed alone), then fills the deck
    # cache and shows the first card
    migrated(manifest, db, env, res, keep=keep)
    cpu = child_cpu()
    res["prep_first_open"] = to_first_card(quiz, marker, env)
    res["prep_first_open_cpu"] = round(child_cpu() - cpu, 2)
    checkpoint(db)
    res["prep_open"] = median_of(lambda: to_first_card(quiz, marker, env), repeat)
    if TUI_REPEAT:  # the TUI's first card in a pseudo-terminal, beside a minimal Textual app
        plain = subprocess.run(quiz, input="q\n", capture_output=True, text=True, env=env)
        first = next(line for line in plain.stdout.splitlines() if marker in line)
        tui = pty_bench.tui_vs_floor(prep_cmd(db, decks, "quiz"), first[:30], TUI_REPEAT)
        res["tui"], res["tui_floor"] = tui["tui"], tui["floor"]
    whole(prep_cmd(db, decks, "stats", "--json"), env)
    res["prep_stats"] = median_of(
        lambda: whole(prep_cmd(db, decks, "stats", "--json"), env), repeat
    )
    checkpoint(db)
    res["prep_bytes"] = file_size(db)
    if anki and manifest.get("anki"):
        col = folder / "collection.anki2"
        shutil.copyfile(manifest["anki"], col)
        open_cmd = [PY, "-c", ANKI_OPEN, str(col)]
        to_first_card(open_cmd, "FIRST", env)
        res["anki_open"] = median_of(lambda: to_first_card(open_cmd, "FIRST", env), repeat)
        graphs = [PY, "-c", ANKI_GRAPHS, str(col)]
        whole(graphs, env)
        res["anki_stats"] = median_of(lambda: whole(graphs, env), repeat)
        res["anki_bytes"] = file_size(col)
    if answers:
        copy, anki_copy = folder / "answer.db", folder / "answer.anki2"
        shutil.copyfile(db, copy)
        with_anki = anki and manifest.get("anki")
        if with_anki:
            shutil.copyfile(manifest["anki"], anki_copy)
        res["prep_answer"], res["anki_answer"] = answer_pairs(
            copy, decks, anki_copy if with_anki else None, answers
        )
    shutil.rmtree(folder, ignore_errors=True)
    return res


def fmt_s(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x * 1000:.1f} ms" if x < 1 else f"{x:.2f} s"


def ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}x" if a is not None and b else "-"


# issue 26's table: (measure, keys of prep / the peer, the number before it, its goal)
ISSUE_ROWS = [
    ("cold open -> first card (x Anki)", "prep_open", "anki_open", "100k 0.64x, 1M 1.22x", "<= 0.5x"),
    ("TUI first card in a pty (x minimal Textual app)", "tui", "tui_floor", "100k 2.34x, 1M 9.1x", "<= 1.3x"),
    ("answer -> next card, in process, limits raised (x Anki)", "prep_answer", "anki_answer", "100k 1.2x", "<= 1.0x"),
    ("database, 10 reviews a card (x Anki)", "prep_bytes", "anki_bytes", "100k 1.47x", "<= 1.2x"),
    ("stats (prep stats --json / Anki's graphs, x Anki)", "prep_stats", "anki_stats", "100k 0.39x", "-"),
]  # fmt: skip


def issue_table(results: list[dict]) -> None:
    """Issue 26's table (measure | before | now | goal), now from this run: the README's."""
    print("\n| measure | before | now (this run) | goal |\n|---|---|---|---|")
    for label, pk, ak, before, goal in ISSUE_ROWS:
        now = [
            f"{_size(r['cards'])} {r[pk] / r[ak]:.2f}x"
            for r in results
            if r.get(pk) is not None and r.get(ak)
        ]
        print(f"| {label} | {before} | {', '.join(now) or '-'} | {goal} |")
    loads = [f"{_size(r['cards'])} {r.load_range()}" for r in results if isinstance(r, _Shown)]
    print(f"\n(load average while measured: {', '.join(loads)})")


def _size(n: int) -> str:
    return f"{n // 1_000_000}M" if n >= 1_000_000 else f"{n // 1000}k" if n >= 1000 else str(n)


def report(results: list[dict]) -> None:
    print("\nprep beside Anki (medians; ratio = prep / Anki, measured in this run)")
    head = f"  {'measure':<36}" + "".join(f"{r['cards']:>30,}" for r in results)
    print(head)
    rows = [
        ("cold open -> first card", "prep_open", "anki_open", fmt_s),
        ("answer -> next card (in process)", "prep_answer", "anki_answer", fmt_s),
        ("stats (prep stats --json / graphs)", "prep_stats", "anki_stats", fmt_s),
        ("database size", "prep_bytes", "anki_bytes", lambda b: f"{b / 1e6:.1f} MB"),
        ("TUI first card, pty / minimal Textual", "tui", "tui_floor", fmt_s),
    ]
    for label, pk, ak, show in rows:
        cells = []
        for r in results:
            p, a = r.get(pk), r.get(ak)
            cell = f"{show(p) if p is not None else '-'} / {show(a) if a is not None else '-'}"
            cells.append(f"{cell} {ratio(p, a):>7}")
        print(f"  {label:<36}" + "".join(f"{c:>30}" for c in cells))
    issue_table(results)
    print(
        "\nprep's growth (migrate: a v3 database upgraded, alone; first open: then the deck-cache"
        " fill and the first card)"
    )
    print(
        f"  {'cards':>10} {'reviews':>11} {'migrate':>11} {'(CPU)':>9} {'first open':>11} "
        f"{'(CPU)':>9} {'cold open':>11} {'stats':>11} {'database':>11}"
    )
    for r in results:
        kept = "*" if r.get("prep_migrate_kept") else ""
        print(
            f"  {r['cards']:>10,} {r['reviews']:>11,} {fmt_s(r.get('prep_migrate')) + kept:>11} "
            f"{fmt_s(r.get('prep_migrate_cpu')):>9} {fmt_s(r['prep_first_open']):>11} "
            f"{fmt_s(r.get('prep_first_open_cpu')):>9} {fmt_s(r['prep_open']):>11} "
            f"{fmt_s(r['prep_stats']):>11} {r['prep_bytes'] / 1e6:>8.1f} MB"
        )
    if any(r.get("prep_migrate_kept") for r in results):
        print("  * the upgrade of an earlier run, kept beside the build (--remigrate: again)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--reviews-per-card", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--answers", type=int, default=30, help="ratings timed per size")
    ap.add_argument(
        "--million",
        action="store_true",
        help="add 1M cards (--reviews-per-card each, Anki beside it) to every table; built once",
    )
    ap.add_argument(
        "--remigrate",
        action="store_true",
        help="1M: upgrade the v3 database again (by default the upgraded copy a run keeps "
        "beside the build, prep-vN.db for schema N, is reused)",
    )
    ap.add_argument("--tui-repeat", type=int, default=5, help="pty pairs per size (0: none)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench-out")
    ap.add_argument("--work", type=Path, help="scratch copies (default: OUT/work)")
    ap.add_argument(
        "--no-bytecode",
        action="store_true",
        help="keep PYTHONDONTWRITEBYTECODE for prep (as before: prep compiled from source)",
    )
    args = ap.parse_args()
    global NO_BYTECODE, TUI_REPEAT
    NO_BYTECODE, TUI_REPEAT = args.no_bytecode, args.tui_repeat
    try:
        import anki  # noqa: F401

        have_anki = True
    except ImportError:
        have_anki = False
        print("anki is not installed (pip install -e '.[bench]'): prep's numbers only")
    print(
        f"prep vs Anki on {os.cpu_count()} CPU(s), Python {sys.version.split()[0]}, "
        f"load average {os.getloadavg()[0]:.1f} at the start",
        flush=True,
    )
    work = args.work or args.out / "work"
    sizes = [int(s) for s in args.sizes.split(",") if s]
    results = []
    for n in sizes:
        m = gencoll.build(args.out, n, args.reviews_per_card, anki=have_anki)
        repeat = args.repeat if n <= 10_000 else max(3, args.repeat // 2)
        print(f"measuring {n:,} cards ...", flush=True)
        results.append(measure(m, work, repeat, anki=have_anki, answers=args.answers))
    if args.million:  # streamed by gencoll: ~1 GB of memory, ~20 GB of disk, an hour or more
        m = gencoll.build(args.out, 1_000_000, args.reviews_per_card, anki=have_anki)
        print("measuring 1,000,000 cards ...", flush=True)
        results.append(
            measure(m, work, 2, anki=have_anki, answers=args.answers, keep=not args.remigrate)
        )
    report(results)


if __name__ == "__main__":
    main()
