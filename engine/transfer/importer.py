"""Import a progress export back (`prep import`): read and validate a JSON or CSV export
(engine/transfer/export.py writes them), then merge it into the store.

Importing is all or nothing (one transaction) and idempotent: a review's identity is its id
(the device that made it and its number there, which exports carry; an older export's
reviews have none and are matched by card, time and previous state). A review already held
(by import or sync, even with states a replay rewrote) or undone here is skipped, as is a card state or demo run already stored
unchanged. A review for the same card and time from the same state with different data is a
conflict (a damaged or edited file): the import stops with an error naming the card and
nothing is changed. A card whose history went on both here and in the file (since the export
was made) is merged by `prep sync`'s rules (engine/sync/merge.py): the file's reviews not held
here join this database's log with their own ids, and the card is replayed from the union in
time order. Settings are taken from the file only when the database has none saved. Marks
(suspended, buried, flagged) are added for cards with no mark here and skipped where the same
mark is stored; a card marked differently here keeps this database's mark (a mark is
last-writer-wins, and an export's marks carry no time). A bury that has run out counts as no
mark.

Size: about 830 lines, half of them the field validators (one refusal message per field and
kind of bad value, what makes a hostile file fail with one line). The next split is those
validators and row readers (``_card_row`` .. ``read_export``) into a reader module, leaving the
merge (``import_data``) here.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from prep.engine.decks.deck import CONTROL, SLUG
from prep.engine.store import Mark, Store, state_from_json, state_to_json
from prep.engine.store.schema import (
    CARD_COLUMNS,
    DEMO_RUN_COLUMNS,
    MARK_COLUMNS,
    REVIEW_COLUMNS,
    REVIEW_COLUMNS_V1,
    SCHEDULE_COLUMNS,
)
from prep.engine.study.marks import in_force
from prep.engine.study.present import count
from prep.engine.study.scheduler import CardState, Scheduler, Settings, state_problem
from prep.engine.timeutil import fmt, parse, stored_time_problem, utcnow
from prep.engine.transfer.export import FORMAT, VERSION, ExportError, csv_paths, unneutralise_cell
from prep.engine.transfer.rows import ReviewIds, Rows, stamp

# --- reading an export ---------------------------------------------------------------------


class _Bad(Exception):
    """A bad value; the reader adds where it was."""


# Imported JSON may be hostile: no NaN/Infinity tokens; nesting and number length bounded.
# The rows have a fixed shape that validation holds; only demo metrics are free-form, and
# they are held to _MAX_JSON_DEPTH levels.
_MAX_JSON_DEPTH = 64


def _no_constant(token: str) -> Any:
    raise ValueError(f"{token} is not a JSON number")


def loads_strict(text: str) -> Any:
    """``json.loads`` for files from outside: raises ValueError (one line) on invalid JSON,
    NaN/Infinity, nesting too deep for the parser, or a number too long to convert."""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except ValueError as exc:  # int(): more than 4300 digits; or our NaN/Infinity refusal
        message = str(exc).split(";")[0]
        raise ValueError(message if len(message) < 120 else "a number too long to read") from None


def _depth_over(value: Any, limit: int) -> bool:
    """Whether ``value`` nests lists/objects more than ``limit`` levels (iteratively)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _slug(value: Any, key: str, *, required: bool = True) -> str:
    text = _text(value, key, required=required)
    if text is None or (text == "" and not required):
        return text or ""
    if len(text) > 200 or not SLUG.match(text):
        raise _Bad(f"{key} {_short(text)} is not a slug (lowercase letters, digits, dashes)")
    return text


def _label(value: Any, key: str, *, required: bool = False) -> str | None:
    """Short text without control characters (a demo name, a device)."""
    text = _text(value, key, required=required)
    if text is not None and (len(text) > 200 or CONTROL.search(text)):
        raise _Bad(f"{key} {_short(text)} is not a short plain text")
    return text


def _schedulable(state: CardState, what: str) -> None:
    why = state_problem(state)
    if why is not None:
        raise _Bad(f"{what}: {why}")


def _req(row: dict[str, Any], key: str) -> Any:
    if key not in row:
        raise _Bad(f"missing field {key!r}")
    return row[key]


