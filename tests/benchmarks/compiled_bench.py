"""Would a compiled answer path close answer -> next's gap to Anki (issue 26)? A throwaway
mypyc build (or, with ``--cython``, a Cython build) of the modules an answer runs, measured
beside pure Python and Anki's engine.

    python tests/benchmarks/compiled_bench.py --coll bench-out/100000x10 --work bench-work
        [--rebuild] [--answers 1500] [--rounds 2] [--pairs] [--cython all|compute]

The build (``WORK/mypyc/prep``, ~40-60 s of gcc on one core) copies engine/, tui/, demos/ and
questions/ as git lists them, makes the few source edits mypyc needs (``EDITS``: each is
asserted to still apply, so a moved line fails loudly), and compiles ``MODULES`` next to their
sources; a process started with ``PYTHONPATH=WORK/mypyc`` imports the compiled copy, anything
else the project as installed. Nothing of the project's own install changes.

Then, per round, in separate processes: each engine alone (``--answers`` answers after 200 warm
ones, synchronous OFF, so the disk is out of it: wall median and CPU mean) for pure prep,
compiled prep and Anki; and the statements of one pure answer (each one's execute time, and the
sqlite3 module's floor: a cached ``SELECT ?`` executed and fetched). ``--pairs`` also runs
answer_bench.py (interleaved pairs, sync FULL, wall and --cpu) against each build. Nothing
asserts: read the numbers (the load average is printed beside each).

What it showed (fast11, 2026-12-02, 100k cards x 10 reviews, load 3-6 on 2 cores): the
compiled build is not faster, it is 5-9% slower. Alone, sync OFF: pure 0.305-0.343 ms, compiled
0.323-0.374 ms, Anki 0.115-0.134 ms an answer; answer_bench --cpu: pure 1.47-1.58x, compiled
1.55-1.71x. Compiling only the compute modules (session, scheduler, onepass, reviewlog,
timeutil, collection; the store mixins left interpreted), or CardState native (its
``object.__new__`` + ``__dict__`` shortcuts replaced): no faster either. Where pure prep's
answer goes (perf, steady state, sync OFF): the eval loop 17%, the interpreter's C API
(allocation, dict and attribute lookups, tuples) 38%, libsqlite3 21%, the kernel (page reads
and WAL writes) 14%, libc 7%; the 11 statements' execute time is 0.12-0.14 ms of 0.31-0.34,
sqlite3's floor 0.8 us a statement (~9 us an answer). Anki's 0.12 ms: its SQLite 34%, the
kernel 29%, Rust 14%, Python + protobuf 18%. prep's SQL alone costs what Anki's whole answer
does, and mypyc removes at most the eval loop's ~0.05 ms while adding boxing and type checks
at every boundary: no compiled Python answer path reaches 1.0x. Against the compiled build the
suite gives 33 failed, 3 errors of 1950: tests that patch or subclass the session and the
scheduler, and hostile or legacy rows that pure Python refuses in its own words but native
code meets as a TypeError at an annotated boundary.

``--cython all|compute`` (fast17) builds ``WORK/cython-all`` or ``WORK/cython-compute``
instead: no source edits, the unchanged .py compiled in pure-Python mode (``CYTHON_DIRECTIVES``:
annotations are not types, functions bind), each .so beside its .py. ALL is the 12 modules
cProfile finds on an answer's path, COMPUTE the scheduler and time arithmetic (5). Build time
on the shared 2 cores (load 3-5): ALL 253 s, COMPUTE 87 s of cythonize + gcc, 19.6 MB of .so.

What it showed (fast17, 2026-12-03, main bd8f33e, 100k cards x 10 reviews). It is correct:
against ALL the bit-for-bit tests (test_answer_fast, test_onepass, test_answer_objects,
test_answer_work, test_fuzz_by_card, test_engine_scheduler) give 63 passed, every other test
file that runs a ReviewSession 362 passed, 1 skipped (a root-only skip), and the TUI ones
(test_tui_flow, test_grade_tui, test_ux15, test_ux16) 59 passed: no failure, patching and
subclassing work. It removes instructions: callgrind Ir an answer ((N=220 - N=20)/200,
PYTHONHASHSEED=0) pure 1,103,523, COMPUTE 1,000,279 (-9.4%), ALL 952,814 (-13.7%); Anki
576,255. The scheduler's own part (check + preview + review, in process): 100 -> 68 us (-32%).
It does not remove time: answer_bench --warm 200 --cpu --rounds 3 --split, pure / ALL /
COMPUTE alternated, 3 sets of 3 (load 4.6-7.7, 3.1-4.3 and 1.4-2.6), the median of the nine
runs' medians: pure 1.37x Anki's CPU, ALL 1.41x, COMPUTE 1.39x (each set alike: ALL 1.28-1.45,
pure 1.28-1.39). prep alone (600 answers a process, 6 interleaved triples, load 1.5-2.2): CPU
an answer median pure 974 us, ALL 908 (per-triple ALL/pure 0.76-1.08, median 0.95), COMPUTE
1028. Why fewer instructions buy so little: callgrind --cache-sim (same harness, an answer)
gives pure / ALL 24.2k / 23.3k L1 instruction misses and 9.4k / 12.2k L1 data read misses
(+30%), so callgrind's own cycle estimate (Ir + 10 x L1 misses) is 1,474k / 1,342k: -9% of the
user part; an answer also spends ~0.3-0.5 ms of system time (the commit), which no compile
touches, so at most ~5-6% of an answer's CPU, which is what prep alone shows and what the
pairs with Anki at this load cannot tell from their noise. The bar set before measuring (CPU
at least 10% below pure, median of >= 3 interleaved rounds) is missed: not shipped. What
is left between prep and Anki is mostly the statements an answer runs and its commit, not
the interpreter's dispatch.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))

MODULES = [
    "engine/study/session.py",
    "engine/study/scheduler.py",
    "engine/study/onepass.py",
    "engine/store/core.py",
    "engine/store/cards.py",
    "engine/store/reviews.py",
    "engine/store/reviewlog.py",
    "engine/store/devices.py",
    "engine/timeutil.py",
]

_ATTR = "from mypy_extensions import mypyc_attr\n"
_NON_NATIVE = "@mypyc_attr(native_class=False)\n"
_SUBCLASSED = "@mypyc_attr(allow_interpreted_subclasses=True)\n"

# (file, old, new): what mypyc refused, and the smallest change that satisfies it
EDITS = [
    # an unannotated property: mypyc's internal error "Expected return type annotation"
    ("engine/store/core.py", "    def db(self):", "    def db(self) -> Any:"),
    # "Inheriting from most builtin types is unimplemented"
    (
        "engine/store/reviewlog.py",
        "\nclass LegacyState(str):",
        "\n" + _NON_NATIVE + "class LegacyState(str):",
    ),
    (
        "engine/study/session.py",
        "\nclass NotCurrentCard(RuntimeError):",
        "\n" + _NON_NATIVE + "class NotCurrentCard(RuntimeError):",
    ),
    # "Incompatible value representations in assignment" (an int into a float variable)
    ("engine/study/onepass.py", "r: float = 0\n", "r: float = 0.0\n"),
    # the decks' cache builds states with object.__new__ and fills their __dict__: a native
    # class has none ("object.__new__(CardState) is not safe" skipped every card)
    ("engine/study/scheduler.py", "\nclass CardState:", "\n" + _NON_NATIVE + "class CardState:"),
    # reviewlog5.Chain5 (interpreted) subclasses it: constructing one raised "interpreted
    # classes cannot inherit from compiled" (every new database's migration builds one)
    ("engine/store/reviewlog.py", "\nclass Chain:", "\n" + _SUBCLASSED + "class Chain:"),
    # Store is an interpreted class over these mixins, and wraps their public methods: the
    # compiled ones must look their methods up as Python does
    ("engine/store/core.py", "\nclass StoreCore:", "\n" + _SUBCLASSED + "class StoreCore:"),
    ("engine/store/cards.py", "\nclass CardsStore(", "\n" + _SUBCLASSED + "class CardsStore("),
    (
        "engine/store/reviews.py",
        "\nclass ReviewsStore(",
        "\n" + _SUBCLASSED + "class ReviewsStore(",
    ),
    # a compiled classmethod is callable (a Python classmethod is not): the wrapping loop took
    # Store.open for a method ("descriptor 'open' for type 'StoreCore' needs a type")
    (
        "engine/store/__init__.py",
        '        if not _name.startswith("_") and _name != "transaction" and callable(_value):',
        "        if isinstance(_value, (classmethod, types.ClassMethodDescriptorType)):\n"
        "            continue\n"
        '        if not _name.startswith("_") and _name != "transaction" and callable(_value):',
    ),
    (
        "engine/store/__init__.py",
        "from __future__ import annotations\n",
        "from __future__ import annotations\n\nimport types\n",
    ),
]
# engine/decks/collection.py is left interpreted: its _CachedDeckInfo fills an instance
# __dict__ and has a property setter (refused in a non-native class), CachedCollection has a
# lambda in a method (an internal mypyc error when non-native) and is held in a WeakSet (a
# native class has no __weakref__: "cannot create weak reference to 'CachedCollection'")


def build(work: Path) -> Path:
    """The compiled copy under ``work/mypyc`` (its parent goes on PYTHONPATH)."""
    top = work / "mypyc"
    src = _copy_sources(top)
    for name, old, new in EDITS:
        path = src / name
        text = path.read_text()
        assert old in text, f"{name}: no longer holds {old.strip()!r}"
        text = text.replace(old, new, 1)
        if "mypyc_attr(" in new and _ATTR not in text:
            text = text.replace(
                "from __future__ import annotations\n",
                "from __future__ import annotations\n\n" + _ATTR,
                1,
            )
        path.write_text(text)
    t = time.perf_counter()
    cmd = [
        str(Path(sys.executable).parent / "mypyc"),
        "--explicit-package-bases",
        "--config-file",
        str(ROOT / "pyproject.toml"),
        *(f"prep/{m}" for m in MODULES),
    ]
    out = subprocess.run(
        cmd, cwd=top, env={**os.environ, "MYPYPATH": "."}, capture_output=True, text=True
    )
    if out.returncode:
        sys.exit(f"mypyc failed:\n{out.stdout[-4000:]}{out.stderr[-4000:]}")
    print(f"built {len(MODULES)} modules in {time.perf_counter() - t:.0f} s", flush=True)
    return top


# Cython (--cython): the unchanged .py sources compiled in pure-Python mode. Untyped, the code
# keeps Python's object semantics: annotations are not types (annotation_typing=False), so no
# boundary checks or boxing; functions are real function objects (binding=True), so patching
# and introspection behave. ALL: every module an answer runs (cProfile over 300 bench answers:
# these and nothing else of prep's); COMPUTE: the scheduler and time arithmetic alone.
CYTHON_COMPUTE = [
    "engine/study/onepass.py",
    "engine/study/scheduler.py",
    "engine/study/fuzz.py",
    "engine/study/duesteps.py",
    "engine/timeutil.py",
]
CYTHON_ALL = [
    *CYTHON_COMPUTE,
    "engine/study/session.py",
    "engine/store/core.py",
    "engine/store/cards.py",
    "engine/store/reviews.py",
    "engine/store/reviewlog.py",
    "engine/store/devices.py",
    "engine/decks/collection.py",
]
CYTHON_DIRECTIVES = ["language_level=3", "annotation_typing=False", "binding=True"]


def _copy_sources(top: Path) -> Path:
    shutil.rmtree(top, ignore_errors=True)
    src = top / "prep"
    files = subprocess.run(
        ["git", "ls-files", "engine", "tui", "demos", "questions"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for name in files:
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, src / name)
    return src


def build_cython(work: Path, subset: str) -> Path:
    """The Cython-compiled copy under ``work/cython-SUBSET`` (its parent goes on PYTHONPATH):
    each module's .so beside its unchanged .py (Python imports the .so first)."""
    top = work / f"cython-{subset}"
    src = _copy_sources(top)
    modules = CYTHON_ALL if subset == "all" else CYTHON_COMPUTE
    t = time.perf_counter()
    cmd = [str(Path(sys.executable).parent / "cythonize"), "-i", "-q"]
    for directive in CYTHON_DIRECTIVES:
        cmd += ["-X", directive]
    out = subprocess.run(
        [*cmd, *(str(src / m) for m in modules)], cwd=top, capture_output=True, text=True
    )
    if out.returncode:
        sys.exit(f"cythonize failed:\n{out.stdout[-4000:]}{out.stderr[-4000:]}")
    print(
        f"built {len(modules)} modules with Cython in {time.perf_counter() - t:.0f} s", flush=True
    )
    return top


