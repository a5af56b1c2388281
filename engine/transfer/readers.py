"""Reading a progress export (`prep import`): a JSON export as a stream, or a CSV export a
row at a time, each row checked as it is read (engine/transfer/fields.py); the reviews and
demo runs are not held but read again when iterated (``Rows``). engine/transfer/importer.py
merges what is read into the store.
"""

from __future__ import annotations

import csv
import io
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from prep.engine.store.schema import (
    CARD_COLUMNS,
    DEMO_RUN_COLUMNS,
    MARK_COLUMNS,
    REVIEW_COLUMNS,
    REVIEW_COLUMNS_V1,
)
from prep.engine.study.scheduler import Scheduler
from prep.engine.transfer.export import (
    FORMAT,
    SETTINGS_CLOCK_KEY,
    VERSION,
    ExportError,
    csv_paths,
    unneutralise_cell,
)
from prep.engine.transfer.fields import (
    UNDONE_COLUMNS,
    _Bad,
    _card_row,
    _demo_run_row,
    _mark_row,
    _no_constant,
    _review_key,
    _review_row,
    _settings,
    _settings_clock,
    _short,
    _undone_row,
    loads_strict,
)
from prep.engine.transfer.rows import ReviewIds, Rows, stamp


@dataclass
class ExportData:
    """A parsed, validated export (rows ready to insert)."""

    source: str
    settings: dict[str, Any] | None
    cards: list[dict[str, Any]]
    reviews: list[dict[str, Any]] | Rows  # Rows: read again from the file when iterated
    demo_runs: list[dict[str, Any]] | Rows
    marks: list[dict[str, Any]]  # none from older exports
    # undos (tombstones) and the settings' clock: none from older exports
    undone: list[dict[str, Any]] = field(default_factory=list)
    settings_clock: dict[str, Any] | None = None


