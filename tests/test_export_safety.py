"""What we export is safe to open (issue 10, item 6): CSV cells a spreadsheet would run as a
formula are neutralised (OWASP), JSON is strict (no NaN), and an imported run of a demo this
prep does not have is never shown as verified."""

from __future__ import annotations

import csv
import json
import math
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from prep.engine.decks.collection import CachedCollection
from prep.engine.store import Store
from prep.engine.study import stats as stats_mod
from prep.engine.transfer import export as ex
from prep.engine.transfer import importer
from prep.engine.transfer.export import neutralise_cell, unneutralise_cell
from prep.tui.cli import main

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
HOSTILE = ['=HYPERLINK("http://x","y")', "+1+1", "-2+3", "@SUM(A1)", "'quoted", "plain"]


@pytest.mark.parametrize("text", [*HOSTILE, "\tTAB", "\rCR", "", "''two"])
def test_neutralise_is_safe_and_exactly_undone(text: str) -> None:
    cell = neutralise_cell(text)
    assert not cell.startswith(ex.FORMULA_STARTS)
    assert unneutralise_cell(cell) == text


def test_csv_cells_never_start_a_formula_and_round_trip(tmp_path: Path) -> None:
    store = Store.memory()
    for i, name in enumerate(HOSTILE):
        store.record_demo_run(
            name=name, device="=cmd|' /C calc'!A0", passed=True, seconds=0.5 + i, ran_at=T0
        )
    ex.export_csv(store, tmp_path / "p.csv")
    with open(tmp_path / "p.demo_runs.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    cells = [cell for row in rows[1:] for cell in row]
    assert cells and not any(c.startswith(ex.FORMULA_STARTS) for c in cells), cells
    back = Store.memory()
    importer.import_file(back, tmp_path / "p.csv")
    assert [r["name"] for r in back.dump()["demo_runs"]] == HOSTILE
    assert back.dump()["demo_runs"] == store.dump()["demo_runs"]


def test_json_export_is_strict(tmp_path: Path) -> None:
    store = Store.memory()
    store.record_demo_run(
        name="block-diagonal",
        device="cpu",
        passed=False,
        seconds=1.0,
        metrics={"max_error": math.nan, "ratio": math.inf, "ok": 1.5},
        ran_at=T0,
    )
    text = ex.to_json(store, T0)

    def refuse(token: str) -> None:
        raise AssertionError(f"{token} in the export")

    data = json.loads(text, parse_constant=refuse)
    assert data["demo_runs"][0]["metrics"] == {"max_error": None, "ratio": None, "ok": 1.5}


def test_an_unknown_demo_is_not_verified(
    tmp_path: Path, small_collection: CachedCollection
) -> None:
    store = Store.memory()
    store.record_demo_run(name="block-diagonal", device="cpu", passed=True, seconds=1, ran_at=T0)
    store.record_demo_run(name="made-up-demo", device="cpu", passed=True, seconds=1, ran_at=T0)
    result = stats_mod.compute(store, small_collection, T0, known_demos=["block-diagonal"])
    assert result.demos.verified == ["block-diagonal"]
    from prep.tui.reports import stats_text

    text = stats_text(result)
    assert "1 verified" in text
    assert "????  made-up-demo" in text and "not verified" in text


def test_prep_stats_counts_only_demos_it_has(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    with Store.open(db) as store:
        store.record_demo_run(name="made-up-demo", device="cpu", passed=True, seconds=1, ran_at=T0)
    result = CliRunner().invoke(main, ["--db", str(db), "stats", "--json"])
    assert result.exit_code == 0, result.output
    demos = json.loads(result.stdout)["demos"]
    assert demos["verified"] == [] and demos["latest"][0]["known"] is False
