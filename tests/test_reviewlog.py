"""The compact review-log codec: every state comes back exactly, chains included."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prep.engine.reviewlog import NO_STATE, Chain, from_us, pack, to_us, unpack
from prep.engine.scheduler import CardState

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
@given(s=states, ref=st.none() | states)
def test_a_state_unpacks_to_itself(s: CardState, ref: CardState | None) -> None:
    assert unpack(pack(s, "a", ref), "a", ref) == s


def test_deck_and_hash_are_stored_only_when_they_change() -> None:
    a = CardState(id="a", deck="d", content_hash="h" * 16, due=T0, last_review=T0, reps=1)
    b = replace(a, reps=2)
    assert len(pack(b, "a", a)) < len(pack(b, "a", None))
    assert len(pack(replace(b, deck="e"), "a", a)) == len(pack(b, "a", None))  # stored
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
        pblob, nblob = enc.encode(card_id, prev_state, prev, nxt)
        assert dec.decode(card_id, prev_state, pblob, nblob) == (prev, nxt)


def test_the_usual_review_stores_no_prev() -> None:
    chain = Chain()
    a = CardState(id="a", deck="d", content_hash="h", due=T0, last_review=T0, reps=1, state=2)
    assert chain.encode("a", None, None, a)[0] is None  # a new card
    b = replace(a, reps=2)
    assert chain.encode("a", a.state, a, b)[0] is None  # prev == the last next: not stored
    assert chain.encode("a", None, None, replace(b, reps=1))[0] is None  # new again: NULL says so
    # a row whose prev_state is set but whose prev is not (none is written so; kept exactly)
    assert chain.encode("a", 2, None, b)[0] == NO_STATE
