"""`prep export` says what the file holds (user12's note: "19 reviews" while the file also held
the card states, marks, demo runs, undos and settings), counted as the rows are written, so
the line and the file agree."""

from __future__ import annotations

import csv
import json
from dataclasses import replace
from pathlib import Path

import pytest

from prep.engine.decks.collection import CachedCollection
from prep.engine.store import Store
from prep.engine.transfer.export import held_text
from tests.test_export import cli, history


def _filled(path: Path, coll: CachedCollection) -> None:
    store = Store.open(path)
    history(store, coll)  # reviews over three days and one demo run
    ids = sorted(c.id for c in coll.cards)
    store.set_mark(ids[0], replace(store.mark(ids[0]), flagged=True))
    store.set_mark(ids[1], replace(store.mark(ids[1]), suspended=True))
    store.set_mark(ids[1], replace(store.mark(ids[1]), suspended=False))  # cleared: no mark
    store.save_settings(replace(store.settings(), new_per_day=7))
    store.undo_last()
    store.close()


def _said(out: str) -> str:
    line = next(line for line in out.splitlines() if line.startswith("Wrote "))
    assert line.endswith("."), out
    return line.split(": ", 1)[1].removesuffix(".")


def test_json_export_names_every_part_it_holds(
    tmp_path: Path, small_collection: CachedCollection
) -> None:
    db = tmp_path / "p.db"
    _filled(db, small_collection)
    out = tmp_path / "x.json"
    done = cli(db, "export", "-o", str(out))
    assert done.exit_code == 0, done.output
    data = json.loads(out.read_text())
    marked = [m for m in data["marks"] if m["flagged"] or m["suspended"] or m["buried_until"]]
    assert len(data["marks"]) == 2 and len(marked) == 1  # the cleared one is not a mark
    want = (
        f"{len(data['reviews'])} reviews, {len(data['cards'])} card states, 1 mark, "
        f"1 demo run, {len(data['undone'])} undo and the settings"
    )
    assert len(data["undone"]) == 1 and data["settings"] is not None
    assert _said(done.output) == want


def test_csv_export_says_the_same_as_json(
    tmp_path: Path, small_collection: CachedCollection
) -> None:
    db = tmp_path / "p.db"
    _filled(db, small_collection)
    said_json = _said(cli(db, "export", "-o", str(tmp_path / "x.json")).output)
    done = cli(db, "export", "-o", str(tmp_path / "x.csv"))
    assert done.exit_code == 0, done.output
    assert _said(done.output) == said_json
    with open(tmp_path / "x.cards.csv", newline="", encoding="utf-8") as fh:
        cards = len(list(csv.reader(fh))) - 1
    assert f"{cards} card states" in said_json


def test_csv_export_lists_its_files_one_a_line(
    tmp_path: Path, small_collection: CachedCollection
) -> None:
    """Six file names on one line ran past any terminal (note13): the count, then a line each."""
    db = tmp_path / "p.db"
    _filled(db, small_collection)
    done = cli(db, "export", "-o", str(tmp_path / "x.csv"))
    assert done.exit_code == 0, done.output
    lines = done.output.strip().splitlines()
    assert lines[0].startswith("Wrote 6 files: ")
    files = [line.strip() for line in lines[1:]]
    assert files[0] == str(tmp_path / "x.csv")  # the review log first
    assert sorted(files) == sorted(str(p) for p in tmp_path.glob("x*.csv"))
    assert all(line.startswith("  ") for line in lines[1:])


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_removed_cards_states_are_said_apart(
    tmp_path: Path, small_collection: CachedCollection, fmt: str
) -> None:
    """A card gone from the decks keeps its state (its history comes back with it), and the
    export holds it: the line counts what the file holds and says which are removed cards'."""
    db = tmp_path / "p.db"
    _filled(db, small_collection)
    with Store.open(db) as store, store.transaction():
        store.conn.execute(
            "UPDATE cards SET removed = 1 WHERE id IN (SELECT id FROM cards LIMIT 2)"
        )
    out = tmp_path / f"x.{fmt}"
    done = cli(db, "export", "-o", str(out))
    assert done.exit_code == 0, done.output
    if fmt == "json":
        states = json.loads(out.read_text())["cards"]
    else:
        with open(tmp_path / "x.cards.csv", newline="", encoding="utf-8") as fh:
            states = list(csv.DictReader(fh))
    removed = [s for s in states if str(s["removed"]) in ("1", "True", "true")]
    assert len(removed) == 2
    assert f"{len(states)} card states (2 of them for removed cards)," in _said(done.output)


@pytest.mark.parametrize(
    ("counts", "text"),
    [
        ({}, "0 reviews"),
        ({"reviews": 1, "cards": 1}, "1 review and 1 card state"),
        ({"reviews": 0, "settings": 1}, "0 reviews and the settings"),
        ({"reviews": 2, "marks": 0, "demo_runs": 2, "undone": 0}, "2 reviews and 2 demo runs"),
        (
            {"reviews": 3, "cards": 4, "cards_removed": 1, "settings": 1},
            "3 reviews, 4 card states (1 of them for a removed card) and the settings",
        ),
    ],
)
def test_held_text(counts: dict[str, int], text: str) -> None:
    assert held_text(counts) == text
