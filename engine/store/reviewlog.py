"""The compact form of the review log's card states (schema v5).

Undo needs the exact state a card had before each review, and the export gives the state
before and after each one. Up to v4 each review row kept both as JSON (about 650 bytes a
review); now a state is a 40-byte binary record, and only what cannot be derived is stored:

- ``next``: the state after the review, always. Its membership fields (deck, content hash)
  are written only when they differ from the state it follows in the card's chain (the
  ``prev`` of the same review, or the card's previous ``next``): ``pack(state, ref)``.
- ``prev``: NULL when the card was new (``prev_state`` NULL too), or when it is exactly the
  ``next`` of the card's previous review (the usual case: nothing happens to a card between
  two of its reviews); otherwise the full state, or ``b""`` for "no previous state".

So a card's states are read by walking its reviews in order (``Chain``), which the store
does for one card (undo) or for the whole log in one pass (export, optimizer).

Times are whole microseconds since the Unix epoch, UTC (the old text had microseconds too):
exact both ways.
"""

from __future__ import annotations

import functools
import json
import re
import struct
from dataclasses import fields
from datetime import UTC, datetime, timedelta

from prep.engine.study.scheduler import CardState
from prep.engine.timeutil import fmt

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US = timedelta(microseconds=1)
# state (+ _WIDE), flags, step, s, d, due, last, reps, lapses: step, reps and lapses take two
# bytes each, or eight (with _WIDE in the state byte) when one of them does not fit
_HEAD = struct.Struct("<BBHddqqHH")
_WIDE_HEAD = struct.Struct("<BBqddqqqq")
_WIDE = 0x80
_STEP_NONE, _S_NONE, _D_NONE, _DUE_NONE, _LAST_NONE, _LEECH, _CHANGED, _REMOVED = (
    1 << i for i in range(8)
)
_FIELDS = tuple(f.name for f in fields(CardState))
# timeutil.fmt's text (years 1000-9999): exactly the times that fmt(parse(text)) gives back
_FMT_TIME = re.compile(r"[1-9][0-9]{3}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z")
NO_STATE = b""  # an explicit "no previous state" (the card was new)
_RAW = b"\xff"  # prefix of a state kept verbatim (see LegacyState)


class LegacyState(str):
    """A state from an older log that is not a valid card state (say ``{}``, hand-made):
    kept verbatim as its JSON text, so that migrating loses nothing and the export still
    gives it back; it cannot be restored by undo, as it could not before."""


def to_us(dt: datetime) -> int:
    return (dt - EPOCH) // _US


def from_us(us: int) -> datetime:
    return EPOCH + us * _US


def pack(s: CardState | LegacyState, card_id: str, ref: CardState | LegacyState | None) -> bytes:
    """``s`` as bytes; deck, content hash and a foreign id are appended (as JSON) only when
    they differ from ``ref``, the state this one follows in the card's chain."""
    if isinstance(s, LegacyState):
        return _RAW + s.encode()
    head = _head(s)
    same = isinstance(ref, CardState) and (ref.deck, ref.content_hash) == (s.deck, s.content_hash)
    if same and s.id == card_id:
        return head
    tail = [s.deck, s.content_hash] + ([s.id] if s.id != card_id else [])
    return head + json.dumps(tail, ensure_ascii=False).encode()


def _head(s: CardState) -> bytes:
    """The fixed-size record of ``s`` (without deck, hash and id); raises ValueError or
    struct.error when a field does not fit."""
    flags = (
        (_STEP_NONE if s.step is None else 0)
        | (_S_NONE if s.stability is None else 0)
        | (_D_NONE if s.difficulty is None else 0)
        | (_DUE_NONE if s.due is None else 0)
        | (_LAST_NONE if s.last_review is None else 0)
        | (_LEECH if s.leech else 0)
        | (_CHANGED if s.changed else 0)
        | (_REMOVED if s.removed else 0)
    )
    if not 0 <= s.state < _WIDE - 1:  # (0xff with _WIDE would read as _RAW)
        raise ValueError(f"state {s.state!r} is not an fsrs state")
    wide = not (0 <= (s.step or 0) <= 0xFFFF and 0 <= s.reps <= 0xFFFF and 0 <= s.lapses <= 0xFFFF)
    return (_WIDE_HEAD if wide else _HEAD).pack(
        s.state | (_WIDE if wide else 0),
        flags,
        s.step or 0,
        s.stability or 0.0,
        s.difficulty or 0.0,
        0 if s.due is None else to_us(s.due),
        0 if s.last_review is None else to_us(s.last_review),
        s.reps,
        s.lapses,
    )


