"""`prep export`: export your progress (json, csv) or the decks as an Anki package (apkg)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from prep.engine.paths import expand_user
from prep.engine.textsafe import quoted
from prep.tui.commands.common import (
    NAMED_PATH,
    Ctx,
    UsageError,
    say_damaged,
)

if TYPE_CHECKING:
    pass


@click.command("export")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "csv", "apkg"]),
    help="json, csv or apkg (default: from the file name's extension).",
)
@click.option(
    "-o",
    "--output",
    type=NAMED_PATH,
    metavar="FILE",
    required=True,
    help="The file to write (- for stdout).",
)
@click.option("--deck", metavar="D", help="apkg only: just this deck.")
@click.pass_obj
def export_cmd(obj: Ctx, fmt: str | None, output: str, deck: str | None) -> None:
    """Export your progress (json, csv) or the decks as an Anki package (apkg).

    \b
    json  one file: {"format": "prep-export", "version": 1, "exported_at",
          "settings", "cards": [...], "reviews": [...], "demo_runs": [...],
          "marks": [...], "settings_clock", "undone": [...]}
    csv   FILE.csv is the review log, one row per review, with columns
            card_id, reviewed_at (UTC ISO-8601), rating (1 Again .. 4 Easy),
            duration_ms, prev_state (1 learning, 2 review, 3 relearning),
            prev, next (the card state before/after, JSON)
          beside it FILE.cards.csv holds the card states (id, deck, state, step,
          stability, difficulty, due, last_review, reps, lapses, leech,
          content_hash, changed, removed), FILE.demo_runs.csv the demo runs,
          FILE.marks.csv the suspended, buried and flagged cards (card_id,
          suspended, buried_until, flagged, and the clock at, device, stamp),
          FILE.undone.csv the reviews undone (device, seq, card_id, at) and
          FILE.settings.csv the settings (key, JSON value).
    apkg  the decks for Anki: one note per card (Front/Back), tags kept.

    `prep import FILE` reads a json or csv export back; every file is written
    whole or not at all. `-o -` writes json (or apkg) to standard output; a
    device or FIFO (/dev/null, a pipe) is written directly, never replaced;
    a symlink is followed; an existing file keeps its mode and hard links.
    """
    from prep.engine.study.present import count
    from prep.engine.timeutil import utcnow
    from prep.engine.transfer.atomic import STDOUT, is_stdout, is_stdout_name
    from prep.engine.transfer.export import ExportError

    to_stdout = is_stdout(output)  # "-" or /dev/stdout: the report goes to stderr
    # only the string "-" itself is standard output: `-o ./-` is the file named - (a Path of
    # it is Path("-"), so the writers are given the string "-", never a Path, for stdout)
    path = expand_user(output)
    target: Path | str = STDOUT if is_stdout_name(output) else path
    if fmt is None:
        # `-o -` alone is json, as the help and README say (stdout has no extension to go by)
        fmt = "json" if to_stdout else _EXPORT_FORMATS.get(path.suffix.lower())
        if fmt is None:
            raise UsageError(
                f"{output}: give --format json, csv or apkg (or name the file .json/.csv/.apkg)"
            )
    if deck is not None and fmt != "apkg":
        raise UsageError("--deck only applies to --format apkg (progress exports hold everything)")
    if to_stdout and fmt == "csv":
        raise UsageError(
            f"-o {output}: a csv export is six files; give a file name (or --format json)"
        )
    if to_stdout and fmt == "apkg" and sys.stdout.isatty():
        raise UsageError(
            f"-o {output}: an apkg is binary; redirect it to a file, or give a file name"
        )
    report = (lambda text: click.echo(text, err=True)) if to_stdout else click.echo
    from prep.engine.decks.deck import one_line_safe  # (a name's control characters: escaped)

    shown = "standard output" if to_stdout else one_line_safe(_shown(path))
    if not to_stdout:
        _refuse_database_target(obj, path, fmt)
    # a file already there is replaced (you named it): said so, "Replaced FILE", not "Wrote"
    replaced = set() if to_stdout else _existing(path, fmt)
    verb = "Replaced" if path in replaced and fmt != "csv" else "Wrote"
    try:
        if fmt == "apkg":
            from prep.engine.transfer.anki import write_apkg

            with obj.cached_collection() as coll:
                if deck is not None and deck not in coll.decks:
                    raise UsageError(
                        f"no deck named {quoted(deck)} (decks: {', '.join(coll.decks)})"
                    )
                notes = write_apkg(coll, target, deck=deck)
            report(f"{verb} {shown}: {count(notes, 'note')} for Anki (File > Import).")
            return
        from prep.engine.transfer.export import export_csv, export_json, held_text

        held: dict[str, int] = {}  # what the file holds, counted as it is written
        with obj.store(reading=True) as store:
            if fmt == "json":
                export_json(store, target, utcnow(), held)
                report(f"{verb} {shown}: {held_text(held)}.")
            else:
                written = export_csv(store, target, held)
                # six names do not fit one line: the count first, then one file a line
                report(f"Wrote {count(len(written), 'file')}: {held_text(held)}.")
                for file in written:
                    said = one_line_safe(str(file))
                    report(f"  {said}" + (" (replaced)" if Path(file) in replaced else ""))
            damaged = list(store.damaged_reviews)
        say_damaged(damaged, "exported")
    except ExportError as exc:
        raise UsageError(str(exc)) from None


def _existing(path: Path, fmt: str) -> set[Path]:
    """The files the export will replace: those of its names (a csv export's six) that are
    regular files now (a device or FIFO is written to, not replaced: not said)."""
    from prep.engine.transfer.export import csv_paths

    names = list(csv_paths(path).values()) if fmt == "csv" else [path]
    return {name for name in names if name.is_file()}


_EXPORT_FORMATS = {".json": "json", ".csv": "csv", ".apkg": "apkg"}


def _refuse_database_target(obj: Ctx, path: Path, fmt: str) -> None:
    """An export never writes over the progress database or the files SQLite keeps beside it."""
    from prep.engine.store import resolve_db_path
    from prep.engine.transfer.dbfiles import database_target
    from prep.engine.transfer.export import csv_paths

    targets = list(csv_paths(path).values()) if fmt == "csv" else [path]
    hit = database_target(targets, resolve_db_path(obj.db))
    if hit is not None:
        target, kept = hit
        raise UsageError(
            f"-o {target}: that is the progress database's own file ({kept}); exporting over "
            "it would replace your progress. Name another file"
        )


def _shown(path: Path) -> str:
    """The file written, as a message names it: the file named - as ./- (never "-", which
    would read as standard output)."""
    return os.curdir + os.sep + "-" if str(path) == "-" else str(path)
