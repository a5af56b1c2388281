"""Round 12: a generic sentence (true, on the subject, sharing words with many points, stating
none) earns no point. "W_O maps each head output into the residual stream." was credited with
the tensor-parallel card's by-rows point at 0.88 in the mock interview: the head's only hard
negatives had been a rubric's own other points (point_margin far below 0) and corruptions of the
point, so a sentence equally near every point (point_margin ~0, cosine ~0.5, few of the point's
words) sat where only paraphrases had been, and fewer shared words read as more covered. The
head now trains on generic sentences too (demos/pretrained/data/grader_generic_train.txt) and
sees idf_recall, the point's content weighed by how rare each word piece is in the decks."""

from __future__ import annotations

import pytest

from prep.demos._torch import torch
from prep.demos.pretrained.grader import generic, idf
from prep.demos.pretrained.grader import text as tx
from prep.demos.pretrained.grader import train as head_train
from prep.demos.pretrained.grader.model import FEATURES, Encoded, pair_features


@pytest.fixture(scope="module")
def grader(minilm):
    from prep.demos.pretrained.grader.model import Encoder, Grader

    return Grader(encoder=Encoder(real=minilm))


@pytest.fixture(scope="module")
def rubrics():
    return generic.card_rubrics()


def test_the_mock_interviews_generic_sentence_earns_no_by_rows_point(grader, rubrics):
    sentence = "W_O maps each head output into the residual stream."
    by_rows = {v.id: v for v in grader.grade(rubrics["wo-tensor-parallel"], sentence).points}
    assert by_rows["p3"].text.startswith("W_O is split by input rows")
    assert not by_rows["p3"].covered and by_rows["p3"].score < 0.5
    assert not any(v.covered for v in by_rows.values())


def test_generic_sentences_earn_almost_no_point_on_any_card(grader, rubrics):
    """Four of the evaluation's generic sentences, each against every card whose points share
    a word with it (about 1,500 points): round 11's head credited 24% of them, this one 2.6%
    over the whole final part. The bar, 5%, is twice what was measured."""
    cases = [
        c
        for c in generic.load(rubrics)
        if c.sentence
        in {
            "W_O maps each head output into the residual stream.",
            "W_O takes the concatenated heads and produces the layer's output.",
            "The output projection is a linear layer with d_model outputs.",
            "W_O matters for how attention heads write their results.",
        }
    ]
    pairs = []
    for case in cases:
        for v in grader.grade(case.rubric, case.sentence).points:
            pairs.append((case.covered[v.id], v.covered))
    rates = generic.precision_recall(pairs)
    assert rates["n"] > 1000
    assert rates["false_positive_rate"] <= 0.05, rates


def test_a_right_answer_still_earns_the_point_the_generic_one_does_not(grader, rubrics):
    rubric = rubrics["wo-tensor-parallel"]
    right = "W_O is cut by its input rows, so each GPU computes a partial write over its heads."
    by_id = {v.id: v for v in grader.grade(rubric, right).points}
    assert by_id["p3"].covered and by_id["p3"].sentence == right


def test_idf_ranks_the_decks_common_words_below_the_telling_ones():
    assert idf.idf("head") < idf.idf("residual") < idf.idf("rows")
    assert idf.idf("never-seen-piece") == max(idf.idf(p) for p in ("head", "rows", "gpu"))


def _encoded(text: str, pieces: tuple[str, ...], rows: list[list[float]]) -> Encoded:
    tokens = torch.nn.functional.normalize(torch.tensor(rows), dim=-1)
    return Encoded(
        text=text,
        pooled=tokens.mean(0),
        tokens=tokens,
        stems=tx.content_stems(text),
        negations=0,
        function_ratio=tx.function_ratio(text),
        n_words=len(tx.words(text)),
        pieces=pieces,
    )


def test_idf_recall_weighs_a_match_on_a_rare_piece_above_one_on_a_common_piece():
    point = _encoded("head rows", ("head", "rows"), [[1.0, 0.0], [0.0, 1.0]])
    says_head = _encoded("head", ("head",), [[1.0, 0.0]])
    says_rows = _encoded("rows", ("rows",), [[0.0, 1.0]])
    col, plain = FEATURES.index("idf_recall"), FEATURES.index("align_recall")
    f_head, f_rows = pair_features(point, says_head), pair_features(point, says_rows)
    assert f_head[plain] == pytest.approx(f_rows[plain])  # unweighted: the same 0.5
    assert f_rows[col] > 0.7 > 0.3 > f_head[col]


def test_generic_training_sentences_are_not_the_evaluations_and_read_no_held_out_card():
    evaluation = {c.sentence for c in generic.load()}
    assert not set(head_train.generic_sentences()) & evaluation
    held = set()
    import yaml

    for path in sorted((head_train.ROOT / "questions").glob("*.yaml")):
        for card in yaml.safe_load(path.read_text("utf-8")).get("cards", []):
            if card["id"] in head_train.HELDOUT_CARDS:
                held |= {str(t) for t in (card.get("bullets") or []) + (card.get("points") or [])}
    assert held and not held & set(head_train.corpus_sentences())


def test_the_quoted_sentence_is_the_answers_not_the_generic_one_and_its_score_is_its_own(
    grader, rubrics
):
    """A generic sentence before a right answer was quoted as the evidence for points it does
    not state (it covered them, and is near every point in words): with run 10's head for 59
    of 1,608 covered points over the bundled cards' answers, with this one 14 of 1,606. The
    score shown beside the quoted sentence is that sentence's own (round 11 showed the best
    sentence's, whichever was quoted)."""
    rubric = rubrics["wo-tensor-parallel"]
    generic_one = "W_O maps each head output into the residual stream."
    right = "W_O is cut by its input rows, so each GPU computes a partial write over its heads."
    grade = grader.grade(rubric, f"{generic_one} {right}")
    by_id = {v.id: v for v in grade.points}
    assert by_id["p3"].covered and by_id["p3"].sentence == right
    assert not any(v.covered and v.sentence == generic_one for v in grade.points)
    sents = tx.sentences(f"{generic_one} {right}")
    probs = torch.sigmoid(grader.score_matrix([p.text for p in rubric.points], sents))  # (P, S)
    for i, v in enumerate(grade.points):
        assert v.score == pytest.approx(float(probs[i, sents.index(v.sentence)]), abs=1e-4)