def unpack(
    blob: bytes, card_id: str, ref: CardState | LegacyState | None
) -> CardState | LegacyState:
    if blob[:1] == _RAW:
        return LegacyState(blob[1:].decode())
    head = _WIDE_HEAD if blob[0] & _WIDE else _HEAD
    state, flags, step, s, d, due, last, reps, lapses = head.unpack_from(blob)
    state &= ~_WIDE
    if len(blob) > head.size:
        tail = json.loads(blob[head.size :].decode())
        deck, chash = tail[0], tail[1]
        cid = tail[2] if len(tail) > 2 else card_id
    else:
        if not isinstance(ref, CardState):
            raise ValueError(f"review log: a state of {card_id!r} refers to none before it")
        deck, chash, cid = ref.deck, ref.content_hash, card_id
    return CardState(
        id=cid,
        deck=deck,
        state=state,
        step=None if flags & _STEP_NONE else step,
        stability=None if flags & _S_NONE else s,
        difficulty=None if flags & _D_NONE else d,
        due=None if flags & _DUE_NONE else from_us(due),
        last_review=None if flags & _LAST_NONE else from_us(last),
        reps=reps,
        lapses=lapses,
        leech=bool(flags & _LEECH),
        content_hash=chash,
        changed=bool(flags & _CHANGED),
        removed=bool(flags & _REMOVED),
    )


def legacy_state(text: str | None, *, check: bool = True) -> CardState | LegacyState | None:
    """A state as the v4 log kept it (JSON text, times as UTC ISO-8601); one that is not a
    card state, or would not come back as the same text, is kept verbatim.

    "Comes back as the same text" is ``state_json(state) == text``, checked without
    formatting the state again (the v5 migration runs this on every review): the keys are
    the fields in their order, the values dump to the same JSON, and the times are in
    timeutil.fmt's fixed-width form (the only text fmt gives back unchanged). The usual
    text (what state_json wrote: plain ASCII strings, finite numbers) is read field by field
    from one pattern; any other goes through json.

    ``check=False`` leaves out the check that the fields fit the binary record (pack then
    raises ValueError or struct.error, and the caller asks again with the check)."""
    if text is None:
        return None
    try:
        m = _state_text().fullmatch(text)
        d = None if m is None else _fields_of(*m.groups())
        if d is None:
            d = json.loads(text)
            if type(d) is not dict or tuple(d) != _FIELDS or json.dumps(d) != text:
                return LegacyState(text)
            for key in ("due", "last_review"):
                t = d[key]
                if t is not None:
                    if type(t) is not str or not _FMT_TIME.fullmatch(t):
                        return LegacyState(text)
                    d[key] = _time(t)
        # CardState(**d) without the frozen dataclass's __init__ (a third of the cost): the
        # keys are its fields, checked above, and it converts nothing
        state = object.__new__(CardState)
        state.__dict__.update(d)
        if check:
            _head(state)  # in range
    except (TypeError, ValueError, AttributeError, OverflowError, struct.error):
        return LegacyState(text)
    return state


def _time(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text).astimezone(UTC)


