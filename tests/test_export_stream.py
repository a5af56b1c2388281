"""`prep export --format json` streams: its bytes are exactly what building the whole document
and encoding it at once gave, and its memory does not grow with the review log."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from prep.engine.store import Mark, Store
from prep.engine.study.scheduler import Settings, replay_params
from prep.engine.sync.run import sync
from prep.engine.timeutil import fmt
from prep.engine.transfer import export as ex
from prep.engine.transfer import importer
from prep.engine.transfer.clocks import progress
from tests.bigexport import write_big_export
from tests.test_sync import T0, rate, stores


def whole(store: Store) -> str:
    """The export as it was made before it streamed: the document built, then encoded."""
    data = {"format": ex.FORMAT, "version": ex.VERSION, "exported_at": fmt(T0)}
    data |= progress(store)
    return json.dumps(ex._finite(data), indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def test_the_streamed_export_is_byte_identical_to_the_whole_document(tmp_path: Path) -> None:
    (a, b), folder = stores(tmp_path, 2)
    empty = tmp_path / "empty.json"
    ex.export_json(a, empty, T0)  # nothing stored: empty lists, no settings
    assert empty.read_bytes() == whole(a).encode("utf-8")
    a.save_settings(Settings(new_per_day=7, desired_retention=0.85), at=T0)
    for i, rating in enumerate([3, 1, 4, 2, 3]):
        rate(a, f"c{i % 3}", rating, T0 + timedelta(days=i))
    rate(b, "c0", 3, T0 + timedelta(hours=5))  # another device's, replayed here
    sync(b, folder)
    sync(a, folder)
    assert a.undo_last() is not None  # a tombstone
    a.set_mark("c1", Mark(suspended=True, flagged=True), at=T0)
    a.set_mark("c2", Mark(flagged=True), at=T0)
    a.set_mark("c2", Mark(), at=T0 + timedelta(hours=1))  # cleared: listed, all 0
    a.record_demo_run(
        name="rank",
        device="cpu",
        device_name="Grafikkarte ü — \u2028 [bold]",  # text beyond ASCII, a line separator
        passed=False,
        seconds=1.25,
        metrics={"gap": float("nan"), "inf": float("inf"), "list": [1.5, {"é": None}], "e": {}},
        ran_at=T0,
    )
    a.record_demo_run(name="dla", device="cpu", passed=True, seconds=0.5, ran_at=T0)
    path = tmp_path / "full.json"
    ex.export_json(a, path, T0)
    expected = whole(a)
    assert path.read_bytes() == expected.encode("utf-8")
    assert ex.to_json(a, T0) == expected
    doc = json.loads(expected)
    assert len(doc["reviews"]) == 5 and doc["undone"] and len(doc["marks"]) == 2
    assert doc["demo_runs"][0]["metrics"]["gap"] is None
    # and it imports back whole: the database it makes exports the same bytes
    c = Store.open(tmp_path / "c.db")
    importer.import_file(c, path)
    assert ex.to_json(c, T0) == expected


# The export runs in a subprocess whose address space may grow by CAP beyond what it uses
# before it starts. The database holds 30,000 reviews (the export ~25 MB). Building the
# document held every review as a dict with two state dicts (~2.5 KB each: ~75 MB) and then
# the whole text (~25 MB); streaming holds one state per card (1,500), SQLite's page cache
# and a 1 MB write buffer. Measured: streaming passes under a 6 MB cap; building the document
# fails even under 100 MB. The test proves both sides of CAP.
CAP = 20_000_000
CAPPED = """
import resource, sys
from datetime import UTC, datetime
from pathlib import Path
from prep.engine.store import Store
from prep.engine.timeutil import fmt
from prep.engine.transfer import export as ex
store = Store.open(sys.argv[1])
store.count_reviews()  # (the schema read before the cap: it is not the export's)
if len(sys.argv) > 4:  # a regression: the whole document built, then written
    from prep.engine.transfer.clocks import progress
    import json
    def export_json(store, path, now):
        data = {"format": ex.FORMAT, "version": 1, "exported_at": "x", **progress(store)}
        Path(path).write_text(json.dumps(ex._finite(data), indent=1, ensure_ascii=False))
    ex.export_json = export_json
"""


def capped(setup: str, call: str) -> str:
    """A script for ``export_capped``: ``setup`` (argv: database, output, CAP, and "hold" for
    the regression), then the address space capped at what it uses plus CAP, then ``call``;
    it prints ok, or MemoryError and exits 3 on lack of memory, however it surfaces (SQLite
    says "out of memory")."""
    return (
        setup
        + f"""
used = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (used + int(sys.argv[3]), resource.RLIM_INFINITY))
try:
    {call}
except Exception as e:
    if not (isinstance(e, MemoryError) or "out of memory" in str(e).lower()):
        raise
    print("MemoryError")
    sys.exit(3)
print("ok")
"""
    )


def export_capped(
    script: str, db: Path, out: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", script, str(db), str(out), str(CAP), *extra],
        capture_output=True,
        text=True,
        timeout=600,
    )


CAPPED = capped(
    CAPPED, "ex.export_json(store, Path(sys.argv[2]), datetime(2026, 4, 1, tzinfo=UTC))"
)


def _big_database(tmp_path: Path) -> Path:
    src = tmp_path / "big.json"
    write_big_export(src, 1500, 20, replay_params(Settings(), True, 0))
    db = tmp_path / "prep.db"
    store = Store.open(db)
    try:
        importer.import_file(store, src)
    finally:
        store.close()
    src.unlink()
    return db


def test_an_export_much_larger_than_the_memory_left_is_written_whole(tmp_path: Path) -> None:
    db = _big_database(tmp_path)
    out = tmp_path / "out.json"
    done = export_capped(CAPPED, db, out)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert out.stat().st_size > 20_000_000
    store = Store.open(db)
    try:
        assert out.read_bytes() == ex.to_json(store, datetime(2026, 4, 1, tzinfo=UTC)).encode()
    finally:
        store.close()
    # the cap separates streaming from holding: the whole document does not fit under it
    held = export_capped(CAPPED, db, tmp_path / "held.json", "hold")
    assert held.returncode == 3 and held.stdout.strip() == "MemoryError", held.stderr[-2000:]
