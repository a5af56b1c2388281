"""What a learner met in a week of real use (user11's pass through the app), each fixed and
held here: a line that said something untrue or a number that disagreed with another screen."""

from __future__ import annotations

import io

from prep.engine.study.session import ReviewSession
from prep.tui.plain import run_plain


def test_plain_quit_mid_session_says_what_is_left_not_a_far_next_due(
    fresh_store, small_collection, clock
) -> None:
    """q after one card: the cards still due now are left, so "Next card due in 23 hours"
    (the first due time *after* now, the reviews due now skipped) was untrue."""
    session = ReviewSession(fresh_store, small_collection, clock=clock)
    total = session.total
    assert total >= 3
    out = io.StringIO()
    # reveal, Good, then quit on the second card
    assert run_plain(session, io.StringIO("\n3\nq\n"), out) == 0
    text = out.getvalue()
    assert "Session over: 1 reviewed" in text
    assert "Next card due in" not in text
    new, learning, due = session.counts()
    assert new + learning + due == total  # the rated one is back as a learning step
    assert f"Left in this session: new {new} · learning {learning} · due {due}" in text


def test_plain_session_run_to_its_end_still_says_when_the_next_card_is_due(
    fresh_store, small_collection, clock
) -> None:
    session = ReviewSession(fresh_store, small_collection, clock=clock, requeue=False)
    out = io.StringIO()
    lines = "".join("\n\n3\n" for _ in range(session.total))  # a red flag takes two Enters
    run_plain(session, io.StringIO(lines + "q\n"), out)
    text = out.getvalue()
    assert session.finished
    assert "Left in this session" not in text
    assert "Next card due in 10 minutes" in text
