"""Export progress to JSON or CSV (`prep export`); engine/transfer/importer.py reads it back.

The export holds everything stored: the card states, the review log (with each review's
previous and next state), the demo runs, the marks (suspended, buried, flagged cards) and the
settings. Importing it into an empty database
restores it without loss; exporting again gives the same content (only ``exported_at``
differs).

JSON (one file)::

    {"format": "prep-export", "version": 1, "exported_at": "...Z",
     "settings": {...} | null,          # null: the database never saved settings
     "cards": [{CARD_COLUMNS...}],        # ordered by id
     "reviews": [{REVIEW_COLUMNS...}],    # in log order; prev/next are state objects,
                                          # params a key of "params" below
     "params": {KEY: {scheduler parameters}},  # what each review was made with
     "demo_runs": [{DEMO_RUN_COLUMNS...}],  # in run order; metrics is an object
     "marks": [{MARK_COLUMNS..., at, device, stamp}],  # ordered by card_id; absent in
                                          # older exports; at/device/stamp: its clock
                                          # (a mark cleared since is listed, all 0)
     "settings_clock": {at, device, stamp} | null,
     "undone": [{device, seq, card_id, at}]}  # the reviews undone (tombstones)

The clocks and undos (engine/transfer/clocks.py) let an import merge as a sync does: a later
mark or settings win whichever way they arrive, and a review undone on the exporting machine
is undone where an earlier export or a sync brought it. An older prep reads such an export
as before (it ignores them), so the version stays 1.

CSV (one table per file, UTF-8, a header row; empty cell = no value): ``FILE.csv`` is the
review log (the table a spreadsheet user wants), with the card states beside it in
``FILE.cards.csv``, the demo runs in ``FILE.demo_runs.csv``, the marks in ``FILE.marks.csv``
(with their clocks), the undos in ``FILE.undone.csv`` and the settings in
``FILE.settings.csv`` (columns key,value; the value is JSON; the settings' clock is the row
``_clock``). ``prev``/``next``/``metrics``
are JSON text in their cells. The columns are engine/store/schema.py's, in that order.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Container, Iterable, Iterator, Mapping, MutableMapping
from datetime import datetime
from pathlib import Path
from typing import Any

from prep.engine.store import Store
from prep.engine.store.schema import CARD_COLUMNS, DEMO_RUN_COLUMNS, MARK_COLUMNS, REVIEW_COLUMNS
from prep.engine.transfer.atomic import Content, WriteError, is_stdout_name, write_files
from prep.engine.transfer.clocks import progress, read_transaction
from prep.engine.transfer.fields import CLOCK_COLUMNS, UNDONE_COLUMNS

FORMAT = "prep-export"
VERSION = 1

__all__ = [
    "CARD_COLUMNS",
    "DEMO_RUN_COLUMNS",
    "FORMAT",
    "MARK_COLUMNS",
    "REVIEW_COLUMNS",
    "VERSION",
    "ExportError",
    "csv_paths",
    "export_csv",
    "export_json",
    "to_csv",
    "to_json",
]


class ExportError(Exception):
    """Bad export file, unwritable target or an import conflict; a one-line message."""


Counts = MutableMapping[str, int]  # rows written per part: reviews, cards, demo_runs, marks, ...

# how `prep export` names each part it wrote, in the order it says them
HELD = (
    ("reviews", "review"),
    ("cards", "card state"),
    ("marks", "mark"),
    ("demo_runs", "demo run"),
    ("undone", "undo"),
)


REMOVED = "cards_removed"  # of the card states, those of cards no longer in any deck


def counted(
    counts: Counts | None, part: str, rows: Iterable[dict[str, Any]]
) -> Iterator[dict[str, Any]]:
    """``rows``, each one counted under ``part`` as it is written (a mark only while it marks
    the card: a cleared mark is written with its clock, but marks nothing)."""
    if counts is not None:
        counts.setdefault(part, 0)
        if part == "cards":
            counts.setdefault(REMOVED, 0)
    for row in rows:
        if counts is not None and (part != "marks" or _marks(row)):
            counts[part] += 1
            if part == "cards" and row.get("removed"):
                counts[REMOVED] += 1
        yield row


def _marks(row: Mapping[str, Any]) -> bool:
    return bool(row.get("suspended") or row.get("buried_until") or row.get("flagged"))


def held_text(counts: Mapping[str, int]) -> str:
    """What an export holds, in words: ``19 reviews, 12 card states, 1 mark, 2 demo runs and
    the settings`` (parts with nothing in them are left out; the reviews are always said).
    The card states of cards no longer in any deck (kept: their history comes back with the
    card) are said apart: ``12 card states (3 of them for removed cards)``."""
    from prep.engine.study.present import count

    parts = []
    for part, noun in HELD:
        n = counts.get(part, 0)
        if part != "reviews" and not n:
            continue
        text = count(n, noun)
        removed = counts.get(REMOVED, 0) if part == "cards" else 0
        if removed:
            text += (
                f" ({removed} of them for {'a removed card' if removed == 1 else 'removed cards'})"
            )
        parts.append(text)
    if counts.get("settings", 0):
        parts.append("the settings")
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _finite(value: Any) -> Any:
    """``value`` with every NaN or infinity replaced by None: strict JSON has no NaN (as
    JavaScript's JSON.stringify does). Stored card states are always finite; demo metrics may
    not be."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def to_json(store: Store, now: datetime) -> str:
    """The JSON export as text (export_json streams the same bytes to a file)."""
    from prep.engine.transfer.jsonout import write_json

    buf = io.BytesIO()
    write_json(store, now, buf)
    return buf.getvalue().decode("utf-8")


# OWASP "CSV injection": a cell a spreadsheet would read as a formula starts with one of these.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutralise_cell(text: str) -> str:
    """A text cell made safe to open in a spreadsheet: one leading ' before a formula start
    (OWASP's advice) -- and before a leading ' itself, so that `unneutralise_cell` (which
    drops one leading ') gives back exactly the text."""
    return "'" + text if text.startswith((*FORMULA_STARTS, "'")) else text


def unneutralise_cell(text: str) -> str:
    return text[1:] if text.startswith("'") else text


def csv_cells(
    columns: Iterable[str], row: Mapping[str, Any], json_cols: Container[str]
) -> list[str]:
    """One row's cells as the CSV export writes them (engine/transfer/csvout.py streams them)."""
    out = []
    for col in columns:
        value = row[col]
        if value is None:
            out.append("")
        elif col in json_cols:
            text = json.dumps(_finite(value), ensure_ascii=False, allow_nan=False)
            out.append(neutralise_cell(text))
        elif isinstance(value, float):
            out.append(repr(value))  # shortest text that reads back as the same float
        elif isinstance(value, int):
            out.append(str(value))  # a number, never a formula
        else:
            out.append(neutralise_cell(str(value)))
    return out


def _csv_text(columns: Iterable[str], rows: Iterable[dict[str, Any]], json_cols: set[str]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    columns = list(columns)
    writer.writerow(columns)
    for row in rows:
        writer.writerow(csv_cells(columns, row, json_cols))
    return buf.getvalue()


CSV_SIDE_FILES = ("cards", "demo_runs", "marks", "settings", "undone")
SETTINGS_CLOCK_KEY = "_clock"  # the settings file's row holding the settings' clock  # FILE.<side>.csv beside FILE.csv


def csv_paths(path: Path) -> dict[str, Path]:
    """The files of a CSV export named ``path`` (FILE.csv): reviews, cards, demo runs, marks,
    settings, undos."""
    stem = path.name[: -len(".csv")] if path.name.lower().endswith(".csv") else path.name
    return {
        "reviews": path,
        "cards": path.with_name(f"{stem}.cards.csv"),
        "demo_runs": path.with_name(f"{stem}.demo_runs.csv"),
        "marks": path.with_name(f"{stem}.marks.csv"),
        "settings": path.with_name(f"{stem}.settings.csv"),
        "undone": path.with_name(f"{stem}.undone.csv"),
    }


def to_csv(store: Store) -> dict[str, str]:
    """The CSV export as {part: text} (parts as in csv_paths), built in memory from the whole
    dump; export_csv streams the same bytes to the files (engine/transfer/csvout.py)."""
    data = progress(store)
    settings = data["settings"]
    settings_rows = (
        []
        if settings is None
        else [{"key": k, "value": json.dumps(v)} for k, v in settings.items()]
    )
    if data["settings_clock"] is not None:
        settings_rows.append(
            {"key": SETTINGS_CLOCK_KEY, "value": json.dumps(data["settings_clock"])}
        )
    return {
        "reviews": _csv_text(
            REVIEW_COLUMNS,
            ({**r, "params": data["params"].get(r["params"])} for r in data["reviews"]),
            {"prev", "next", "params"},
        ),
        "cards": _csv_text(CARD_COLUMNS, data["cards"], set()),
        "demo_runs": _csv_text(DEMO_RUN_COLUMNS, data["demo_runs"], {"metrics"}),
        "marks": _csv_text((*MARK_COLUMNS, *CLOCK_COLUMNS), data["marks"], set()),
        "settings": _csv_text(("key", "value"), settings_rows, set()),
        "undone": _csv_text(UNDONE_COLUMNS, data["undone"], set()),
    }


def _write(files: Mapping[str | os.PathLike[str], Content]) -> None:
    try:
        write_files(files)
    except WriteError as exc:
        raise ExportError(str(exc)) from None


def _target(path: Path | str) -> Path | str:
    """What the files are written to: ``-`` (the string) is standard output, anything else a
    path (a Path, or a string such as ``./-``: the file named -)."""
    return path if is_stdout_name(path) else Path(path)


def export_json(
    store: Store, path: Path | str, now: datetime, counts: Counts | None = None
) -> None:
    """Write the JSON export to ``path``, streamed (engine/transfer/jsonout.py): its memory
    does not grow with the review log. ``counts`` gets the rows written per part."""
    from prep.engine.transfer.jsonout import write_json

    def stream(tmp: Path) -> None:
        with open(tmp, "wb") as fh:
            write_json(store, now, fh, counts)
            fh.flush()
            os.fsync(fh.fileno())

    _write({_target(path): stream})


def export_csv(store: Store, path: Path | str, counts: Counts | None = None) -> list[Path]:
    """Write the CSV export, streamed: its memory does not grow with the review log. Returns
    the files written (reviews file first); ``counts`` gets the rows written per part. The other five
    files are named after ``path``, so ``path`` must be a file (or not exist yet): beside a
    device, a FIFO or standard output (/dev/null.cards.csv) they would be files nobody named."""
    if is_stdout_name(path) or (os.path.exists(path) and not os.path.isfile(path)):
        raise ExportError(
            f"{path}: a csv export is six files named after it; give a file name (or --format json)"
        )
    side = next(
        (f".{k}.csv" for k in CSV_SIDE_FILES if Path(path).name.lower().endswith(f".{k}.csv")),
        None,
    )
    if side is not None:
        # NAME.cards.csv is the cards file of the export NAME.csv: `prep import` would read
        # NAME.csv (perhaps an older export) instead of this one
        base = Path(path).name[: -len(side)]
        raise ExportError(
            f"{path}: a name ending in {side} is the side file of a csv export named "
            f"{base}.csv; name the export {base}.csv (or another name)"
        )
    from prep.engine.transfer.csvout import csv_writers

    paths = csv_paths(Path(path))
    with read_transaction(store):  # the six files read as one state of the database
        _write(csv_writers(store, paths, counts))
    return list(paths.values())
