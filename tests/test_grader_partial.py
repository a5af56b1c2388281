"""The partial-answer limit (round 13): a sentence supports a point only through what it says
of that point (own_share and its rule, prep.demos.pretrained.grader.model), measured on the
labelled set demos/pretrained/data/grader_partial.yaml (prep.demos.pretrained.grader.partial)."""

from __future__ import annotations

import pytest

from prep.demos._torch import torch
from prep.demos.pretrained.grader import partial
from prep.demos.pretrained.grader.model import (
    FEATURES,
    NEGATED_CAP,
    OWN_SHARE_MIN,
    Encoded,
    apply_rules,
    own_share,
)


def _enc(rows: list[list[float]], pieces: tuple[str, ...] = ()) -> Encoded:
    tokens = torch.nn.functional.normalize(torch.tensor(rows), dim=-1)
    return Encoded("", tokens[0], tokens, set(), 0, 0.5, len(rows), pieces)


A, B, C, SHARED = [1.0, 0, 0, 0], [0, 1.0, 0, 0], [0, 0, 1.0, 0], [0, 0, 0, 1.0]


def test_own_share_is_the_share_of_the_sentence_closest_to_each_point():
    pa, pb = _enc([A, SHARED]), _enc([B, SHARED])  # two points sharing a subject word
    # a sentence of B's own word, twice, and the shared word: 2/3 B's, the shared third both's
    s = _enc([B, B, SHARED])
    share = own_share([pa, pb], [s])
    assert share[:, 0].tolist() == pytest.approx([1 / 3, 1.0])
    # a sentence of the shared word alone is both points' (a tie counts for both)
    assert own_share([pa, pb], [_enc([SHARED])])[:, 0].tolist() == pytest.approx([1.0, 1.0])
    # a word that matches neither point better is everyone's; C is closest to none of them
    assert own_share([pa, pb], [_enc([C])])[:, 0].tolist() == pytest.approx([1.0, 1.0])


def test_own_share_weighs_each_token_by_its_rarity():
    """'head' is in a large share of the decks' sentences, 'noisy' in few: a sentence whose
    rare word is B's is B's however many common words it shares with A."""
    pa, pb = _enc([A, SHARED]), _enc([B, SHARED])
    plain = _enc([A, B])  # one word each: half and half, unweighted
    assert own_share([pa, pb], [plain])[:, 0].tolist() == pytest.approx([0.5, 0.5])
    weighted = _enc([A, B], pieces=("head", "noisy"))
    a, b = own_share([pa, pb], [weighted])[:, 0].tolist()
    assert b > 0.5 > a


def test_a_one_point_rubric_has_no_rival_to_share_with():
    assert own_share([_enc([A])], [_enc([B]), _enc([A])]).tolist() == [[1.0, 1.0]]


def test_the_rule_caps_a_sentence_mostly_about_other_points():
    feats = torch.zeros(3, len(FEATURES))
    feats[:, FEATURES.index("own_share")] = torch.tensor([0.2, OWN_SHARE_MIN, 0.9])
    logits = torch.tensor([4.0, 4.0, 4.0])
    assert apply_rules(logits, feats).tolist() == [NEGATED_CAP, 4.0, 4.0]
    assert apply_rules(logits, feats, own=False).tolist() == [4.0, 4.0, 4.0]


def test_the_partial_set_is_labelled_one_stated_point_a_sentence():
    cases = partial.load()
    assert {c.part for c in cases} == {"look", "final"} and len(cases) == 29
    for case in cases:
        assert sum(case.covered.values()) == 1, case.card
        assert len(case.covered) >= 3


@pytest.fixture(scope="module")
def grader(minilm):
    from prep.demos.pretrained.grader.model import Encoder, Grader

    return Grader(encoder=Encoder(real=minilm))


def test_partial_answers_earn_their_point_and_few_others(grader):
    """The look part (15 one-point sentences, 66 points): round 12's grader credited 0.196 of
    the points they do not state (precision 0.60), this one 0.059, recall 1.0 both. The bar,
    0.10, is half of round 12's; recall must stay 1.0."""

    def predict(rubric, answer):
        return {v.id: v.covered for v in grader.grade(rubric, answer).points}

    look = partial.measure(predict)["partial_look"]
    assert look["false_positive_rate"] <= 0.10, look
    assert look["recall"] == 1.0, look


def test_a_sentence_stating_two_points_still_covers_both(grader):
    from prep.demos.pretrained.grader.rubric import Rubric

    rubric = Rubric.from_texts(
        "What does W_O do?",
        [
            "W_O mixes heads, so each head can write along directions shared with other heads.",
            "Each head's block of W_O can amplify a useful head or suppress a noisy one.",
            "Without W_O each head writes only into its own fixed slice of the residual stream.",
        ],
    )
    answer = "W_O mixes the heads into shared directions and can amplify or suppress each head."
    assert [v.covered for v in grader.grade(rubric, answer).points] == [True, True, False]
