"""The grader's round-4 features (issue 25, item 4): point_margin (a pair against the rubric's
other points) and sentence_margin (against the answer's other sentences), and the cases they
change. The held-out numbers behind them are in demos/pretrained/weights/grader_metrics.json
(history, run 10); how they were chosen is demos/pretrained/grader/tunecv.py."""

from __future__ import annotations

import pytest

from prep.demos._torch import torch
from prep.demos.pretrained.grader.model import FEATURES, N_PAIR, with_context
from prep.demos.pretrained.grader.rubric import Rubric

COS = FEATURES.index("cos")
POINT = FEATURES.index("point_margin")
SENTENCE = FEATURES.index("sentence_margin")


def _pairs(cos: list[list[float]]) -> torch.Tensor:
    """Pair features (P, S, N_PAIR) whose cosines are `cos` and whose other columns are noise."""
    c = torch.tensor(cos)  # (P, S)
    feats = torch.rand(*c.shape, N_PAIR)  # (P, S, N_PAIR)
    feats[..., COS] = c
    return feats


def test_point_margin_is_the_cosine_above_the_best_rival_point():
    cos = [[0.9, 0.2], [0.5, 0.6], [0.4, 0.6]]  # 3 points x 2 sentences
    pairs = _pairs(cos)
    feats = with_context(pairs, torch.ones(3, 2))  # (3, 2, F)
    assert feats.shape == (3, 2, len(FEATURES))
    assert torch.equal(feats[..., :N_PAIR], pairs)  # the pair features pass through unchanged
    assert torch.equal(feats[..., FEATURES.index("own_share")], torch.ones(3, 2))
    margin = feats[..., POINT]
    # sentence 0: point 0 is its best match by 0.4; the others trail point 0
    assert margin[:, 0].tolist() == pytest.approx([0.4, -0.4, -0.5])
    # sentence 1: points 1 and 2 tie at 0.6: neither is ahead (0), point 0 trails by 0.4
    assert margin[:, 1].tolist() == pytest.approx([-0.4, 0.0, 0.0])


def test_sentence_margin_is_the_cosine_above_the_answers_best_other_sentence():
    feats = with_context(_pairs([[0.3, 0.8, 0.5]]), torch.ones(1, 3))  # 1 point x 3 sentences
    assert feats[0, :, SENTENCE].tolist() == pytest.approx([-0.5, 0.3, -0.3])


def test_no_rival_means_no_margin():
    """A one-point rubric and a one-sentence answer carry no evidence either way (0), not the
    cosine itself: a keyword list's high cosine would read as a wide margin."""
    feats = with_context(_pairs([[0.85]]), torch.ones(1, 1))
    assert feats[0, 0, POINT] == 0.0 and feats[0, 0, SENTENCE] == 0.0
    two = with_context(_pairs([[0.85], [0.3]]), torch.ones(2, 1))  # 2 points, 1 sentence
    assert two[:, 0, SENTENCE].tolist() == [0.0, 0.0]
    assert two[:, 0, POINT].tolist() == pytest.approx([0.55, -0.55])


@pytest.fixture(scope="module")
def grader(minilm):
    from prep.demos.pretrained.grader.model import Encoder, Grader

    return Grader(encoder=Encoder(real=minilm))


def covered(grader, rubric: Rubric, answer: str) -> list[bool]:
    return [v.covered for v in grader.grade(rubric, answer).points]


def test_a_one_point_rubric_finds_its_point_and_not_a_keyword_list(grader):
    """With the cosine as a lone point's margin, this keyword list scored 0.88 (run 9's head:
    0.68); with no margin it is not covered."""
    one = Rubric.from_texts(
        "What does W_O do?",
        ["W_O mixes heads, so each head can write along directions shared with other heads."],
    )
    assert covered(grader, one, "W_O mixes heads: a head can write along directions others share.")
    assert covered(grader, one, "W_O heads mixing, shared directions.") == [False]
    assert covered(grader, one, "Layer norm subtracts the mean.") == [False]


TENSOR_PARALLEL = Rubric.from_texts(
    "How does Megatron split attention across GPUs?",
    [
        "Each GPU holds a subset of the heads, with Q, K and V split by columns.",
        "W_O is split by its input rows, so each GPU multiplies only its own heads' outputs.",
        "A single all-reduce after W_O sums the partial results.",
    ],
)


@pytest.mark.xfail(
    strict=True,
    reason="round 4's head (run 10) credits the neighbouring W_O point at 0.60 (run 9's head: "
    "0.37): the margins lifted held-out partial answers (0.644 -> 0.733 accuracy) but a "
    "same-subject sentence can still be credited with a point it does not state",
)
def test_a_partial_answer_covers_only_the_point_it_states(grader):
    answer = (
        "Megatron gives every GPU some of the heads, cutting Q, K and V by columns. "
        "That way no communication is needed inside attention."
    )
    assert covered(grader, TENSOR_PARALLEL, answer) == [True, False, False]


def test_a_sentence_per_point_is_credited_to_its_own_point(grader):
    answer = (
        "Every GPU keeps some of the heads, cutting Q, K and V by columns. "
        "W_O is cut by input rows, so a GPU only multiplies the outputs of its own heads. "
        "Then one all-reduce adds the partial results together."
    )
    grade = grader.grade(TENSOR_PARALLEL, answer)
    assert [v.covered for v in grade.points] == [True, True, True]
    shown = [v.sentence for v in grade.points]
    assert shown[0].startswith("Every GPU") and shown[1].startswith("W_O is cut")
    assert shown[2].startswith("Then one all-reduce")


def test_training_sees_the_features_grading_computes(grader):
    """train.py fits the head on each tune point beside its rubric's other points; the grader
    computes point_margin over the whole rubric at once. The two must agree, or the head is
    fit on features it never meets."""
    from prep.demos.pretrained.grader import devset
    from prep.demos.pretrained.grader import text as tx
    from prep.demos.pretrained.grader import train as head_train
    from prep.demos.pretrained.grader.model import rubric_features

    items, rival = head_train.tune_instances(), head_train.tune_rivals()
    assert len(items) == len(rival)
    rubrics, examples = devset.load()
    first = next(ex for ex in examples if ex.split == "tune")
    points = [p.text for p in rubrics[first.qid].points]
    n = len(points)
    trained = head_train.featurise(grader, items[:n], rival[:n])  # n x (S, F)
    sents = tx.sentences(first.answer)
    enc = grader.encoder.encode(points + sents)
    graded = rubric_features(enc[:n], enc[n:])  # (n, S, F)
    for i in range(n):
        assert items[i][0] == points[i] and items[i][1] == sents
        torch.testing.assert_close(trained[i], graded[i])
