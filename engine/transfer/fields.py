"""The fields of a progress export, each checked (engine/transfer/readers.py reads the files;
engine/transfer/importer.py merges them): one refusal message per field and kind of bad value,
what makes a hostile file fail with one line. A row parser takes a row as read (JSON values,
or CSV text) and returns it as stored, or raises ``_Bad`` saying what is wrong; the reader
adds where it was.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from prep.engine.decks.deck import CONTROL, SLUG
from prep.engine.store import state_from_json, state_to_json
from prep.engine.study.scheduler import CardState, Settings, state_problem
from prep.engine.timeutil import fmt, parse, stored_time_problem


class _Bad(Exception):
    """A bad value; the reader adds where it was."""


# Imported JSON may be hostile: no NaN/Infinity tokens; nesting and number length bounded.
# The rows have a fixed shape that validation holds; only demo metrics are free-form, and
# they are held to _MAX_JSON_DEPTH levels.
_MAX_JSON_DEPTH = 64


def _no_constant(token: str) -> Any:
    raise ValueError(f"{token} is not a JSON number")


# a \uXXXX escape of a surrogate: paired ones make one character, a lone one stays a
# surrogate that no UTF-8 text (nor SQLite) can hold: stored, it raised UnicodeEncodeError
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def loads_strict(text: str) -> Any:
    """``json.loads`` for files from outside: raises ValueError (one line) on invalid JSON,
    NaN/Infinity, nesting too deep for the parser, a number too long to convert, or a lone
    surrogate (``"\\udcff"``: text that is not Unicode)."""
    try:
        value = json.loads(text, parse_constant=_no_constant)
        if "\\u" in text and _SURROGATE_ESCAPE.search(text):  # (then every string looked at)
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        return value
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start : exc.end].encode("unicode_escape").decode()
        raise ValueError(f"a lone surrogate {bad} (text that is not Unicode)") from None
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
    if isinstance(value, bool):  # JSON's true is no number (a rating of true was Again)
        raise _Bad(f"{key} must be a whole number, got {str(value).lower()}")
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
    for field in ("deck", "content_hash"):  # (text in every state prep writes)
        if field in value and not isinstance(value[field], str):
            raise _Bad(f"{key}.{field} must be text, got {_short(value[field])}")
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
        **(_clock(raw) or dict.fromkeys(CLOCK_COLUMNS)),
    }


# A mark's or the settings' last-writer-wins clock, as an export carries it (older exports:
# none): when it was set, by which device, that device's stamp number.
CLOCK_COLUMNS = ("at", "device", "stamp")
# An undo (a tombstone): the review's id (device, seq), its card, when it was undone.
UNDONE_COLUMNS = ("device", "seq", "card_id", "at")


def _device(value: Any, key: str) -> str:
    text = _text(value, key, required=True)
    assert text is not None
    if not _DEVICE_ID.fullmatch(text):
        raise _Bad(f"{key} must be 16 hex digits (a device id), got {_short(text)}")
    return text


def _clock(raw: dict[str, Any]) -> dict[str, Any] | None:
    """The (at, device, stamp) clock of a mark or the settings: all three, or none."""
    given = [raw.get(k) not in (None, "") for k in CLOCK_COLUMNS]
    if not any(given):
        return None
    if not all(given):
        raise _Bad("at, device and stamp come together (the clock of a mark), or none")
    return {
        "at": _time(raw["at"], "at", required=True),
        "device": _device(raw["device"], "device"),
        "stamp": _int(raw["stamp"], "stamp", lo=0, hi=1 << 62),
    }


def _settings_clock(raw: Any) -> dict[str, Any] | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise _Bad(f"settings_clock must be an object, got {type(raw).__name__}")
    unknown = sorted(set(raw) - set(CLOCK_COLUMNS))
    if unknown:
        raise _Bad(f"settings_clock: unknown field {_short(unknown[0])}")
    try:
        return _clock(raw)
    except _Bad as exc:
        raise _Bad(f"settings_clock: {exc}") from None


def _undone_row(raw: dict[str, Any]) -> dict[str, Any]:
    return {
        "device": _device(_req(raw, "device"), "device"),
        "seq": _int(_req(raw, "seq"), "seq", lo=1, hi=1 << 62),
        "card_id": _slug(_req(raw, "card_id"), "card_id"),
        "at": _time(_req(raw, "at"), "at", required=True),
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


def _review_key(r: dict[str, Any]) -> tuple[str, str, str | None]:
    """A review's identity: the card, the time and the state it was reviewed from. (Two
    reviews of one card can share a time, e.g. under a fixed clock; they never share the
    state they start from as well.)"""
    return (r["card_id"], r["reviewed_at"], r["prev"])