# state_json's text when every string is printable ASCII without quotes or backslashes
# (json.dumps writes those as they are), every number is finite and every time is in fmt's
# form: one group per field, read by _fields_of
_STR = r'"([ !#-\[\]-~]*)"'
_INT = r"(-?(?:0|[1-9][0-9]*))"
_NUM = r"(null|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:e[-+][0-9]+)?)"
_BOOL = r"(true|false)"
_TIME = rf'(?:null|"({_FMT_TIME.pattern})")'  # the text inside the quotes (None for null)
_KINDS = {
    "id": _STR,
    "deck": _STR,
    "state": _INT,
    "step": _NUM,
    "stability": _NUM,
    "difficulty": _NUM,
    "due": _TIME,
    "last_review": _TIME,
    "reps": _INT,
    "lapses": _INT,
    "leech": _BOOL,
    "content_hash": _STR,
    "changed": _BOOL,
    "removed": _BOOL,
}
assert tuple(_KINDS) == _FIELDS
_STATE_SOURCE = "{" + ", ".join(f'"{f}": {p}' for f, p in _KINDS.items()) + "}"


@functools.cache
def _state_text() -> re.Pattern[str]:
    """The usual text of a stored JSON state, compiled when first needed: only an upgrade of
    an old database reads such text, and compiling it costs ~2 ms of every start."""
    return re.compile(_STATE_SOURCE)


class _NotTheSameText(ValueError):
    """A number that json.dumps would write otherwise (``1.50``): read through json."""


def _number(g: str) -> int | float | None:
    if g == "null":
        return None
    if "." in g or "e" in g:
        x = float(g)
        if repr(x) != g:
            raise _NotTheSameText(g)
        return x
    return int(g)


def _fields_of(
    cid, deck, state, step, s, d, due, last, reps, lapses, leech, chash, changed, removed
) -> dict[str, object] | None:
    """The fields of a state matched by _state_text() (its groups, in _FIELDS order), as
    CardState holds them; None when a number would not be written back as the same text."""
    try:
        return {
            "id": cid,
            "deck": deck,
            "state": int(state),
            "step": _number(step),
            "stability": _number(s),
            "difficulty": _number(d),
            "due": _time(due),
            "last_review": _time(last),
            "reps": int(reps),
            "lapses": int(lapses),
            "leech": leech == "true",
            "content_hash": chash,
            "changed": changed == "true",
            "removed": removed == "true",
        }
    except _NotTheSameText:
        return None


def state_json(s: CardState) -> str:
    """The JSON text of a state (the export's form, and the v4 log's), times as UTC text."""
    d = {f: getattr(s, f) for f in _FIELDS}
    d["due"] = fmt(s.due)
    d["last_review"] = fmt(s.last_review)
    return json.dumps(d)


class Chain:
    """Decodes reviews in log order, remembering each card's latest ``next``."""

    def __init__(self) -> None:
        self.last: dict[str, CardState] = {}

    def decode(
        self, card_id: str, prev_state: int | None, prev: bytes | None, nxt: bytes
    ) -> tuple[CardState | None, CardState]:
        before = self.last.get(card_id)
        if prev is None:
            prev_s = None if prev_state is None else before
            if prev_state is not None and before is None:
                raise ValueError(f"review log: {card_id!r} has no earlier review to refer to")
        elif prev == NO_STATE:
            prev_s = None
        else:
            prev_s = unpack(prev, card_id, before)
        next_s = unpack(nxt, card_id, prev_s if prev_s is not None else before)
        self.last[card_id] = next_s
        return prev_s, next_s

    def encode(
        self, card_id: str, prev_state: int | None, prev: CardState | None, nxt: CardState
    ) -> tuple[bytes | None, bytes]:
        """(prev blob, next blob) of a review appended after those seen so far; ``prev_state``
        is the column stored beside them (NULL for a new card)."""
        before = self.last.get(card_id)
        if prev is None:
            prev_blob = None if prev_state is None else NO_STATE
        elif prev_state is not None and (before is prev or before == prev):
            prev_blob = None
        else:
            prev_blob = pack(prev, card_id, before)
        next_blob = pack(nxt, card_id, prev if prev is not None else before)
        self.last[card_id] = nxt
        return prev_blob, next_blob
