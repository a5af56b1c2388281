"""A JSON `true` or `false` where an export has a whole number is refused, not read as 1 or 0:
a rating of `true` was imported as Again, a `seq` of true as review 1 of its device."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from prep.engine.decks.collection import CachedCollection
from prep.engine.store import Store
from prep.engine.transfer import export as ex
from prep.engine.transfer import importer
from prep.engine.transfer.export import ExportError
from tests.conftest import reviewed_store

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("where", "key", "value"),
    [
        ("reviews", "rating", True),
        ("reviews", "rating", False),
        ("reviews", "seq", True),
        ("reviews", "duration_ms", True),
        ("cards", "reps", True),
        ("cards", "state", True),
    ],
)
def test_a_json_boolean_is_no_whole_number(
    tmp_path: Path, small_collection: CachedCollection, where: str, key: str, value: bool
) -> None:
    store = reviewed_store(small_collection)
    data = json.loads(ex.to_json(store, T0))
    store.close()
    data[where][0][key] = value
    path = tmp_path / "e.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    target = Store.memory()
    before = target.dump()
    with pytest.raises(ExportError) as info:
        importer.import_file(target, path)
    message = str(info.value)
    assert (
        f"{where}[0]" in message
        and f"{key} must be a whole number, got {str(value).lower()}" in message
    )
    assert target.dump() == before


def test_the_flags_still_take_booleans(tmp_path: Path, small_collection: CachedCollection) -> None:
    """(leech, changed and removed are written as true/false in a review's state)"""
    store = reviewed_store(small_collection)
    text = ex.to_json(store, T0)
    store.close()
    assert '"leech": false' in text
    path = tmp_path / "e.json"
    path.write_text(text, encoding="utf-8")
    target = Store.memory()
    importer.import_file(target, path)
    assert target.dump()["reviews"]
