"""The compact form of the review log's card states (schema v13; v5 to v12 wrote the records
of engine/store/reviewlog5.py).

Undo needs the exact state a card had before each review, and the export gives the state
before and after each one. Up to v4 each review row kept both as JSON (about 650 bytes a
review); v5 made a state a 40-byte binary record; v13 stores only what the row and the chain
do not already say (``pack``: about 26 bytes for a usual review, where v5 took 40):

- ``next``: the state after the review, always. Its membership fields (deck, content hash)
  are written only when they differ from the state it follows in the card's chain (the
  ``prev`` of the same review, or the card's previous ``next``), and so are reps and lapses
  when they follow it (+ 1; the same or + 1); last_review is not stored when it is the row's
  own time (``at``): ``pack(state, card_id, ref, at)``.
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
from typing import cast, overload

from prep.engine.study.scheduler import CardState
from prep.engine.timeutil import fmt

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US = timedelta(microseconds=1)
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


@overload
def legacy_state(text: str, *, check: bool = True) -> CardState | LegacyState: ...
@overload
def legacy_state(text: None, *, check: bool = True) -> None: ...
@overload
def legacy_state(text: str | None, *, check: bool = True) -> CardState | LegacyState | None: ...
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
            from prep.engine.store.reviewlog5 import _head

            _head(state)  # fits the v5 record the migration writes
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


# The compact record (schema v13): one byte for the fsrs state (1-3) and ``form`` (which
# fields are derived; another state takes _ESCAPE, then the state and form bytes), the flags,
# then only the fields that are not derived: step and reps/lapses as zigzag varints, stability and
# difficulty as doubles, last_review as a varint of microseconds unless it is the review's own
# time (the row's ``at``), due as a varint of its distance from last_review (whole seconds
# when it is a whole number of them, as a scheduled interval is), reps and lapses unless they
# follow the state this one follows (reps + 1; lapses the same or + 1), and the JSON tail
# (deck, content hash, a foreign id) only when they differ from that state's: a byte saying
# how (_HEX_HASH: the usual hash, 16 hex digits, as 8 bytes; _OWN_ID: a foreign id follows),
# then each as a varint length and UTF-8.
_D = struct.Struct("<d")
_LAST_AT, _REPS_NEXT, _LAPSES_SAME, _LAPSES_NEXT, _DUE_SECONDS, _TAIL = (1 << i for i in range(6))
# form < 60 (_LAPSES_SAME and _LAPSES_NEXT never come together): state | form << 2 < 0xF0
_ESCAPE = 0xFC
_HEX_HASH, _OWN_ID = 1, 2
_HEX = re.compile(r"[0-9a-f]{16}")
_S_US = 1_000_000


def _put(out: bytearray, n: int) -> None:
    """Append ``n`` (any int) as a zigzag varint."""
    if type(n) is not int:  # (bool is an int subclass: its type is not int)
        if not isinstance(n, int):
            raise ValueError(f"{n!r} is not a whole number")
        n = int(n)
    z = n << 1 if n >= 0 else ((-n) << 1) - 1
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)


def _get(blob: bytes, i: int) -> tuple[int, int]:
    """The zigzag varint at ``blob[i]`` and the index after it."""
    z = shift = 0
    while True:
        b = blob[i]
        i += 1
        z |= (b & 0x7F) << shift
        if b < 0x80:
            return (z >> 1 if not z & 1 else -((z + 1) >> 1)), i
        shift += 7


def pack(
    s: CardState | LegacyState,
    card_id: str,
    ref: CardState | LegacyState | None,
    at: int | None = None,
) -> bytes:
    """``s`` as bytes, given ``ref`` (the state it follows in the card's chain) and ``at``
    (the review's time in microseconds, None when not known: last_review is then stored)."""
    if isinstance(s, LegacyState):
        return _RAW + s.encode()
    if type(s.state) is not int or not 0 <= s.state <= 0xFF:
        raise ValueError(f"state {s.state!r} is not an fsrs state")
    r = ref if isinstance(ref, CardState) else None
    last = None if s.last_review is None else to_us(s.last_review)
    form = 0
    if last is not None and last == at:
        form |= _LAST_AT
    # only from a state the caller knows: one that does not (a chain started after the card's
    # earlier reviews, as sync's) writes these in full, and a reader that knows more reads them
    if r is not None:
        if s.reps == r.reps + 1:
            form |= _REPS_NEXT
        if s.lapses == r.lapses:
            form |= _LAPSES_SAME
        elif s.lapses == r.lapses + 1:
            form |= _LAPSES_NEXT
    due = None
    if s.due is not None:
        due = to_us(s.due) - (last or 0)
        if due % _S_US == 0:
            form |= _DUE_SECONDS
            due //= _S_US
    same = r is not None and (r.deck, r.content_hash) == (s.deck, s.content_hash)
    if not same or s.id != card_id:
        form |= _TAIL
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
    if 0 <= s.state <= 3:
        out = bytearray((s.state | form << 2, flags))
    else:
        out = bytearray((_ESCAPE, s.state, form, flags))
    if s.step is not None:
        _put(out, s.step)
    if s.stability is not None:
        out += _D.pack(s.stability)
    if s.difficulty is not None:
        out += _D.pack(s.difficulty)
    if last is not None and not form & _LAST_AT:
        _put(out, last)
    if due is not None:
        _put(out, due)
    if not form & _REPS_NEXT:
        _put(out, s.reps)
    if not form & (_LAPSES_SAME | _LAPSES_NEXT):
        _put(out, s.lapses)
    if form & _TAIL:
        hexed = _HEX.fullmatch(s.content_hash) is not None
        out.append((_HEX_HASH if hexed else 0) | (_OWN_ID if s.id != card_id else 0))
        _put_text(out, s.deck)
        if hexed:
            out += bytes.fromhex(s.content_hash)
        else:
            _put_text(out, s.content_hash)
        if s.id != card_id:
            _put_text(out, s.id)
    return bytes(out)


def _put_text(out: bytearray, text: str) -> None:
    if type(text) is not str:
        raise ValueError(f"{text!r} is not text")
    data = text.encode()
    _put(out, len(data))
    out += data


def _get_text(blob: bytes, i: int) -> tuple[str, int]:
    n, i = _get(blob, i)
    if not 0 <= n <= len(blob) - i:
        raise ValueError("review log: a text runs past the end of its record")
    return blob[i : i + n].decode(), i + n


def unpack(
    blob: bytes,
    card_id: str,
    ref: CardState | LegacyState | None,
    at: int | None = None,
) -> CardState | LegacyState:
    """The state ``pack`` wrote (with the same ``ref`` and ``at``)."""
    if blob[:1] == _RAW:
        return LegacyState(blob[1:].decode())
    if blob[:1] == KEPT:
        raise ValueError("kept as it was when the log was converted to schema v13 (unreadable)")
    if blob[0] == _ESCAPE:
        state, form, flags = blob[1], blob[2], blob[3]
        i = 4
    else:
        state, form, flags = blob[0] & 3, blob[0] >> 2, blob[1]
        i = 2
    step = s = d = last = due = None
    if not flags & _STEP_NONE:
        step, i = _get(blob, i)
    if not flags & _S_NONE:
        (s,) = _D.unpack_from(blob, i)
        i += 8
    if not flags & _D_NONE:
        (d,) = _D.unpack_from(blob, i)
        i += 8
    if not flags & _LAST_NONE:
        if form & _LAST_AT:
            if at is None:
                raise ValueError(f"review log: a state of {card_id!r} needs the review's time")
            last = at
        else:
            last, i = _get(blob, i)
    if not flags & _DUE_NONE:
        delta, i = _get(blob, i)
        due = (delta * _S_US if form & _DUE_SECONDS else delta) + (last or 0)
    r = ref if isinstance(ref, CardState) else None
    if form & (_REPS_NEXT | _LAPSES_SAME | _LAPSES_NEXT) and r is None:
        raise ValueError(f"review log: a state of {card_id!r} refers to none before it")
    if form & _REPS_NEXT:
        reps = r.reps + 1  # type: ignore[union-attr]
    else:
        reps, i = _get(blob, i)
    if form & _LAPSES_SAME:
        lapses = r.lapses  # type: ignore[union-attr]
    elif form & _LAPSES_NEXT:
        lapses = r.lapses + 1  # type: ignore[union-attr]
    else:
        lapses, i = _get(blob, i)
    if form & _TAIL:
        how = blob[i]
        deck, i = _get_text(blob, i + 1)
        if how & _HEX_HASH:
            chash, i = blob[i : i + 8].hex(), i + 8
        else:
            chash, i = _get_text(blob, i)
        cid = card_id
        if how & _OWN_ID:
            cid, i = _get_text(blob, i)
    if i != len(blob):
        raise ValueError(f"review log: {len(blob) - i} bytes too many in a state of {card_id!r}")
    if not form & _TAIL:
        if r is None:
            raise ValueError(f"review log: a state of {card_id!r} refers to none before it")
        deck, chash, cid = r.deck, r.content_hash, card_id
    return CardState(
        id=cid,
        deck=deck,
        state=state,
        step=step,
        stability=s,
        difficulty=d,
        due=None if due is None else from_us(due),
        last_review=None if last is None else from_us(last),
        reps=reps,
        lapses=lapses,
        leech=bool(flags & _LEECH),
        content_hash=chash,
        changed=bool(flags & _CHANGED),
        removed=bool(flags & _REMOVED),
    )


def times_of(blob: bytes | None, at: int) -> tuple[datetime | None, datetime | None]:
    """(last review, due) of a state ``pack`` wrote, read from its head alone (no state before
    it needed); (None, None) when it holds none or cannot be read (a damaged or kept row)."""
    try:
        if not blob or blob[:1] == KEPT:
            return None, None
        if blob[:1] == _RAW:
            d = json.loads(blob[1:].decode())
            return _time(d.get("last_review")), _time(d.get("due"))
        if blob[0] == _ESCAPE:
            form, flags, i = blob[2], blob[3], 4
        else:
            form, flags, i = blob[0] >> 2, blob[1], 2
        if not flags & _STEP_NONE:
            _step, i = _get(blob, i)
        i += (0 if flags & _S_NONE else 8) + (0 if flags & _D_NONE else 8)
        last = None
        if not flags & _LAST_NONE:
            if form & _LAST_AT:
                last = at
            else:
                last, i = _get(blob, i)
        if flags & _DUE_NONE:
            return (None if last is None else from_us(last)), None
        delta, i = _get(blob, i)
        due = (delta * _S_US if form & _DUE_SECONDS else delta) + (last or 0)
        return (None if last is None else from_us(last)), from_us(due)
    except (ValueError, TypeError, AttributeError, OverflowError, IndexError):
        return None, None


# prefix of a row's states that the v13 conversion could not read (a damaged v12 row): kept
# byte for byte behind it, and read as damaged (export names the row, as before)
KEPT = b"\xfe"


class Chain:
    """Decodes reviews in log order, remembering each card's latest ``next``."""

    def __init__(self) -> None:
        self.last: dict[str, CardState | LegacyState] = {}

    _pack = staticmethod(pack)
    _unpack = staticmethod(unpack)

    def decode(
        self,
        card_id: str,
        prev_state: int | None,
        prev: bytes | None,
        nxt: bytes,
        at: int | None = None,
    ) -> tuple[CardState | None, CardState]:
        """The review's (prev, next) states; ``at``: its time (the row's ``at``)."""
        before = self.last.get(card_id)
        if prev is None:
            prev_s = None if prev_state is None else before
            if prev_state is not None and before is None:
                raise ValueError(f"review log: {card_id!r} has no earlier review to refer to")
        elif prev == NO_STATE:
            prev_s = None
        else:
            prev_s = self._unpack(prev, card_id, before, at)
        next_s = self._unpack(nxt, card_id, prev_s if prev_s is not None else before, at)
        self.last[card_id] = next_s
        # a LegacyState (a state kept verbatim by the v5 migration) is read as the caller's
        # CardState: it carries the same fields, checked when it was kept
        return cast("CardState | None", prev_s), cast(CardState, next_s)

    def encode(
        self,
        card_id: str,
        prev_state: int | None,
        prev: CardState | LegacyState | None,
        nxt: CardState | LegacyState,
        at: int | None = None,
    ) -> tuple[bytes | None, bytes]:
        """(prev blob, next blob) of a review appended after those seen so far; ``prev_state``
        is the column stored beside them (NULL for a new card); ``at`` the review's time in
        microseconds (the row's ``at``: when given, a last_review equal to it is not stored)."""
        before = self.last.get(card_id)
        if prev is None:
            prev_blob = None if prev_state is None else NO_STATE
        elif prev_state is not None and (before is prev or before == prev):
            prev_blob = None
        else:
            prev_blob = self._pack(prev, card_id, before, at)
        next_blob = self._pack(nxt, card_id, prev if prev is not None else before, at)
        self.last[card_id] = nxt
        return prev_blob, next_blob