def _db(work: Path, name: str) -> Path:
    db = work / f"{name}-{os.getpid()}.db"
    for extra in ("-wal", "-shm"):
        Path(f"{db}{extra}").unlink(missing_ok=True)
    return db


def _cleanup(path: Path) -> None:
    for extra in ("", "-wal", "-shm"):
        Path(f"{path}{extra}").unlink(missing_ok=True)


def alone_prep(work: Path, decks: str, base: Path, n: int, statements: bool) -> None:
    from anki_bench import RAISED

    from prep.engine.decks import deckcache
    from prep.engine.store import Store
    from prep.engine.study.session import ReviewSession

    kind = (
        "compiled"
        if any(
            (getattr(m, "__file__", None) or "").endswith(".so")
            for name, m in list(sys.modules.items())
            if name.startswith("prep.")
        )
        else "pure"
    )
    db = _db(work, "alone")
    shutil.copyfile(base, db)
    try:
        with Store.open(db) as store:
            store.update_settings(review_limit=RAISED, new_per_day=RAISED)
            session = ReviewSession(store, deckcache.load(store, [Path(decks)]))
            store.conn.execute("PRAGMA synchronous = OFF")
            for _ in range(200):
                session.rate(3)
                session.preview()
            wall, cpu = [], []
            for _ in range(n):
                t, c = time.perf_counter(), time.process_time()
                session.rate(3)
                session.preview()
                wall.append(time.perf_counter() - t)
                cpu.append(time.process_time() - c)
            print(
                f"prep {kind:8} alone, sync OFF: wall {statistics.median(wall) * 1e3:.3f} ms, "
                f"CPU {statistics.mean(cpu) * 1e3:.3f} ms an answer (load {os.getloadavg()[0]:.2f})",
                flush=True,
            )
            if statements:
                _statements(store, session, n)
    finally:
        _cleanup(db)


