"""`prep export --format csv` streams: its six files hold exactly the bytes that building the
whole dump and each table's text gave (export.to_csv), and its memory does not grow with the
review log. Round seven built every file in memory first."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from prep.engine.store import Mark, Store
from prep.engine.study.scheduler import Settings
from prep.engine.sync.run import sync
from prep.engine.transfer import export as ex
from prep.engine.transfer import importer
from tests.test_export_stream import _big_database, capped, export_capped
from tests.test_sync import T0, rate, stores


def _files(path: Path) -> dict[str, bytes]:
    return {k: p.read_bytes() for k, p in ex.csv_paths(path).items()}


def _expected(store: Store) -> dict[str, bytes]:
    return {k: text.encode("utf-8") for k, text in ex.to_csv(store).items()}


def test_the_streamed_csv_export_is_byte_identical_to_the_tables_built_whole(
    tmp_path: Path,
) -> None:
    (a, b), folder = stores(tmp_path, 2)
    empty = tmp_path / "empty.csv"
    ex.export_csv(a, empty)  # nothing stored: headers only, no settings
    assert _files(empty) == _expected(a)
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
        device_name='Grafikkarte ü — \u2028 "quoted", [bold]\nline',  # quoting, non-ASCII
        passed=False,
        seconds=1.25,
        metrics={"gap": float("nan"), "inf": float("inf"), "list": [1.5, {"é": None}]},
        ran_at=T0,
    )
    a.record_demo_run(
        name="dla", device="cpu", device_name="=1+1", passed=True, seconds=0.5, ran_at=T0
    )  # a cell a spreadsheet reads as a formula
    path = tmp_path / "full.csv"
    written = ex.export_csv(a, path)
    assert written == list(ex.csv_paths(path).values())
    expected = _expected(a)
    assert _files(path) == expected
    assert expected["reviews"].count(b"\n") > 5 and expected["undone"].count(b"\n") == 2
    # and it imports back whole: the database it makes exports the same bytes
    c = Store.open(tmp_path / "c.db")
    importer.import_file(c, path)
    again = tmp_path / "again.csv"
    ex.export_csv(c, again)
    assert _files(again) == expected


# As the JSON export's test (tests/test_export_stream.py): the export runs in a subprocess
# whose address space may grow by CAP beyond what it uses before it starts; the database holds
# 30,000 reviews (the reviews file ~25 MB). Building the tables held the dump (every review a
# dict with two state dicts) and each file's whole text. Measured: streaming passes under a
# 4 MB cap; building the tables fails under 100 MB (passes at 200 MB). The test proves both
# sides of CAP.
CAPPED = """
import resource, sys
from pathlib import Path
from prep.engine.store import Store
from prep.engine.transfer import export as ex
store = Store.open(sys.argv[1])
store.count_reviews()  # (the schema read before the cap: it is not the export's)
if len(sys.argv) > 4:  # a regression: the tables built whole, then written
    def export_csv(store, path):
        paths, parts = ex.csv_paths(Path(path)), ex.to_csv(store)
        for k, p in paths.items():
            p.write_text(parts[k], encoding="utf-8")
    ex.export_csv = export_csv
"""
CAPPED = capped(CAPPED, "ex.export_csv(store, Path(sys.argv[2]))")


def test_a_csv_export_much_larger_than_the_memory_left_is_written_whole(tmp_path: Path) -> None:
    db = _big_database(tmp_path)
    out = tmp_path / "out.csv"
    done = export_capped(CAPPED, db, out)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert out.stat().st_size > 20_000_000
    store = Store.open(db)
    try:
        assert _files(out) == _expected(store)
    finally:
        store.close()
    # the cap separates streaming from holding: the whole tables do not fit under it
    held = export_capped(CAPPED, db, tmp_path / "held.csv", "hold")
    assert held.returncode == 3 and held.stdout.strip() == "MemoryError", held.stderr[-2000:]
