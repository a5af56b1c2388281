"""`prep export --format csv`, written as it is read: the review log, the card states, the
demo runs and the undos go out row by row into their files, so the memory an export needs
does not grow with the log (as the JSON export's: engine/transfer/jsonout.py). What is held:
one state per card (the log is a chain), the marks, the scheduler parameters (a few sets).

The bytes are exactly export.to_csv's (the whole dump, then each table's text): each row's
cells are export.csv_cells', written by the same csv writer.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from prep.engine.store import Store
from prep.engine.store.schema import CARD_COLUMNS, DEMO_RUN_COLUMNS, MARK_COLUMNS, REVIEW_COLUMNS
from prep.engine.transfer import clocks
from prep.engine.transfer.atomic import Content
from prep.engine.transfer.export import SETTINGS_CLOCK_KEY, Counts, counted, csv_cells
from prep.engine.transfer.fields import CLOCK_COLUMNS, UNDONE_COLUMNS

_BUFFER = 1 << 20  # bytes a file gathers before a write


def _file(
    columns: Iterable[str], rows: Callable[[], Iterable[dict[str, Any]]], json_cols: set[str]
) -> Callable[[Path], None]:
    """A writer of one table's file at the path it is given (rows read when it is called)."""
    columns = list(columns)

    def write(tmp: Path) -> None:
        with open(tmp, "w", encoding="utf-8", newline="", buffering=_BUFFER) as fh:
            writer = csv.writer(fh, lineterminator="\n")
            writer.writerow(columns)
            for row in rows():
                writer.writerow(csv_cells(columns, row, json_cols))
            fh.flush()
            os.fsync(fh.fileno())

    return write


def _reviews(store: Store) -> Iterable[dict[str, Any]]:
    params = {
        str(n): json.loads(text)
        for n, text in store.conn.execute("SELECT n, value FROM sched_params")
    }
    used: set[int] = set()
    for r in store.export_reviews(used):
        yield {**r, "params": params.get(r["params"])}


def _settings(store: Store) -> list[dict[str, Any]]:
    settings = store.saved_settings()
    rows = (
        []
        if settings is None
        else [{"key": k, "value": json.dumps(v)} for k, v in settings.items()]
    )
    clock = clocks.settings_clock(store, settings)
    if clock is not None:
        rows.append({"key": SETTINGS_CLOCK_KEY, "value": json.dumps(clock)})
    return rows


def csv_writers(
    store: Store, paths: dict[str, Path], counts: Counts | None = None
) -> dict[str | os.PathLike[str], Content]:
    """{file: its writer} for the CSV export's files (``paths``: export.csv_paths'), each
    reading ``store`` as it writes; the caller holds one read transaction around them all.
    ``counts`` (when given) gets the rows written per part (export.counted)."""

    def settings() -> list[dict[str, Any]]:
        if counts is not None:
            counts["settings"] = int(store.saved_settings() is not None)
        return _settings(store)

    parts = {
        "reviews": _file(
            REVIEW_COLUMNS,
            lambda: counted(counts, "reviews", _reviews(store)),
            {"prev", "next", "params"},
        ),
        "cards": _file(CARD_COLUMNS, lambda: counted(counts, "cards", store.export_cards()), set()),
        "demo_runs": _file(
            DEMO_RUN_COLUMNS, lambda: counted(counts, "demo_runs", store.export_runs()), {"metrics"}
        ),
        "marks": _file(
            (*MARK_COLUMNS, *CLOCK_COLUMNS),
            lambda: counted(counts, "marks", clocks.marks(store, store.mark_rows())),
            set(),
        ),
        "settings": _file(("key", "value"), settings, set()),
        "undone": _file(
            UNDONE_COLUMNS, lambda: counted(counts, "undone", clocks.undone(store)), set()
        ),
    }
    out: dict[str | os.PathLike[str], Content] = {paths[k]: parts[k] for k in paths}
    return out