class _Timed:
    """The connection, with each execute timed (sqlite3.Connection's methods are read-only)."""

    def __init__(self, conn: object) -> None:
        self._conn = conn
        self.log: list[tuple[float, str]] = []

    def execute(self, sql: str, *args: object) -> object:
        t = time.perf_counter()
        cursor = self._conn.execute(sql, *args)  # type: ignore[attr-defined]
        self.log.append((time.perf_counter() - t, sql))
        return cursor

    def __getattr__(self, name: str) -> object:
        return getattr(self._conn, name)


def _statements(store: object, session: object, n: int) -> None:
    conn = store.conn  # type: ignore[attr-defined]
    timed = _Timed(conn)
    store.conn = timed  # type: ignore[attr-defined]
    per: dict[tuple[int, str], list[float]] = {}
    total = []
    try:
        for _ in range(n):
            timed.log.clear()
            session.rate(3)  # type: ignore[attr-defined]
            session.preview()  # type: ignore[attr-defined]
            total.append(sum(d for d, _ in timed.log))
            for i, (d, sql) in enumerate(timed.log):
                per.setdefault((i, " ".join(sql.split())[:80]), []).append(d)
    finally:
        store.conn = conn  # type: ignore[attr-defined]
    floor = []
    for _ in range(5000):
        t = time.perf_counter()
        conn.execute("SELECT ?", (1,)).fetchone()
        floor.append(time.perf_counter() - t)
    print(
        f"  its statements' execute time: {statistics.median(total) * 1e3:.3f} ms an answer "
        f"(sqlite3's floor, a cached SELECT ? executed and fetched: "
        f"{statistics.median(floor) * 1e6:.1f} us a statement)"
    )
    for (i, sql), times in sorted(per.items()):
        if len(times) > n // 2:
            print(f"  {i:3d} {statistics.median(times) * 1e6:6.1f} us  {sql}")


