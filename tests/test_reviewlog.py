"""The compact review-log codec: every state comes back exactly, chains included."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prep.engine.store.reviewlog import NO_STATE, Chain, from_us, pack, to_us, unpack
from prep.engine.study.scheduler import CardState

T0 = datetime(2026, 3, 2, 9, 0, 0, 123456, tzinfo=UTC)

times = st.none() | st.datetimes(
    min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)
)
floats = st.none() | st.floats(allow_nan=False, allow_infinity=False)
states = st.builds(
    CardState,
    id=st.sampled_from(["a", "b", "ünï-code"]),
    deck=st.text(max_size=12),
    state=st.integers(1, 3),
    step=st.none() | st.integers(0, 2**40),
    stability=floats,
    difficulty=floats,
    due=times,
    last_review=times,
    reps=st.integers(0, 2**40),
    lapses=st.integers(0, 2**40),
    leech=st.booleans(),
    content_hash=st.text(max_size=20),
    changed=st.booleans(),
    removed=st.booleans(),
)


def test_microseconds_round_trip_exactly() -> None:
    assert from_us(to_us(T0)) == T0
    assert to_us(datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=1)) == 1


@settings(max_examples=60, deadline=None)
@given(s=states, ref=st.none() | states, at_last=st.booleans())
def test_a_state_unpacks_to_itself(s: CardState, ref: CardState | None, at_last: bool) -> None:
    at = to_us(s.last_review) if at_last and s.last_review else None
    assert unpack(pack(s, "a", ref, at), "a", ref, at) == s


def test_what_the_row_and_the_chain_say_is_not_stored_again() -> None:
    """v13: last_review when it is the row's time, reps + 1, lapses kept or + 1, and a due a
    whole number of seconds after the last review are not stored as they were in v5."""
    from prep.engine.store.reviewlog5 import pack as pack5

    a = CardState("a", "d", 2, None, 4.5, 5.0, T0 + timedelta(days=3), T0, 3, 1)
    b = replace(a, stability=9.0, due=T0 + timedelta(days=12), last_review=T0 + timedelta(days=3))
    at = to_us(b.last_review)
    for nxt in (replace(b, reps=4), replace(b, reps=4, lapses=2)):
        blob = pack(nxt, "a", a, at)
        assert len(blob) == 2 + 8 + 8 + 3  # state and form, flags; s, d; due in seconds
        assert len(pack5(nxt, "a", a)) == 40
        assert unpack(blob, "a", a, at) == nxt
        with pytest.raises(ValueError, match="needs the review's time"):
            unpack(blob, "a", a)
    # what does not follow is stored, and read back exactly
    odd = replace(b, reps=9, lapses=0, due=b.due + timedelta(microseconds=7))
    assert len(pack(odd, "a", a, at)) > len(pack(replace(b, reps=4), "a", a, at))
    assert unpack(pack(odd, "a", a, None), "a", a, None) == odd
    # a state outside fsrs's (hand-made), a hash that is not hex, a foreign id: exact too
    for other in (
        replace(odd, state=200),
        replace(odd, content_hash="not hex ünï", deck="é"),
        replace(odd, id="b"),
        replace(odd, content_hash="ABCDEF0123456789"),
    ):
        assert unpack(pack(other, "a", None, at), "a", None, at) == other


def test_deck_and_hash_are_stored_only_when_they_change() -> None:
    a = CardState(id="a", deck="d", content_hash="h" * 16, due=T0, last_review=T0, reps=1)
    b = replace(a, reps=2)
    assert len(pack(b, "a", a)) < len(pack(b, "a", None))
    assert len(pack(replace(b, deck="e"), "a", a)) > len(pack(b, "a", a))  # stored
    with pytest.raises(ValueError, match="refers to none"):
        unpack(pack(b, "a", a), "a", None)  # the chain is needed to read it


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b"]), st.none() | states, states, st.booleans()),
        max_size=12,
    )
)
def test_a_log_decodes_to_what_was_encoded(rows) -> None:
    """Any sequence of reviews, including ones whose prev is not the card's last next (an
    edit between reviews, an imported log) and new cards reviewed again."""
    enc, dec = Chain(), Chain()
    for card_id, prev, nxt, new in rows:
        prev = None if new else prev
        prev_state = None if prev is None else prev.state
        prev = prev and replace(prev, id=card_id)
        nxt = replace(nxt, id=card_id)
        at = to_us(nxt.last_review) if nxt.last_review and new else None
        pblob, nblob = enc.encode(card_id, prev_state, prev, nxt, at)
        assert dec.decode(card_id, prev_state, pblob, nblob, at) == (prev, nxt)


def test_the_usual_review_stores_no_prev() -> None:
    chain = Chain()
    a = CardState(id="a", deck="d", content_hash="h", due=T0, last_review=T0, reps=1, state=2)
    assert chain.encode("a", None, None, a)[0] is None  # a new card
    b = replace(a, reps=2)
    assert chain.encode("a", a.state, a, b)[0] is None  # prev == the last next: not stored
    assert chain.encode("a", None, None, replace(b, reps=1))[0] is None  # new again: NULL says so
    # a row whose prev_state is set but whose prev is not (none is written so; kept exactly)
    assert chain.encode("a", 2, None, b)[0] == NO_STATE


# --- reading the v4 log's JSON states (the v5 migration) -------------------------------------


def slow_legacy_state(text: str):
    """legacy_state as first written: build the state, pack it, format it again and
    compare the text (the migration now checks the same without formatting)."""
    import json
    import struct

    from prep.engine.store.reviewlog import LegacyState, state_json
    from prep.engine.store.reviewlog5 import pack as pack5

    try:
        d = json.loads(text)
        for key in ("due", "last_review"):
            if d.get(key) is not None:
                d[key] = datetime.fromisoformat(d[key]).astimezone(UTC)
        state = CardState(**d)
        pack5(state, state.id, None)
    except (TypeError, ValueError, AttributeError, OverflowError, struct.error):
        return LegacyState(text)
    return state if state_json(state) == text else LegacyState(text)


def assert_same_reading(text: str) -> None:
    from prep.engine.store.reviewlog import legacy_state

    fast, slow = legacy_state(text), slow_legacy_state(text)
    assert type(fast) is type(slow) and fast == slow, text
    if isinstance(fast, CardState):
        assert legacy_state(text, check=False) == fast


@settings(max_examples=300, deadline=None)
@given(states)
def test_reading_a_json_state_is_the_exact_check(s: CardState) -> None:
    from prep.engine.store.reviewlog import state_json

    assert_same_reading(state_json(s))


@pytest.mark.parametrize(
    "edit",
    [
        lambda t: t,
        lambda t: t.replace('"due": "2026', '"due": "2026', 1).replace("Z", "+00:00", 1),
        lambda t: t.replace(".123456Z", "Z", 1),  # no microseconds
        lambda t: t.replace("T09", " 09", 1),  # a space for the T
        lambda t: t.replace(".123456Z", ",123456Z", 1),  # a comma for the point
        lambda t: t.replace('"2026-03-02', '"0999-03-02', 1),  # a year fmt writes as 999
        lambda t: t.replace('"2026-03-02', '"2026-02-30', 1),  # no such day
        lambda t: t.replace('"2026-03-02', '"２026-03-02', 1),  # a non-ASCII digit
        lambda t: t.replace('"reps": 3', '"reps": 3.0', 1),
        lambda t: t.replace('"leech": false', '"leech": 0', 1),
        lambda t: t.replace('"reps": 3', '"reps": 36893488147419103232', 1),  # 2**65
        lambda t: t.replace('"state": 2', '"state": 200', 1),
        lambda t: t.replace('"stability": 4.5', '"stability": "4.5"', 1),
        lambda t: t.replace(", ", ",", 1),  # other spacing
        lambda t: t.replace('{"id": "a", "deck": "d", ', '{"deck": "d", "id": "a", ', 1),
        lambda t: t[:-1] + ', "extra": 1}',
        lambda t: t.replace('"deck": "d"', '"deck": "\\u00e9"', 1),
        lambda t: t.replace('"deck": "d"', '"deck": "é"', 1),
        lambda t: "[1, 2]",
        lambda t: "{}",
        lambda t: "null",
    ],
)
def test_odd_json_states_are_read_as_before(edit) -> None:
    from prep.engine.store.reviewlog import state_json

    s = CardState("a", "d", 2, None, 4.5, 5.0, T0, T0 - timedelta(days=1), 3, 1)
    assert_same_reading(edit(state_json(s)))


def test_a_chain_that_does_not_know_the_earlier_reviews_writes_what_any_reader_reads() -> None:
    """Sync appends to a card's log with a chain that has not read it (no ``before``): the
    prev it gives is written in full, reps and lapses included, so that the reader, which
    knows the earlier reviews, reads the same states (reps 1, not its own reps + 1)."""
    a = CardState("a", "d", 1, 1, 2.3, 2.1, T0 + timedelta(minutes=10), T0, 1, 0)
    b = replace(a, reps=2, state=2, step=None, last_review=T0 + timedelta(days=1))
    writer, reader = Chain(), Chain()
    first = writer.encode("a", None, None, a, to_us(T0))
    second = Chain().encode("a", a.state, a, b)  # knows nothing of the first review
    assert reader.decode("a", None, *first, to_us(T0)) == (None, a)
    assert reader.decode("a", a.state, *second, to_us(b.last_review)) == (a, b)