class Piped:
    """An export read whole from standard input (`prep import -`, at most MAX_EXPORT_BYTES):
    its bytes held, read again from memory where a file would be opened again (a pipe cannot
    be), and named "standard input" in every message."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __str__(self) -> str:
        return STDIN


STDIN = "standard input"
_EMPTY = ("the file is empty", "nothing came on it")  # (a file, standard input)
Source = Path | Piped  # (an export file, or the one on standard input)


def _not_export(path: Source, why: str) -> ExportError:
    return ExportError(f"{path}: not a prep export ({why})")


# What a binary file a learner might hand `prep import` is, by its first bytes.
_MAGIC = (
    (b"PK\x03\x04", "a zip archive, e.g. an Anki package: prep imports its own json or csv export"),
    (
        b"SQLite format 3\x00",
        "an SQLite database, e.g. a prep database or an Anki collection: "
        "prep imports its own json or csv export (`prep backup --restore` puts back a backup)",
    ),
    (b"\x1f\x8b", "gzip-compressed: decompress it first"),
)


def _not_text(path: Source) -> ExportError:
    """The "not UTF-8 text" refusal, saying what the file is when its first bytes tell."""
    try:
        if isinstance(path, Piped):
            head = path.data[:16]
        else:
            with open(path, "rb") as f:
                head = f.read(16)
    except OSError:
        head = b""
    for magic, what in _MAGIC:
        if head.startswith(magic):
            return _not_export(path, what)
    return _not_export(path, "not UTF-8 text")


# An export of a very long history is tens of MB; a file past this is not one of ours, and
# reading it whole would only cost memory.
MAX_EXPORT_BYTES = 256 * 1024 * 1024


def _rows(
    path: Source, items: Any, parse_row: Callable[[dict[str, Any]], dict[str, Any]], what: str
) -> list[dict[str, Any]]:
    if not isinstance(items, list):
        raise _not_export(path, f"{what!r} must be a list")
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ExportError(f"{path}: {what}[{i}]: must be an object")
        try:
            out.append(parse_row(item))
        except _Bad as exc:
            raise ExportError(f"{path}: {what}[{i}]: {exc}") from None
    return out


def _open_text(path: Source) -> IO[str]:
    """The export file as a text stream (UTF-8, a BOM skipped), opened only when it is a
    regular file within MAX_EXPORT_BYTES (read_regular_file's checks, without reading it);
    standard input's export from the bytes held."""
    if isinstance(path, Piped):
        return io.TextIOWrapper(io.BytesIO(path.data), encoding="utf-8-sig", newline="")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise ExportError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ExportError(f"{path}: is a folder, not an export file") from None
    except OSError as exc:
        raise ExportError(f"{path}: cannot read: {exc.strerror or exc}") from None
    info = os.fstat(fd)
    why = None
    if stat.S_ISDIR(info.st_mode):
        why = "is a folder, not an export file"
    elif not stat.S_ISREG(info.st_mode):
        why = "cannot read: not a regular file (a device, FIFO or socket)"
    elif info.st_size > MAX_EXPORT_BYTES:
        why = f"cannot read: {info.st_size} bytes; an export is at most {MAX_EXPORT_BYTES >> 20} MB"
    if why is not None:
        os.close(fd)
        raise ExportError(f"{path}: {why}")
    return open(fd, encoding="utf-8-sig", newline="")  # noqa: SIM115 (the caller closes it)


def read_json(
    path: Source, watch: Callable[[], Callable[[dict[str, Any], int], None]] | None = None
) -> ExportData:
    """Read a JSON export as a stream (engine/transfer/jsonstream.py): each row of its lists
    is checked as it is read; neither the file's text nor its parsed tree is held whole, and
    its reviews and demo runs not at all: they are ``Rows``, read again when iterated."""
    from prep.engine.transfer.jsonstream import STREAMED, Empty, StreamError, read_object

    path = path if isinstance(path, Piped) else Path(path)
    parsers = {
        "cards": _card_row,
        "reviews": _review_row,
        "demo_runs": _demo_run_row,
        "marks": _mark_row,
        "undone": _undone_row,
    }
    lists: dict[str, list[dict[str, Any]]] = {}  # cards, marks and undos (a few per card)
    counts: dict[str, int] = {}  # rows of each list
    lists_seen: dict[str, int] = {}  # lists under each key (a key given twice: the last wins)
    ids = ReviewIds(_review_key)
    param_refs: dict[str, int] = {}  # params key -> the first review that names it
    bad: dict[str, ExportError] = {}  # the first bad row of each list (said in list order)
    when = stamp(path) if not isinstance(path, Piped) and path.exists() else None

    def rows(key: str) -> Callable[[Any], None] | None:
        nonlocal ids
        seen = None
        parse_row = parsers.get(key)
        if parse_row is None:
            return None
        lists_seen[key] = lists_seen.get(key, 0) + 1
        out = lists[key] = []  # (a key given twice: the last wins, as json.loads)
        counts[key] = 0
        if key == "reviews":
            ids = ReviewIds(_review_key)
            param_refs.clear()
            seen = watch() if watch is not None else None
        bad.pop(key, None)

        def take(item: Any) -> None:
            i = counts[key]
            counts[key] += 1
            if key in bad:
                return  # past a bad row only the JSON is read on
            if not isinstance(item, dict):
                bad[key] = ExportError(f"{path}: {key}[{i}]: must be an object")
                return
            try:
                row = parse_row(item)
            except _Bad as exc:
                bad[key] = ExportError(f"{path}: {key}[{i}]: {exc}")
                return
            if key in ("cards", "marks", "undone"):
                out.append(row)
            elif key == "reviews":
                ids.add(i, row)
                if seen is not None:
                    seen(row, i)
                if row["params"] is not None:
                    param_refs.setdefault(row["params"], i)

        return take

    try:
        with _open_text(path) as stream:
            data = read_object(stream, rows, parse_constant=_no_constant)
    except Empty:
        raise _not_export(path, _EMPTY[isinstance(path, Piped)]) from None
    except UnicodeDecodeError:
        raise _not_text(path) from None
    except StreamError as exc:
        raise _not_export(path, str(exc)) from None
    except RecursionError:
        raise _not_export(path, "nested too deeply") from None
    except ValueError as exc:  # int(): more than 4300 digits; or our NaN/Infinity refusal
        message = str(exc).split(";")[0]
        raise _not_export(
            path, message if len(message) < 120 else "a number too long to read"
        ) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise _not_export(path, f'no "format": "{FORMAT}" field')
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise _not_export(path, f"bad version {_short(version)}")
    if version > VERSION:  # (a bool or a 5000-digit int never gets here: see above)
        raise ExportError(
            f"{path}: export version {version} is newer than this prep reads ({VERSION}); "
            "upgrade prep"
        )
    for key in ("cards", "reviews"):
        if key not in data:
            raise _not_export(path, f"no {key!r} list; the file may be truncated")
    try:
        settings = _settings(data.get("settings"))
        settings_clock = _settings_clock(data.get("settings_clock"))
    except _Bad as exc:
        raise ExportError(f"{path}: {exc}") from None
    for key in parsers:
        if key in data and data[key] is not STREAMED:  # (not a list: read whole)
            _rows(path, data[key], parsers[key], key)  # raises: "... must be a list"
        if key in bad:
            raise bad[key]
    params = _params(path, data.get("params", {}))
    missing = [(i, key) for key, i in param_refs.items() if key not in params]
    if missing:
        i, key = min(missing)
        raise ExportError(
            f"{path}: reviews[{i}]: params {_short(key)} is not in the export's params"
        )

    def with_params(r: dict[str, Any]) -> dict[str, Any]:
        # each review with the parameters it was made with
        return r if r["params"] is None else {**r, "params": params[r["params"]]}

    def again(key: str) -> Rows:
        if key not in lists_seen:
            return Rows(lambda: iter(()), 0)
        change = with_params if key == "reviews" else None
        return Rows(
            lambda: _json_again(path, when, key, lists_seen[key], parsers[key], change),
            counts[key],
        )

    reviews = again("reviews")
    reviews.ids = ids
    return ExportData(
        source=str(path),
        settings=settings,
        cards=lists.get("cards", []),
        reviews=reviews,
        demo_runs=again("demo_runs"),
        marks=lists.get("marks", []),
        undone=lists.get("undone", []),
        settings_clock=settings_clock if settings is not None else None,
    )


def _changed(path: Source, why: str = "") -> ExportError:
    return ExportError(f"{path}: changed while it was being imported{why}; nothing imported")


def _json_again(
    path: Source,
    when: Any,
    key: str,
    occurrence: int,
    parse_row: Callable[[dict[str, Any]], dict[str, Any]],
    change: Callable[[dict[str, Any]], dict[str, Any]] | None,
) -> Iterator[dict[str, Any]]:
    """The rows of list ``key`` of a JSON export read_json read before, read again."""
    from prep.engine.transfer.jsonstream import iter_list

    if not isinstance(path, Piped) and stamp(path) != when:
        raise _changed(path)
    with _open_text(path) as stream:
        items = enumerate(iter_list(stream, key, occurrence, parse_constant=_no_constant))
        while True:
            try:
                i, item = next(items)
            except StopIteration:
                return
            except (ValueError, RecursionError) as exc:  # (StreamError, UnicodeDecodeError)
                raise _changed(path, f" ({_short(str(exc), 100)})") from None
            try:
                if not isinstance(item, dict):
                    raise _Bad("must be an object")
                row = parse_row(item)
            except _Bad as exc:
                raise _changed(path, f" ({key}[{i}]: {exc})") from None
            yield change(row) if change else row


def _params(path: Source, raw: Any) -> dict[str, dict[str, Any]]:
    """The export's scheduler parameters ({key: replay params}), each checked."""
    if not isinstance(raw, dict) or len(raw) > 100_000:
        raise _not_export(path, "'params' must be an object")
    for key, value in raw.items():
        try:
            if not isinstance(value, dict):
                raise ValueError("must be an object")
            Scheduler.from_replay_params(value)
        except (TypeError, ValueError, AttributeError) as exc:
            raise ExportError(f"{path}: params {_short(key)}: {str(exc).splitlines()[0]}") from None
    return raw


def _read_csv(
    path: Path,
    columns: tuple[str, ...],
    parse_row: Callable[[dict[str, Any]], dict[str, Any]],
    *,
    required_columns: Iterable[str] | None = None,
) -> list[dict[str, Any]]:
    return list(_iter_csv(path, columns, parse_row, required_columns=required_columns))


def _iter_csv(
    path: Path,
    columns: tuple[str, ...],
    parse_row: Callable[[dict[str, Any]], dict[str, Any]],
    *,
    required_columns: Iterable[str] | None = None,
) -> Iterator[dict[str, Any]]:
    with _open_text(path) as stream:  # a row at a time: the file is never held whole
        try:
            yield from _read_csv_rows(path, stream, columns, parse_row, required_columns)
        except UnicodeDecodeError:
            raise _not_text(path) from None


def _read_csv_rows(
    path: Path,
    stream: IO[str],
    columns: tuple[str, ...],
    parse_row: Callable[[dict[str, Any]], dict[str, Any]],
    required_columns: Iterable[str] | None,
) -> Iterator[dict[str, Any]]:
    reader = csv.reader(stream)
    try:
        header = next(reader, None)
    except csv.Error as exc:
        raise _not_export(path, f"line 1: {exc}") from None
    while header == []:  # blank lines before the header
        header = next(reader, None)
    if header is None or not "".join(header).strip():
        raise _not_export(path, "the file is empty")
    header = [h.strip() for h in header]
    missing = [c for c in (required_columns or columns) if c not in header]
    if missing:
        raise _not_export(path, f"line 1: the header lacks column(s) {', '.join(missing)}")
    records = iter(reader)
    while True:
        try:
            record = next(records)
        except StopIteration:
            return
        except csv.Error as exc:
            raise _not_export(path, f"line {reader.line_num}: {exc}") from None
        line = reader.line_num
        if not record:
            continue
        if len(record) != len(header):
            raise ExportError(
                f"{path}:{line}: expected {len(header)} fields, found {len(record)}"
                " (the file may be truncated)"
            )
        record = [unneutralise_cell(cell) for cell in record]  # see export.neutralise_cell
        try:
            row = parse_row(dict(zip(header, record, strict=True)))
        except _Bad as exc:
            raise ExportError(f"{path}:{line}: {exc}") from None
        yield row


def _csv_again(
    path: Path,
    columns: tuple[str, ...],
    parse_row: Any,
    each: Callable[[int, dict[str, Any]], None] | None = None,
    **kw: Any,
) -> Rows:
    """The rows of a CSV file, checked in a first reading (``each`` sees them) and read
    again when iterated (each reading checks each row: a changed file cannot slip by)."""
    when = stamp(path)
    n = 0
    for row in _iter_csv(path, columns, parse_row, **kw):
        if each is not None:
            each(n, row)
        n += 1

    def again() -> Iterator[dict[str, Any]]:
        if stamp(path) != when:
            raise _changed(path)
        return _iter_csv(path, columns, parse_row, **kw)

    return Rows(again, n)


def read_csv(
    path: Path, watch: Callable[[], Callable[[dict[str, Any], int], None]] | None = None
) -> ExportData:
    """Read a CSV export: ``path`` is the review log (FILE.csv; FILE.cards.csv also works).
    Its reviews and demo runs are checked here and read again when iterated (``Rows``)."""
    path = Path(path)
    if path.name.lower().endswith(".cards.csv"):
        path = path.with_name(path.name[: -len(".cards.csv")] + ".csv")
    paths = csv_paths(path)
    for key in ("reviews", "cards"):
        if not paths[key].exists():
            raise ExportError(
                f"{paths[key]}: no such file (a CSV export is {paths['reviews'].name} "
                f"with {paths['cards'].name} beside it)"
            )
    log = paths["reviews"]

    def review(raw: dict[str, Any]) -> dict[str, Any]:
        r = _review_row(raw)
        if r["params"] is not None:  # the parameters are JSON in their cells
            try:
                r["params"] = _params(log, {"p": loads_strict(r["params"])})["p"]
            except ValueError:
                raise _Bad("params is not JSON") from None
        return r

    ids = ReviewIds(_review_key)
    seen = watch() if watch is not None else None

    def each(i: int, r: dict[str, Any]) -> None:
        ids.add(i, r)
        if seen is not None:
            seen(r, i)

    reviews = _csv_again(log, REVIEW_COLUMNS, review, each, required_columns=REVIEW_COLUMNS_V1)
    reviews.ids = ids
    cards = _read_csv(paths["cards"], CARD_COLUMNS, _card_row)
    runs = Rows(lambda: iter(()), 0)
    if paths["demo_runs"].exists():
        runs = _csv_again(paths["demo_runs"], DEMO_RUN_COLUMNS, _demo_run_row)
    marks: list[dict[str, Any]] = []
    if paths["marks"].exists():  # older exports have no marks file
        marks = _read_csv(paths["marks"], MARK_COLUMNS, _mark_row)
    undone: list[dict[str, Any]] = []
    if paths["undone"].exists():  # older exports have no undos file
        undone = _read_csv(paths["undone"], UNDONE_COLUMNS, _undone_row)
    settings = settings_clock = None
    if paths["settings"].exists():
        pairs = _read_csv(paths["settings"], ("key", "value"), lambda r: r)
        raw: dict[str, Any] = {}
        for i, pair in enumerate(pairs):
            try:
                raw[pair["key"]] = loads_strict(pair["value"])
            except ValueError:
                raise ExportError(
                    f"{paths['settings']}: row {i + 1}: value of {_short(pair['key'])} is not JSON"
                ) from None
        clock = raw.pop(SETTINGS_CLOCK_KEY, None)  # (a row of its own: not a setting)
        try:
            settings = _settings(raw) if raw else None  # header only: no settings saved
            settings_clock = _settings_clock(clock) if settings is not None else None
        except _Bad as exc:
            raise ExportError(f"{paths['settings']}: {exc}") from None
    return ExportData(str(path), settings, cards, reviews, runs, marks, undone, settings_clock)


def readable(path: Source) -> None:
    """ExportError when ``path`` cannot be an export (missing, a folder, not a regular file,
    too large): the import says so before it opens the database (a mistyped name left a new
    empty database, and a backup of it, behind). Standard input's was read within bounds."""
    _open_text(path if isinstance(path, Piped) else Path(path)).close()


def read_piped(stream: IO[bytes]) -> Piped:
    """The export on standard input, read whole within MAX_EXPORT_BYTES (`< /dev/zero` is
    refused once past it, not read until the memory runs out): it is read twice, and a pipe
    cannot be read again. ExportError, worded as `prep grade --answers -` words it."""
    data = stream.read(MAX_EXPORT_BYTES + 1)
    if len(data) > MAX_EXPORT_BYTES:
        raise ExportError(f"{STDIN}: more than {MAX_EXPORT_BYTES:,} bytes; too big to be read")
    return Piped(data)


def read_export(
    path: Source, watch: Callable[[], Callable[[dict[str, Any], int], None]] | None = None
) -> ExportData:
    """Read a JSON or CSV export, told apart by extension, else by content. ``watch()``,
    called as the reviews' list begins, gives what sees each checked review as it is read.
    Standard input holds a JSON export (a CSV export is several files)."""
    path = path if isinstance(path, Piped) else Path(path)
    name = "" if isinstance(path, Piped) else path.name.lower()
    if name.endswith(".json"):
        return read_json(path, watch)
    if name.endswith(".csv") and not isinstance(path, Piped):
        return read_csv(path, watch)
    try:
        with _open_text(path) as stream:
            start = stream.read(4096)  # enough to tell them apart (not the whole file)
    except UnicodeDecodeError:
        raise _not_text(path) from None
    head = start.lstrip()[:1]
    if head == "{":
        return read_json(path, watch)
    if head == "":
        raise _not_export(path, _EMPTY[isinstance(path, Piped)])
    if start.startswith(REVIEW_COLUMNS[0]):
        if isinstance(path, Piped):
            raise ExportError(
                f"{STDIN}: a CSV export is several files (FILE.csv with FILE.cards.csv beside "
                "it): name FILE.csv; standard input takes a JSON export"
            )
        return read_csv(path, watch)
    raise _not_export(path, "neither a JSON export nor a CSV review log")
