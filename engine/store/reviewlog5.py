"""The review log's state records as schema v5 to v12 wrote them (frozen).

Read only by the migrations: v4 -> v5 writes them (tests/test_schema_chain.py builds every
older version), v12 -> v13 (engine/store/schema13.py) reads them and writes the compact records
of engine/store/reviewlog.py. A state is a 40-byte record (``_HEAD``; ``_WIDE_HEAD`` when step,
reps or lapses do not fit two bytes), its deck, content hash and a foreign id appended as JSON
only when they differ from the state it follows in the card's chain.
"""

from __future__ import annotations

import json
import struct

from prep.engine.store.reviewlog import (
    _CHANGED,
    _D_NONE,
    _DUE_NONE,
    _LAST_NONE,
    _LEECH,
    _RAW,
    _REMOVED,
    _S_NONE,
    _STEP_NONE,
    Chain,
    LegacyState,
    from_us,
    to_us,
)
from prep.engine.study.scheduler import CardState

# state (+ _WIDE), flags, step, s, d, due, last, reps, lapses: step, reps and lapses take two
# bytes each, or eight (with _WIDE in the state byte) when one of them does not fit
_HEAD = struct.Struct("<BBHddqqHH")
_WIDE_HEAD = struct.Struct("<BBqddqqqq")
_WIDE = 0x80


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


class Chain5(Chain):
    """A chain of v5 records (the migrations' reading and writing of them)."""

    @staticmethod
    def _pack(
        s: CardState | LegacyState,
        card_id: str,
        ref: CardState | LegacyState | None,
        at: int | None = None,
    ) -> bytes:
        return pack(s, card_id, ref)

    @staticmethod
    def _unpack(
        blob: bytes, card_id: str, ref: CardState | LegacyState | None, at: int | None = None
    ) -> CardState | LegacyState:
        return unpack(blob, card_id, ref)
