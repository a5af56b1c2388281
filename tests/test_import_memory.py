"""`prep import` holds nothing per review: the file's reviews are checked in a first reading
(what is kept: the file's cards, a hash per review, counts per card) and merged in a second,
inside one transaction. An export far larger than the memory left to the process imports
whole and correctly; a file changed between the two readings imports nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from prep.engine.store import Store
from prep.engine.study.scheduler import Settings, replay_params
from prep.engine.transfer import importer
from prep.engine.transfer.export import ExportError
from tests.bigexport import write_big_export

# The import runs in a subprocess under an address-space cap of 20 MB above what it uses
# before reading; the export is ~25 MB of reviews (~800 bytes each). Streaming needs ~10 MB of
# Python heap at its peak (a hash per review, the JSON reader's 1 MB chunks) plus SQLite's page
# cache and the v13 log's tables in the one transaction; the cap was 14 MB until that sum sat
# within 2 MB of it (a MemoryError that came and went with the allocator's layout). Holding the
# checked rows needs ~35 MB more; the test below proves a holding import fails under this cap.
CAP = 20_000_000
CAPPED = """
import resource, sys
from pathlib import Path
from prep.engine.store import Store
from prep.engine.transfer import importer
store = Store.open(sys.argv[2])
if len(sys.argv) > 4:  # a regression: the first reading keeps every checked row
    from prep.engine.transfer import rows
    held = []
    real_add = rows.ReviewIds.add
    rows.ReviewIds.add = lambda self, i, review: (held.append(review), real_add(self, i, review))
used = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (used + int(sys.argv[3]), resource.RLIM_INFINITY))
try:
    result = importer.import_file(store, Path(sys.argv[1]))
except MemoryError:
    print("MemoryError")
    sys.exit(3)
print(result.cards_added, result.reviews_added)
"""


def test_an_export_much_larger_than_the_memory_left_imports_whole(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    n = write_big_export(path, 1500, 20, replay_params(Settings(), True, 0))
    assert path.stat().st_size > 24_000_000
    db = tmp_path / "prep.db"
    Store.open(db).close()  # (created before the cap: the schema is not the import's)
    done = subprocess.run(
        [sys.executable, "-c", CAPPED, str(path), str(db), str(CAP)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert done.stdout.split() == ["1500", str(n)]
    store = Store.open(db)
    try:
        dump = store.dump()
        assert len(dump["reviews"]) == n == 30_000 and len(dump["cards"]) == 1500
        # the same file again: everything is held, nothing added
        again = importer.import_file(store, path)
        assert (again.reviews_added, again.reviews_skipped, again.cards_kept) == (0, n, 1500)
    finally:
        store.close()


def test_a_file_changed_between_the_two_readings_imports_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "e.json"
    write_big_export(path, 3, 2, replay_params(Settings(), True, 0))
    real = importer._Held.add

    def add_then_edit(self, r, i=0):  # the file is rewritten during the first reading
        real(self, r, i)
        if i == 5:
            text = path.read_text(encoding="utf-8")
            path.write_text(text.replace('"rating": 3', '"rating": 4'), encoding="utf-8")

    monkeypatch.setattr(importer._Held, "add", add_then_edit)
    store = Store.memory()
    with pytest.raises(ExportError, match="changed while it was being imported; nothing"):
        importer.import_file(store, path)
    assert store.dump()["reviews"] == [] and store.dump()["cards"] == []


@pytest.mark.parametrize("suffix", ["json", "csv"])
def test_both_readings_agree_with_the_rows_read_whole(tmp_path: Path, suffix: str) -> None:
    """The reviews a second reading yields are the rows the first one checked (params
    resolved), for JSON and CSV alike; a list given twice in JSON counts once (the last)."""
    from prep.engine.transfer import export as ex

    src = tmp_path / "e.json"
    write_big_export(src, 4, 3, replay_params(Settings(), True, 0))
    store = Store.memory()
    importer.import_file(store, src)
    path = tmp_path / f"out.{suffix}"
    from datetime import UTC, datetime

    when = datetime(2026, 4, 1, tzinfo=UTC)
    if suffix == "json":
        ex.export_json(store, path, when)
    else:
        ex.export_csv(store, path)
    data = importer.read_export(path)
    rows = list(data.reviews)
    assert len(rows) == len(data.reviews) == 12 and list(data.reviews) == rows
    assert all(isinstance(r["params"], dict) for r in rows)
    if suffix == "json":
        text = path.read_text(encoding="utf-8")
        doc = json.loads(text)
        twice = text.rstrip().rstrip("}") + ', "reviews": ' + json.dumps(doc["reviews"][:2]) + "}"
        path.write_text(twice, encoding="utf-8")
        again = importer.read_export(path)
        assert len(again.reviews) == 2 and [r["reviewed_at"] for r in again.reviews] == [
            r["reviewed_at"] for r in rows[:2]
        ]


def test_the_cap_fails_an_import_that_holds_the_rows(tmp_path: Path) -> None:
    """The cap above separates: the same import keeping each checked row runs out of memory."""
    path = tmp_path / "big.json"
    write_big_export(path, 1500, 20, replay_params(Settings(), True, 0))
    db = tmp_path / "prep.db"
    Store.open(db).close()
    done = subprocess.run(
        [sys.executable, "-c", CAPPED, str(path), str(db), str(CAP), "hold"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 3 and done.stdout.strip() == "MemoryError", done.stdout