def alone_anki(work: Path, coll: Path, n: int) -> None:
    from anki.collection import Collection
    from anki_bench import raise_limits

    path = work / f"alone-{os.getpid()}.anki2"
    shutil.copyfile(coll / "collection.anki2", path)
    col = Collection(str(path))
    try:
        col.db.execute("PRAGMA synchronous = OFF")
        raise_limits(col)
        card = col.sched.getCard()
        for _ in range(200):
            col.sched.answerCard(card, 3)
            card = col.sched.getCard()
        wall, cpu = [], []
        for _ in range(n):
            t, c = time.perf_counter(), time.process_time()
            col.sched.answerCard(card, 3)
            card = col.sched.getCard()
            wall.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
        print(
            f"Anki              alone, sync OFF: wall {statistics.median(wall) * 1e3:.3f} ms, "
            f"CPU {statistics.mean(cpu) * 1e3:.3f} ms an answer (load {os.getloadavg()[0]:.2f})",
            flush=True,
        )
    finally:
        col.close()
        _cleanup(path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--coll", type=Path, required=True, help="gencoll's folder (NxR)")
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--answers", type=int, default=1500)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--pairs", action="store_true", help="also answer_bench.py on each build")
    ap.add_argument(
        "--cython",
        choices=["all", "compute"],
        help="a Cython build (of CYTHON_ALL or CYTHON_COMPUTE) in place of mypyc's",
    )
    ap.add_argument("--alone", choices=["prep", "prep+sql", "anki"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.work = args.work.resolve()
    decks = str(args.coll / "decks")
    if args.alone:  # (a child process: one engine, one build)
        from answer_bench import base_db

        if args.alone == "anki":
            alone_anki(args.work, args.coll, args.answers)
        else:
            base = base_db(args.coll, args.work, decks)
            alone_prep(args.work, decks, base, args.answers, args.alone == "prep+sql")
        return
    args.work.mkdir(parents=True, exist_ok=True)
    if args.cython:
        top = args.work / f"cython-{args.cython}"
        if args.rebuild or not any((top / "prep/engine/study").glob("onepass.*.so")):
            top = build_cython(args.work, args.cython)
    else:
        top = args.work / "mypyc"
        if args.rebuild or not any((top / "prep/engine/study").glob("session.*.so")):
            top = build(args.work)
    compiled = {**os.environ, "PYTHONPATH": str(top)}
    me = [sys.executable, __file__, "--coll", str(args.coll), "--work", str(args.work)]
    me += ["--answers", str(args.answers)]
    for r in range(args.rounds):
        print(f"round {r + 1}:", flush=True)
        subprocess.run([*me, "--alone", "prep+sql" if r == 0 else "prep"], check=True)
        subprocess.run([*me, "--alone", "prep"], env=compiled, check=True)
        subprocess.run([*me, "--alone", "anki"], check=True)
    if args.pairs:
        bench = [sys.executable, str(HERE / "answer_bench.py"), "--coll", str(args.coll)]
        bench += ["--work", str(args.work), "--warm", "200"]
        for name, env in (("pure", dict(os.environ)), ("compiled", compiled)):
            for extra in ([], ["--cpu"]):
                print(f"answer_bench {' '.join(extra) or '(wall)'}, {name}:", flush=True)
                subprocess.run([*bench, *extra], env=env, check=True)


if __name__ == "__main__":
    main()
