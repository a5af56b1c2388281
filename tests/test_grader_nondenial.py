"""The negation rule and phrases that deny nothing: a comparative bound ("no more than d_head"),
an addition ("not only ... but"), an identification ("nothing but"). Round seven's rule read
each as a denial and capped the sentence at 0.05 whatever it said; real denials still cap."""

from __future__ import annotations

import pytest

from prep.demos.pretrained.grader import text as tx
from prep.demos.pretrained.grader.rubric import Rubric

BOUND = "Each head's write has rank at most d_head, so it fills a small subspace."


@pytest.mark.parametrize(
    "sentence",
    [
        "Each head's write has rank no more than d_head.",
        "Its rank is not more than d_head.",
        "A head's write can't be larger than d_head dimensions.",
        "Its rank is never greater than d_head.",
        "The rank is no less than one and no larger than d_head.",
        "W_O is not only a reshape but a mixer of heads.",
        "It isn't just a reshape: W_O mixes heads.",
        "The output is nothing but a sum of per-head writes.",
        "The output is nothing more than a sum of per-head writes.",
        "No matter the head, its write lies in a d_head-dimensional subspace.",
        "Whether or not W_O is folded, the per-head sum holds.",
        # round eight still read these comparisons and set phrases as denials
        "Its rank is no better than d_head.",
        "A head's rank is no worse than d_head.",
        "Its rank isn't any bigger than d_head.",
        "The rank is not much higher than d_head.",
        "A head's write is no wider than d_head.",
        "Each head's write is no more expensive than a d_head-rank product.",
        "Each head's write is no different from a rank-d_head product.",
        "A head's write is no different than a rank-d_head product.",
        "A head's write is not any different from a rank-d_head product.",
        "A head's write isn't dissimilar to a rank-d_head product.",
        "Fusing W_O, a head's write is no different.",
        "The subspace is none other than W_O's d_head rows.",
        "No wonder each head fills a small subspace.",
        "Not surprisingly, each head's write has rank d_head.",
        "A head's write is no worse off than a rank-d_head product.",
        "Each head's write is nothing short of a rank-d_head product.",
        "None the less, each head's write has rank d_head.",
        "Each head's write can't help but stay within rank d_head.",
        "Each head's write never fails to fit a small subspace.",
    ],
)
def test_non_denials_hold_no_negation_cue(sentence: str):
    assert tx.negations(sentence) == 0, sentence
    assert not tx.negation_mismatch(BOUND, sentence)


@pytest.mark.parametrize(
    ("point", "sentence"),
    [
        # a point stated as a bound is not a denial either: the plain sentence can cover it
        ("Each head's write has rank no more than d_head.", "A head writes rank at most d_head."),
        ("W_O is nothing but a sum of per-head writes.", "W_O sums the per-head writes."),
    ],
)
def test_a_bound_in_the_point_is_not_a_denial(point: str, sentence: str):
    assert not tx.negation_mismatch(point, sentence)


@pytest.mark.parametrize(
    ("point", "sentence"),
    [
        # real denials still cap, also beside a non-denial in the same sentence
        (BOUND, "A head's write does not have rank d_head."),
        (BOUND, "Its rank is no more than d_head, but heads never write a small subspace."),
        (BOUND, "There are no more heads than subspaces, and no head fills a subspace."),
        ("W_O mixes heads.", "W_O is not only unable to mix heads, it does not mix them."),
        ("W_O mixes heads.", "Nothing is mixed by W_O."),
        ("W_O mixes heads.", "W_O no longer mixes heads."),
        # "no more" without "than" denies
        ("The cache grows with each head.", "The cache has no more heads to grow."),
        # a comparison without "than" (or after the verb it does not qualify) still denies
        ("W_O mixes heads.", "W_O does not mix heads any better than a reshape does."),
        ("W_O mixes heads.", "W_O is no different from a reshape, and it never mixes heads."),
        ("W_O mixes heads.", "Heads are not mixed better by W_O."),
        ("W_O mixes heads.", "W_O doesn't mix heads; it is no worse than a reshape."),
        ("W_O mixes heads.", "W_O cannot mix heads, none the less it is a projection."),
        ("W_O mixes heads.", "W_O never fails, but it does not mix heads."),
    ],
)
def test_real_denials_still_mismatch(point: str, sentence: str):
    assert tx.negation_mismatch(point, sentence)


BOUND_RUBRIC = Rubric.from_texts(
    "What limits the rank of one head's write into the residual stream?",
    ["A head's write into the residual stream has rank at most d_head."],
)


@pytest.fixture(scope="module")
def grader(minilm):
    from prep.demos.pretrained.grader.model import Encoder, Grader

    return Grader(encoder=Encoder(real=minilm))


def test_the_grader_does_not_cap_a_bound_as_a_denial(grader):
    """Round seven: 'no more than d_head' scored 0.05 (the negation cap) on the point it
    states; the head now scores it."""
    answer = "A head's write into the residual stream has rank no more than d_head."
    (verdict,) = grader.grade(BOUND_RUBRIC, answer).points
    assert verdict.covered, verdict.score
    denial = "A head's write into the residual stream does not have rank d_head."
    (verdict,) = grader.grade(BOUND_RUBRIC, denial).points
    assert not verdict.covered and verdict.score <= 0.06