def _opt_int(value: Any, key: str, *, lo: int | None = None, hi: int | None = None) -> int | None:
    if value is None or value == "":
        return None
    return _int(value, key, lo=lo, hi=hi)


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _int(value: Any, key: str, *, lo: int | None = None, hi: int | None = None) -> int:
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            raise _Bad(f"{key} must be a whole number, got {_short(value)}") from None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int):
        raise _Bad(f"{key} must be a whole number, got {_short(value)}")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        bounds = f"between {lo} and {hi}" if hi is not None else f">= {lo}"
        raise _Bad(f"{key} must be {bounds}, got {value}")
    # SQLite stores 64-bit ints: anything wider is refused here, not an OverflowError later
    if not _INT64_MIN <= value <= _INT64_MAX:
        low = _INT64_MIN if lo is None else lo
        raise _Bad(f"{key} must be between {low} and {_INT64_MAX}, got {value}")
    return value


def _opt_float(value: Any, key: str) -> float | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise _Bad(f"{key} must be a number, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise _Bad(f"{key} must be a number, got {_short(value)}") from None
    except OverflowError:  # an int too large for a float
        raise _Bad(f"{key} must be a finite number, got {_short(value)}") from None
    if not math.isfinite(number):
        raise _Bad(f"{key} must be a finite number, got {_short(value)}")
    return number


def _flag(value: Any, key: str) -> int:
    if isinstance(value, bool):
        return int(value)
    return _int(value, key, lo=0, hi=1)


def _time(value: Any, key: str, *, required: bool = False) -> str | None:
    if value is None or value == "":
        if required:
            raise _Bad(f"missing {key}")
        return None
    if not isinstance(value, str):
        raise _Bad(
            f"{key} must be a UTC time like 2026-03-02T09:00:00.000000Z, got {_short(value)}"
        )
    try:
        when = parse(value)
    except (ValueError, OverflowError):  # OverflowError: no UTC form (year 0 or 10000)
        raise _Bad(f"{key} is not a time: {_short(value)}") from None
    assert when is not None
    why = stored_time_problem(when)
    if why is not None:  # year 999 (not fixed-width text) or 9999 (no day after it)
        raise _Bad(f"{key} {_short(value)} {why}")
    return fmt(when)


def _text(value: Any, key: str, *, required: bool = False) -> str | None:
    if value is None or (value == "" and required):
        if required:
            raise _Bad(f"missing {key}")
        return None
    if not isinstance(value, str):
        raise _Bad(f"{key} must be text, got {_short(value)}")
    return value


def _state_json(value: Any, key: str, card_id: str, *, required: bool) -> str | None:
    """A prev/next state (object, or JSON text from CSV) -> the canonical stored text."""
    if value is None or value == "":
        if required:
            raise _Bad(f"missing {key} (the card state after the review)")
        return None
    if isinstance(value, str):
        try:
            value = loads_strict(value)
        except ValueError as exc:
            raise _Bad(f"{key} is not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise _Bad(f"{key} must be a card state object, got {type(value).__name__}")
    unknown = sorted(set(value) - set(CardState.__dataclass_fields__))
    if unknown:
        raise _Bad(f"{key}: unknown field {_short(unknown[0])} in the card state")
    for field in ("due", "last_review"):
        if value.get(field) is not None:
            value = {**value, field: _time(value[field], f"{key}.{field}")}
    try:
        state = state_from_json(json.dumps(value))
    except (TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise _Bad(f"{key} is not a card state ({_short(str(exc), 100)})") from None
    assert state is not None
    if state.id != card_id:
        raise _Bad(f"{key} belongs to card {_short(state.id)}, not {card_id!r}")
    _schedulable(state, key)
    return state_to_json(state)


def _card_row(raw: dict[str, Any]) -> dict[str, Any]:
    cid = _slug(_req(raw, "id"), "id")
    row: dict[str, Any] = {
        "id": cid,
        "deck": _slug(raw.get("deck"), "deck", required=False),
        "state": _int(_req(raw, "state"), "state", lo=1, hi=3),
        "step": _opt_int(raw.get("step"), "step", lo=0),
        "stability": _opt_float(raw.get("stability"), "stability"),
        "difficulty": _opt_float(raw.get("difficulty"), "difficulty"),
        "due": _time(raw.get("due"), "due"),
        "last_review": _time(raw.get("last_review"), "last_review"),
        "reps": _int(raw.get("reps", 0), "reps", lo=0),
        "lapses": _int(raw.get("lapses", 0), "lapses", lo=0),
        "leech": _flag(raw.get("leech", 0), "leech"),
        "content_hash": _label(raw.get("content_hash"), "content_hash"),
        "changed": _flag(raw.get("changed", 0), "changed"),
        "removed": _flag(raw.get("removed", 0), "removed"),
    }
    state = CardState(
        id=cid,
        state=row["state"],
        step=row["step"],
        stability=row["stability"],
        difficulty=row["difficulty"],
        due=parse(row["due"]) if row["due"] else None,
        last_review=parse(row["last_review"]) if row["last_review"] else None,
        reps=row["reps"],
        lapses=row["lapses"],
    )
    _schedulable(state, f"card {cid!r}")
    return row


def _duration(value: Any) -> int | None:
    """duration_ms: a whole number of 0 or more; a negative one (what an older prep stored when
    the clock stepped back mid-card) is taken as 0."""
    try:
        if _opt_int(value, "duration_ms", lo=_INT64_MIN, hi=-1) is not None:
            return 0
    except _Bad:
        pass
    return _opt_int(value, "duration_ms", lo=0)


def _review_row(raw: dict[str, Any]) -> dict[str, Any]:
    cid = _slug(_req(raw, "card_id"), "card_id")
    return {
        "card_id": cid,
        "reviewed_at": _time(_req(raw, "reviewed_at"), "reviewed_at", required=True),
        "rating": _int(_req(raw, "rating"), "rating", lo=1, hi=4),
        # an older prep stored a negative duration when the clock stepped back mid-card: its
        # export still imports (as 0), as every export prep wrote must
        "duration_ms": _duration(raw.get("duration_ms")),
        "prev_state": _opt_int(raw.get("prev_state"), "prev_state", lo=1, hi=3),
        "prev": _state_json(raw.get("prev"), "prev", cid, required=False),
        "next": _state_json(_req(raw, "next"), "next", cid, required=True),
        **_origin(raw),
    }


_DEVICE_ID = re.compile(r"[0-9a-f]{16}")


def _origin(raw: dict[str, Any]) -> dict[str, Any]:
    """A review's id: the device that made it and its sequence number there (both, or
    neither in an export of an older prep), and the key of its scheduler parameters."""
    device = _text(raw.get("device"), "device") or None
    seq = _opt_int(raw.get("seq"), "seq", lo=1, hi=1 << 62)  # (as a journal: ids stay 64-bit)
    if (device is None) != (seq is None):
        raise _Bad("a review's device and seq come together (its id), or neither")
    if device is not None and not _DEVICE_ID.fullmatch(device):
        raise _Bad(f"device must be 16 hex digits (a review's origin), got {_short(device)}")
    params = raw.get("params")
    if params is not None and not isinstance(params, str):
        raise _Bad(f"params must name an entry of the export's params, got {_short(params)}")
    return {"device": device, "seq": seq, "params": params}


def _metrics_json(metrics: Any) -> str:
    if _depth_over(metrics, _MAX_JSON_DEPTH):
        raise _Bad(f"metrics nested more than {_MAX_JSON_DEPTH} levels deep")
    try:
        return json.dumps(metrics, default=str, allow_nan=False)
    except ValueError:  # a NaN from a JSON export cannot happen (loads_strict); keep it strict
        raise _Bad("metrics must hold finite numbers only") from None
    except RecursionError:
        raise _Bad(f"metrics nested more than {_MAX_JSON_DEPTH} levels deep") from None


def _demo_run_row(raw: dict[str, Any]) -> dict[str, Any]:
    metrics = raw.get("metrics")
    if isinstance(metrics, str) and metrics != "":
        try:
            metrics = loads_strict(metrics)
        except ValueError as exc:
            raise _Bad(f"metrics is not valid JSON ({exc})") from None
    seconds = _opt_float(_req(raw, "seconds"), "seconds")
    if seconds is None:
        raise _Bad("missing seconds")
    return {
        "name": _label(_req(raw, "name"), "name", required=True),
        "device": _label(_req(raw, "device"), "device", required=True),
        "device_name": _label(raw.get("device_name") or None, "device_name"),
        "dtype": _label(raw.get("dtype") or None, "dtype"),
        "scale": _label(raw.get("scale") or None, "scale"),
        "seed": _opt_int(raw.get("seed"), "seed"),
        "passed": _flag(_req(raw, "passed"), "passed"),
        "seconds": seconds,
        "metrics": None if metrics in (None, "") else _metrics_json(metrics),
        "ran_at": _time(_req(raw, "ran_at"), "ran_at", required=True),
    }


def _mark_row(raw: dict[str, Any]) -> dict[str, Any]:
    return {
        "card_id": _slug(_req(raw, "card_id"), "card_id"),
        "suspended": _flag(raw.get("suspended") or 0, "suspended"),
        "buried_until": _time(raw.get("buried_until"), "buried_until"),
        "flagged": _flag(raw.get("flagged") or 0, "flagged"),
    }


def _settings(raw: Any) -> dict[str, Any] | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise _Bad(f"settings must be an object, got {type(raw).__name__}")
    unknown = sorted(set(raw) - set(Settings.__dataclass_fields__))
    if unknown:
        raise _Bad(f"unknown setting {_short(unknown[0])}")
    try:
        settings = Settings.from_dict(raw).validated()
    except (TypeError, ValueError, OverflowError) as exc:
        raise _Bad(f"settings: {_short(str(exc), 160)}") from None
    return settings.to_dict()


@dataclass
class ExportData:
    """A parsed, validated export (rows ready to insert)."""

    source: str
    settings: dict[str, Any] | None
    cards: list[dict[str, Any]]
    reviews: list[dict[str, Any]] | Rows  # Rows: read again from the file when iterated
    demo_runs: list[dict[str, Any]] | Rows
    marks: list[dict[str, Any]]  # none from older exports


def _not_export(path: Path, why: str) -> ExportError:
    return ExportError(f"{path}: not a prep export ({why})")


# An export of a very long history is tens of MB; a file past this is not one of ours, and
# reading it whole would only cost memory.
MAX_EXPORT_BYTES = 256 * 1024 * 1024


def _rows(
    path: Path, items: Any, parse_row: Callable[[dict[str, Any]], dict[str, Any]], what: str
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


def _open_text(path: Path) -> IO[str]:
    """The export file as a text stream (UTF-8, a BOM skipped), opened only when it is a
    regular file within MAX_EXPORT_BYTES (read_regular_file's checks, without reading it)."""
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
    path: Path, watch: Callable[[], Callable[[dict[str, Any], int], None]] | None = None
) -> ExportData:
    """Read a JSON export as a stream (engine/transfer/jsonstream.py): each row of its lists
    is checked as it is read; neither the file's text nor its parsed tree is held whole, and
    its reviews and demo runs not at all: they are ``Rows``, read again when iterated."""
    from prep.engine.transfer.jsonstream import STREAMED, Empty, StreamError, read_object

    path = Path(path)
    parsers = {
        "cards": _card_row,
        "reviews": _review_row,
        "demo_runs": _demo_run_row,
        "marks": _mark_row,
    }
    lists: dict[str, list[dict[str, Any]]] = {}  # cards and marks (a few per card)
    counts: dict[str, int] = {}  # rows of each list
    lists_seen: dict[str, int] = {}  # lists under each key (a key given twice: the last wins)
    ids = ReviewIds(_review_key)
    param_refs: dict[str, int] = {}  # params key -> the first review that names it
    bad: dict[str, ExportError] = {}  # the first bad row of each list (said in list order)
    when = stamp(path) if path.exists() else None

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
            if key in ("cards", "marks"):
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
        raise _not_export(path, "the file is empty") from None
    except UnicodeDecodeError:
        raise _not_export(path, "not UTF-8 text") from None
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
    )


def _changed(path: Path, why: str = "") -> ExportError:
    return ExportError(f"{path}: changed while it was being imported{why}; nothing imported")


def _json_again(
    path: Path,
    when: Any,
    key: str,
    occurrence: int,
    parse_row: Callable[[dict[str, Any]], dict[str, Any]],
    change: Callable[[dict[str, Any]], dict[str, Any]] | None,
) -> Iterator[dict[str, Any]]:
    """The rows of list ``key`` of a JSON export read_json read before, read again."""
    from prep.engine.transfer.jsonstream import iter_list

    if stamp(path) != when:
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


def _params(path: Path, raw: Any) -> dict[str, dict[str, Any]]:
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
            raise _not_export(path, "not UTF-8 text") from None


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
    settings = None
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
        try:
            settings = _settings(raw) if raw else None  # header only: no settings saved
        except _Bad as exc:
            raise ExportError(f"{paths['settings']}: {exc}") from None
    return ExportData(str(path), settings, cards, reviews, runs, marks)


def read_export(
    path: Path, watch: Callable[[], Callable[[dict[str, Any], int], None]] | None = None
) -> ExportData:
    """Read a JSON or CSV export, told apart by extension, else by content. ``watch()``,
    called as the reviews' list begins, gives what sees each checked review as it is read."""
    path = Path(path)
    name = path.name.lower()
    if name.endswith(".json"):
        return read_json(path, watch)
    if name.endswith(".csv"):
        return read_csv(path, watch)
    try:
        with _open_text(path) as stream:
            start = stream.read(4096)  # enough to tell them apart (not the whole file)
    except UnicodeDecodeError:
        raise _not_export(path, "not UTF-8 text") from None
    head = start.lstrip()[:1]
    if head == "{":
        return read_json(path, watch)
    if head == "":
        raise _not_export(path, "the file is empty")
    if start.startswith(REVIEW_COLUMNS[0]):
        return read_csv(path, watch)
    raise _not_export(path, "neither a JSON export nor a CSV review log")


# --- importing ----------------------------------------------------------------------------


@dataclass
class ImportResult:
    cards_added: int = 0
    cards_updated: int = 0  # stored state was older: the file continues its history
    cards_kept: int = 0  # already stored, same or newer state
    reviews_added: int = 0
    reviews_skipped: int = 0  # already stored
    demo_runs_added: int = 0
    demo_runs_skipped: int = 0
    marks_added: int = 0
    marks_skipped: int = 0  # the same mark already stored
    marks_kept: int = 0  # marked differently here: this database's mark stays
    cards_merged: int = 0  # both histories went on: merged and replayed (as a sync does)
    settings: str = "none"  # "imported", "same", "kept" (the database's differ), "none"

    def summary(self) -> str:
        text = f"{count(self.cards_added, 'card state')} added"
        if self.cards_updated:
            text += f", {self.cards_updated} brought up to date"
        text += (
            f", {count(self.reviews_added, 'review')} added, "
            f"{count(self.demo_runs_added, 'demo run')} added"
        )
        if self.marks_added:
            text += f", {count(self.marks_added, 'mark')} added"
        if self.cards_merged:
            text += f"; {count(self.cards_merged, 'card')} with two histories merged"
        if self.marks_kept:
            text += f"; {count(self.marks_kept, 'mark')} kept as marked here"
        skipped = self.cards_kept + self.reviews_skipped + self.demo_runs_skipped
        skipped += self.marks_skipped
        if skipped:
            text += f"; {count(skipped, 'row')} already stored (skipped)"
        if self.settings == "imported":
            text += "; settings imported"
        elif self.settings == "kept":
            text += "; settings kept (this database has its own)"
        return text


def _differences(a: dict[str, Any], b: dict[str, Any], keys: Iterable[str]) -> list[str]:
    return [k for k in keys if a.get(k) != b.get(k)]


_REVIEW_FACTS = ("card_id", "reviewed_at", "rating", "duration_ms")  # a review, not its states


def _review_key(r: dict[str, Any]) -> tuple[str, str, str | None]:
    """A review's identity: the card, the time and the state it was reviewed from. (Two
    reviews of one card can share a time, e.g. under a fixed clock; they never share the
    state they start from as well.)"""
    return (r["card_id"], r["reviewed_at"], r["prev"])


def _check_file(data: ExportData) -> None:
    src = data.source
    seen: set[str] = set()
    for i, c in enumerate(data.cards):
        if c["id"] in seen:
            raise ExportError(f"{src}: cards[{i}]: card {c['id']!r} appears twice")
        seen.add(c["id"])
    ids = data.reviews.ids if isinstance(data.reviews, Rows) else None
    if ids is None:  # (gathered as the file was read, or here)
        ids = ReviewIds(_review_key)
        for i, r in enumerate(data.reviews):
            ids.add(i, r)
    unknown = ids.unknown_card(seen)
    repeat = ids.repeat(data.reviews)
    if unknown is not None and (repeat is None or unknown[0] <= repeat[0]):
        raise ExportError(
            f"{src}: reviews[{unknown[0]}]: card {unknown[1]!r} is reviewed but has no card "
            "state in the export"
        )
    if repeat is not None:
        i, r = repeat
        raise ExportError(
            f"{src}: reviews[{i}]: the same review of card {r['card_id']!r} at "
            f"{r['reviewed_at']} appears twice"
        )
    marked: set[str] = set()
    for i, m in enumerate(data.marks):
        if m["card_id"] in marked:
            raise ExportError(f"{src}: marks[{i}]: card {m['card_id']!r} is marked twice")
        marked.add(m["card_id"])


def _mark(row: dict[str, Any]) -> Mark:
    return Mark(bool(row["suspended"]), parse(row["buried_until"]), bool(row["flagged"]))


def _mark_words(mark: Mark) -> str:
    words = [w for w, on in (("suspended", mark.suspended), ("flagged", mark.flagged)) if on]
    if mark.buried_until is not None:
        words.append(f"buried until {fmt(mark.buried_until)}")
    return ", ".join(words) or "no mark"


class _Held:
    """What a first reading of an export's reviews finds held here: per card the file's
    reviews F (those not undone here) and how many of them this database holds (F & H by
    key), |H|, the cards with a review of the file undone here, the reviews skipped, and
    the first conflict (said after the file's own checks, as an import always did)."""

    def __init__(self, store: Store, aliases: Mapping[str, str] | None) -> None:
        self.store, self.aliases = store, aliases or {}
        self.counts: dict[str, list[int]] = {}  # card -> [|F|, |F & H|]
        self.here_n: dict[str, int] = {}  # card -> |H|
        self.undone: set[str] = set()
        self.skipped = 0
        self.conflict: str | None = None

    def add(self, r: dict[str, Any], i: int = 0) -> None:
        store = self.store
        cid = self.aliases.get(r["card_id"], r["card_id"])
        if cid != r["card_id"]:
            r = {**r, "card_id": cid}
        # a review's identity is its id (device, sequence number) where the file gives
        # one: held here (by import or sync) or undone here, it is the same review
        held = None if not r["device"] else store.review_by_origin(r["device"], r["seq"])
        if held is True:
            self.undone.add(cid)  # its undo reached this database: not again
            self.skipped += 1
            return
        if cid not in self.here_n:  # (a card with no reviews here needs no look per review)
            self.here_n[cid] = len(store.review_keys(cid))
        n = self.counts.setdefault(cid, [0, 0])
        n[0] += 1
        stored = None
        if isinstance(held, dict) and _review_key(held) == _review_key(r):
            n[1] += 1  # (held by its id, and so by its key: no look)
        elif self.here_n[cid]:
            stored = store.review_row(*_review_key(r))
            n[1] += stored is not None
        if isinstance(held, dict):
            # a replay may have rewritten its states (reviews of the card from other
            # devices landed before it); what it was cannot differ
            diff = _differences(held, r, _REVIEW_FACTS)
        elif stored is None:
            return  # new: added by the second reading
        else:
            diff = _differences(stored, r, REVIEW_COLUMNS_V1)
        if diff and self.conflict is None:
            self.conflict = (
                f"conflict: card {cid!r} already has a review at {r['reviewed_at']} with "
                f"different {', '.join(diff)}"
            )
        self.skipped += 1


def import_data(
    store: Store,
    data: ExportData,
    now: datetime | None = None,
    aliases: Mapping[str, str] | None = None,
    held_here: _Held | None = None,
) -> ImportResult:
    """Import into ``store`` in one transaction: everything, or (on any conflict) nothing.
    ``now`` (default: the clock) tells a bury in force from one that ran out. ``aliases``
    ({merged-away id: kept id}, CachedCollection.aliases): rows naming an old id land on the
    card that kept it, as the store's own progress did (engine/aliases.py)."""
    now = now or utcnow()
    _check_file(data)
    if aliases:
        from prep.engine.decks.aliases import map_export

        data = map_export(data, aliases)
    result = ImportResult()
    src = data.source
    # The file's reviews are read twice (Rows read them again from the file): first to find
    # what is held here and, per card, how the file's history and this one compare (_Held;
    # import_file does it as the file is checked), then to add them.
    with store.transaction():
        if held_here is None:
            held_here = _Held(store, aliases)
            for r in data.reviews:
                held_here.add(r)
        if held_here.conflict is not None:
            raise ExportError(f"{src}: {held_here.conflict}; nothing imported")
        result.reviews_skipped = held_here.skipped
        counts, here_n, undone_here = held_here.counts, held_here.here_n, held_here.undone
        diverged: dict[str, list[dict[str, Any]]] = {}  # card -> the file's reviews of it
        for card in data.cards:
            cid = card["id"]
            stored = store.card_row(cid)
            here = here_n[cid] if cid in here_n else len(store.review_keys(cid))
            there, both = counts.get(cid, (0, 0))
            if cid in undone_here:
                # the file's state counts a review undone here: replayed from the log
                diverged[cid] = []
                continue
            if stored is None:
                if here:
                    raise ExportError(
                        f"{src}: conflict: card {cid!r} has reviews here but no state; "
                        "nothing imported"
                    )
                store.insert_row("cards", card)
                result.cards_added += 1
                continue
            diff = _differences(stored, card, SCHEDULE_COLUMNS)
            if not diff:
                result.cards_kept += 1
            elif both == there < here:
                result.cards_kept += 1  # reviewed here since the export: this state is newer
            elif both == here < there:
                # the file continues this card's history: bring its schedule up to date
                store.update_schedule(cid, card)
                result.cards_updated += 1
            else:
                diverged[cid] = []  # both went on: merged by the sync's rules below
        for r in data.reviews:
            if r["card_id"] in diverged:
                diverged[r["card_id"]].append(r)
                continue
            there, both = counts.get(r["card_id"], (0, 0))
            if both == there:
                continue  # every review of the card in the file is held here (by key)
            held = None if not r["device"] else store.review_by_origin(r["device"], r["seq"])
            if held is True or isinstance(held, dict):
                continue  # held (by its id) or undone here: counted above
            # held by its key: none of the card's, or look
            if both == 0 or store.review_row(*_review_key(r)) is None:
                store.insert_row("reviews", r)
                result.reviews_added += 1
        if diverged:
            from prep.engine.sync.merge import merge_reviews

            result.reviews_added += merge_reviews(store, diverged)
            result.cards_merged = len(diverged)
        for run in data.demo_runs:
            stored = store.demo_run_row(run["name"], run["ran_at"])
            if stored is not None:
                diff = _differences(stored, run, DEMO_RUN_COLUMNS)
                if diff:
                    raise ExportError(
                        f"{src}: conflict: demo {run['name']!r} already has a run at {run['ran_at']} "
                        f"with different {', '.join(diff)}; nothing imported"
                    )
                result.demo_runs_skipped += 1
                continue
            store.insert_row("demo_runs", run)
            result.demo_runs_added += 1
        for row in data.marks:
            cid, mark = row["card_id"], _mark(row)
            if mark == Mark():
                continue  # marks nothing (an export never holds one)
            mark_here = store.mark(cid)
            if mark_here == mark:
                result.marks_skipped += 1
            elif in_force(mark_here, now) == Mark():  # (a bury that ran out is no mark)
                store.set_mark(cid, mark)
                result.marks_added += 1
            elif in_force(mark_here, now) == in_force(mark, now):
                result.marks_skipped += 1  # they differ only in a bury that ran out
            else:
                # marked differently: a mark is last-writer-wins, and an export's marks carry
                # no time to win with, so this database's (made here, since) stays
                result.marks_kept += 1
        if data.settings is not None:
            saved = store.saved_settings()
            if saved is None:
                store.set_meta("settings", json.dumps(data.settings))
                result.settings = "imported"
            elif Settings.from_dict(saved).to_dict() == data.settings:
                result.settings = "same"
            else:
                result.settings = "kept"
    return result


def import_file(store: Store, path: Path, aliases: Mapping[str, str] | None = None) -> ImportResult:
    """Import the export at ``path``: its reviews are read twice, checked (and compared with
    what is held here) in the first reading, merged in the second; nothing is held per review."""
    held: list[_Held] = []

    def watch() -> Callable[[dict[str, Any], int], None]:
        held[:] = [_Held(store, aliases)]  # (a "reviews" key given twice: the last wins)
        return held[0].add

    with store.transaction():
        data = read_export(Path(path), watch)
        return import_data(store, data, aliases=aliases, held_here=held[0] if held else None)
