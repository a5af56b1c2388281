"""`prep import` reads an export as a stream: JSON row by row (engine/transfer/jsonstream.py),
CSV a line at a time; each row's shape is checked as it is read, and neither the file's text
nor its parsed tree is ever held whole. The stream reader agrees with json.loads (values,
and every error's message, line and column) whatever the chunk size."""

from __future__ import annotations

import io
import json
import random
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from prep.engine.transfer import export as ex
from prep.engine.transfer import importer, jsonstream, readers
from prep.engine.transfer.jsonstream import STREAMED, Empty, StreamError, read_object
from tests.conftest import reviewed_store

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def streamed(text: str) -> tuple:
    got: dict[str, list] = {}

    def rows(key: str):
        got[key] = []
        return got[key].append

    try:
        result = read_object(io.StringIO(text), rows)
    except Empty:
        return ("empty",)
    except StreamError as exc:
        return ("error", str(exc))
    if result is None:
        return ("not an object",)
    return ("ok", {k: got[k] if v is STREAMED else v for k, v in result.items()})


def loaded(text: str) -> tuple:
    if not text.strip():
        return ("empty",)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return ("error", f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}")
    return ("ok", value) if isinstance(value, dict) else ("not an object",)


def _value(rng: random.Random, depth: int = 0):
    if depth > 3 or rng.random() < 0.5:
        return rng.choice([1, -2.5e-3, 123456789012, "x", 'é\\"\n', None, True, "\u2028", ""])
    if rng.random() < 0.5:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {rng.choice("abc"): _value(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def test_the_stream_reader_agrees_with_json_loads_at_every_chunk_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = random.Random(13)
    for _ in range(1500):
        monkeypatch.setattr(jsonstream, "CHUNK", rng.choice([1, 2, 3, 7, 64, 1 << 20]))
        doc = {rng.choice(["cards", "reviews", "x"]): _value(rng) for _ in range(rng.randint(0, 4))}
        text = json.dumps(doc, indent=rng.choice([None, 1]), ensure_ascii=rng.random() < 0.5)
        if rng.random() < 0.6:  # cut, or one character added or taken away
            at = rng.randrange(len(text) + 1)
            text = rng.choice(
                [
                    text[:at],
                    text[:at] + rng.choice(',:[]{}"\\ x1\n') + text[at:],
                    text[:at] + text[at + 1 :],
                ]
            )
        assert streamed(text) == loaded(text), text


def test_rows_are_handed_over_one_at_a_time() -> None:
    text = json.dumps({"format": "f", "reviews": [{"n": i} for i in range(5000)]})
    seen = []
    result = read_object(io.StringIO(text), lambda key: seen.append)
    assert result == {"format": "f", "reviews": STREAMED} and seen == [
        {"n": i} for i in range(5000)
    ]


# A subprocess reads a padded export under an address-space cap of 40 MB above what it uses
# before reading: the export is 80 MB (its rows a few kB, the rest white space between them).
# Read whole (bytes, then text) it needs 160 MB more and fails; read as a stream it imports.
CAPPED = """
import resource, sys
from pathlib import Path
from prep.engine.store import Store
from prep.engine.transfer import importer
store = Store.memory()
used = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (used + 40_000_000, resource.RLIM_INFINITY))
try:
    result = importer.import_file(store, Path(sys.argv[1]))
except MemoryError:
    print("MemoryError")
    sys.exit(3)
print(result.reviews_added, len(importer.read_export(Path(sys.argv[1])).reviews))
"""


def test_a_json_export_larger_than_the_memory_left_imports(
    tmp_path: Path, small_collection
) -> None:
    store = reviewed_store(small_collection)
    data = json.loads(ex.to_json(store, T0))
    store.close()
    n = len(data["reviews"])
    gap = "," + " " * (80_000_000 // max(n - 1, 1)) + "\n"
    rows = gap.join(json.dumps(r) for r in data["reviews"])
    text = json.dumps({**data, "reviews": []}).replace('"reviews": []', f'"reviews": [{rows}]')
    path = tmp_path / "padded.json"
    path.write_text(text, encoding="utf-8")
    assert path.stat().st_size > 80_000_000
    done = subprocess.run(
        [sys.executable, "-c", CAPPED, str(path)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    added, read = map(int, done.stdout.split())
    assert added == read == n > 0


class _Spy:
    """A text stream that remembers how it was read."""

    def __init__(self, stream, reads: list) -> None:
        self.stream, self.reads = stream, reads

    def read(self, size: int = -1) -> str:
        self.reads.append(size)
        return self.stream.read(size)

    def __iter__(self):
        return self

    def __next__(self) -> str:
        self.reads.append("line")
        return next(self.stream)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.stream.close()


def test_a_csv_export_is_read_a_line_at_a_time(
    tmp_path: Path, small_collection, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = reviewed_store(small_collection)
    ex.export_csv(store, tmp_path / "e.csv")
    expected = len(store.dump()["reviews"])
    store.close()
    reads: list = []
    real = readers._open_text
    monkeypatch.setattr(readers, "_open_text", lambda path: _Spy(real(path), reads))
    data = importer.read_export(tmp_path / "e.csv")
    assert len(data.reviews) == expected > 0
    assert reads.count("line") >= expected  # row by row
    assert all(r == "line" or 0 < r <= 4096 for r in reads), reads  # never the whole file
