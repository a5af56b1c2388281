"""A review dated more than a day after this machine's clock is refused by `prep import`, naming the
row (a year-9000 review was accepted). A day: a review made where the clock ran a few hours ahead,
or stored in local time as if UTC (at most 14 hours off), still imports. Sync does not refuse them:
there they are a device's own reviews, never to be lost (engine/study/clockback.py counts them on
their own day)."""

from __future__ import annotations

import csv
import json
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from prep.engine.decks.collection import CachedCollection
from prep.engine.store import Mark, Store
from prep.engine.timeutil import parse
from prep.engine.transfer import export as ex
from prep.engine.transfer import importer
from prep.engine.transfer.export import ExportError
from prep.tui.cli import main
from tests.conftest import FIXED_NOW, reviewed_store


def _export(tmp_path: Path, collection: CachedCollection, *, row: int, at: str) -> Path:
    store = reviewed_store(collection)
    data = json.loads(ex.to_json(store, FIXED_NOW))
    store.close()
    data["reviews"][row]["reviewed_at"] = at
    path = tmp_path / "e.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _newest(tmp_path: Path, collection: CachedCollection) -> tuple[int, str]:
    store = reviewed_store(collection)
    data = json.loads(ex.to_json(store, FIXED_NOW))
    store.close()
    ats = [r["reviewed_at"] for r in data["reviews"]]
    return ats.index(max(ats)), max(ats)


def test_a_review_in_year_9000_is_refused_naming_its_row(
    tmp_path: Path, small_collection: CachedCollection
) -> None:
    path = _export(tmp_path, small_collection, row=1, at="9000-01-01T00:00:00.000000Z")
    target = Store.memory()
    before = target.dump()
    with pytest.raises(ExportError) as info:
        importer.import_file(target, path, now=FIXED_NOW + timedelta(days=4))
    message = str(info.value)
    assert "reviews[1]" in message and "9000-01-01" in message and "nothing imported" in message
    assert "\n" not in message
    assert target.dump() == before


@pytest.mark.parametrize(("hours", "taken"), [(23, True), (25, False)])
def test_a_day_ahead_of_the_clock_is_the_line(
    tmp_path: Path, small_collection: CachedCollection, hours: int, taken: bool
) -> None:
    i, at = _newest(tmp_path, small_collection)
    path = _export(tmp_path, small_collection, row=i, at=at)  # unchanged file
    clock = parse(at) - timedelta(hours=hours)  # this machine's clock behind the newest review
    assert clock is not None
    target = Store.memory()
    if taken:
        assert importer.import_file(target, path, now=clock).reviews_added > 0
    else:
        with pytest.raises(ExportError, match=rf"reviews\[{i}\]: reviewed_at {at}"):
            importer.import_file(target, path, now=clock)


def test_a_csv_export_is_held_to_the_same_rule(
    tmp_path: Path, small_collection: CachedCollection
) -> None:
    store = reviewed_store(small_collection)
    path = tmp_path / "e.csv"
    ex.export_csv(store, path)
    store.close()
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    rows[2][rows[0].index("reviewed_at")] = "9000-01-01T00:00:00.000000Z"  # reviews[1]
    with path.open("w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)
    with pytest.raises(ExportError, match=r"reviews\[1\]: reviewed_at 9000-01-01"):
        importer.import_file(Store.memory(), path, now=FIXED_NOW)


def test_the_cli_says_it_in_one_line(tmp_path: Path, small_collection: CachedCollection) -> None:
    path = _export(tmp_path, small_collection, row=0, at="9000-01-01T00:00:00.000000Z")
    done = CliRunner().invoke(main, ["--db", str(tmp_path / "p.db"), "import", str(path)])
    assert done.exit_code == 2, done.output
    lines = done.output.strip().splitlines()
    assert len(lines) == 1 and "reviews[0]" in lines[0] and "9000" in lines[0], done.output


@pytest.mark.parametrize("where", ["marks", "settings_clock"])
def test_a_mark_or_settings_clock_in_year_9000_is_refused(
    tmp_path: Path, small_collection: CachedCollection, where: str
) -> None:
    store = reviewed_store(small_collection)
    card = next(iter(small_collection.cards)).id
    store.set_mark(card, Mark(flagged=True), at=FIXED_NOW)
    store.update_settings(new_per_day=7)
    data = json.loads(ex.to_json(store, FIXED_NOW))
    store.close()
    if where == "marks":
        assert data["marks"], "the export carries a mark"
        data["marks"][0]["at"] = "9000-01-01T00:00:00.000000Z"
    else:
        assert data["settings_clock"] is not None
        data["settings_clock"]["at"] = "9000-01-01T00:00:00.000000Z"
    path = tmp_path / "e.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ExportError, match=rf"{where}(\[0\])?: at 9000-01-01"):
        importer.import_file(Store.memory(), path, now=FIXED_NOW + timedelta(days=4))
