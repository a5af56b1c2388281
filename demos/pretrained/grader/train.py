"""Train the grader's head (prep.demos.pretrained.grader.model.Head) and measure it on the held-out set.

    python -m prep.demos.pretrained.grader.train            # writes demos/pretrained/weights/grader.json and
                                                 # demos/pretrained/weights/grader_metrics.json
    python -m prep.demos.pretrained.grader.train --out /tmp/g.json   # a trial run elsewhere

MiniLM stays frozen; only the 11 -> 8 -> 1 head is fit (fixed seed, full-batch Adam), on:

- pairs generated from the bundled decks' 60-second bullets (the cards behind the held-out
  rubrics are left out): the point itself and light rewrites of it (covered); the point negated
  at its first auxiliary verb, its words shuffled, its content words as a bare list, another
  card's bullet, and each other bullet of the same card (same terms, another claim: what a
  partial answer is made of) (not covered);
- generic sentences (demos/pretrained/data/grader_generic_train.txt: on the subject, stating no
  point) against training bullets that share a word with them (not covered; round 12);
- the paraphrase pairs of demos/pretrained/data/sentences.tsv (covered), and one anchor against another
  pair's paraphrase or a negated paraphrase (not covered): plain English, no shared words;
- the `tune` part of the labelled development set (a point counts as covered when the best of
  the answer's sentences covers it, so the head is fit through the same max the grader uses).

The `heldout` part is then graded once, with the two naive baselines beside it (MiniLM cosine
and keyword overlap, each with the threshold that does best on the tune part).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from pathlib import Path
from typing import Any

from prep.demos._torch import torch
from prep.demos.pretrained.grader import devset, idf
from prep.demos.pretrained.grader import text as tx
from prep.demos.pretrained.grader.fitted import (
    HELDOUT_CARDS,
    corpus_sentences,
    digest,
    training_cards,
)
from prep.demos.pretrained.grader.model import (
    FEATURES,
    HEAD_COLUMNS,
    Grader,
    Head,
    apply_rules,
    pair_features,
    rubric_features,
)

ROOT = Path(__file__).resolve().parents[3]
WEIGHTS = Path(__file__).resolve().parents[1] / "weights"
# Held-out questions added in round 2, answers and labels written before any grader saw them:
# reported apart as well, since the first six were looked at five times in round 1.
FRESH_HELDOUT = frozenset({"flops", "no-o-bias", "lora-o-proj"})
# Held-out questions added in round 3, before any tuning of that round (the same rule): reported
# apart, beside the nine older ones, and combined in "heldout".
ROUND3_HELDOUT = frozenset({"logit-lens", "gated-attention", "mla", "backward"})
SEED = 0
STEPS = 600
LR = 0.02
WEIGHT_DECAY = 1e-2  # run 2 fit the tune part to 0.993: a smaller, more regular head
TUNE_WEIGHT = 3.0  # a labelled dev answer counts as much as three generated pairs

_AUX = re.compile(
    r"\b(is|are|was|were|can|could|will|would|should|must|has|have|does|do|keeps|makes|"
    r"needs|mixes|writes|decides|lives|sits)\b"
)
_DO_FORM = {
    "keeps": "does not keep",
    "makes": "does not make",
    "needs": "does not need",
    "mixes": "does not mix",
    "writes": "does not write",
    "decides": "does not decide",
    "lives": "does not live",
    "sits": "does not sit",
}


def negate(sentence: str) -> str | None:
    """The sentence with its first auxiliary (or common verb) negated, or None if it has none."""
    m = _AUX.search(sentence)
    if not m:
        return None
    word = m.group(1)
    if word == "can":
        neg = "cannot"
    elif word in _DO_FORM:
        neg = _DO_FORM[word]
    else:
        neg = word + " not"
    return sentence[: m.start()] + neg + sentence[m.end() :]


def deck_bullets() -> list[list[str]]:
    """Each training card's bullets (the bundled decks; held-out cards left out)."""
    return [[str(b) for b in c["bullets"]] for c in training_cards() if c.get("bullets")]


def write_idf(tokenizer: Any) -> Path:
    """Rebuild demos/pretrained/data/grader_idf.json from the decks (see grader/idf.py)."""
    from prep.demos.pretrained.grader.model import _content_piece

    def pieces(text: str) -> list[str]:
        return [p for p in tokenizer.tokenize(text) if _content_piece(p)]

    path = ROOT / "demos" / "pretrained" / "data" / idf.IDF_FILE
    path.write_text(json.dumps(idf.build(corpus_sentences(), pieces)) + "\n", "utf-8")
    idf.table.cache_clear()
    return path


def paraphrase_pairs() -> list[tuple[str, str]]:
    text = (ROOT / "demos" / "pretrained" / "data" / "sentences.tsv").read_text("utf-8")
    rows = [ln.split("\t") for ln in text.splitlines() if ln and not ln.startswith("#")]
    return [(a.strip(), b.strip()) for a, b in rows]


GENERIC_PER_SENTENCE = 8


def generic_sentences() -> list[str]:
    text = (ROOT / "demos" / "pretrained" / "data" / "grader_generic_train.txt").read_text("utf-8")
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]


def generic_pairs(cards: list[list[str]], rng: random.Random) -> list[tuple[str, list[str], float]]:
    """Round 12: each generic sentence (on the subject, stating no point) against up to
    GENERIC_PER_SENTENCE training bullets that share a content word with it (not covered).
    Without them every hard negative the head saw was a rival point itself (point_margin far
    below 0) or a corruption of the point (negated, shuffled, a keyword list), so a sentence
    about the subject that is equally close to every point (point_margin near 0, cos ~0.5)
    sat where only paraphrases had been: "W_O maps each head output into the residual
    stream." earned the tensor-parallel by-rows point at 0.88."""
    bullets = sorted({b for card in cards for b in card})
    out: list[tuple[str, list[str], float]] = []
    for sentence in generic_sentences():
        stems = tx.content_stems(sentence)
        sharing = [b for b in bullets if stems & tx.content_stems(b)]
        for b in rng.sample(sharing, min(GENERIC_PER_SENTENCE, len(sharing))):
            out.append((b, [sentence], 0.0))
    return out


def generated(rng: random.Random) -> list[tuple[str, list[str], float]]:
    """(point, [sentence], label) pairs from the decks and the paraphrase file."""
    out: list[tuple[str, list[str], float]] = []
    cards = deck_bullets()
    every = [b for card in cards for b in card]
    for ci, card in enumerate(cards):
        for b in card:
            out.append((b, [b], 1.0))
            plain = re.sub(r"\s*\([^)]*\)", "", b).rstrip(".") + "."
            if plain != b:
                out.append((b, [plain], 1.0))
            neg = negate(b)
            if neg:
                out.append((b, [neg], 0.0))
            ws = b.split()
            shuffled = ws[:]
            rng.shuffle(shuffled)
            if shuffled != ws:
                out.append((b, [" ".join(shuffled)], 0.0))
            content = [w for w in tx.words(b) if w not in tx.STOPWORDS]
            if len(content) >= 3:
                out.append((b, [", ".join(content) + "."], 0.0))
            other = rng.choice([o for j, c in enumerate(cards) if j != ci for o in c])
            out.append((b, [other], 0.0))
            # the same card's other bullets: the same topic and terms, another claim (the
            # hard negatives a partial answer is made of)
            for sibling in card:
                if sibling != b:
                    out.append((b, [sibling], 0.0))
    assert every
    out += generic_pairs(cards, rng)
    pairs = paraphrase_pairs()
    for i, (a, p) in enumerate(pairs):
        out.append((a, [p], 1.0))
        out.append((p, [a], 1.0))
        out.append((a, [pairs[(i + 7) % len(pairs)][1]], 0.0))
        neg = negate(p)
        if neg:
            out.append((a, [neg], 0.0))
    return out


def tune_instances() -> list[tuple[str, list[str], float]]:
    rubrics, examples = devset.load()
    out = []
    for ex in examples:
        if ex.split != "tune":
            continue
        sents = tx.sentences(ex.answer)
        for p in rubrics[ex.qid].points:
            out.append((p.text, sents, float(ex.covered[p.id])))
    return out


def rivals(items: list[tuple[str, list[str], float]], rng: random.Random) -> list[list[str]]:
    """Each generated item's rival points (for point_margin): a deck bullet's are its card's
    other bullets; a paraphrase anchor, in no card, gets a random training card's bullets."""
    cards = deck_bullets()
    of: dict[str, list[str]] = {}
    for card in cards:
        for b in card:
            of.setdefault(b, card)
    out = []
    for point, _, _ in items:
        group = of.get(point) or rng.choice(cards)
        out.append([t for t in group if t != point])
    return out


def tune_rivals() -> list[list[str]]:
    """tune_instances()'s rival points, in its order: the other points of the same rubric."""
    rubrics, examples = devset.load()
    out = []
    for ex in examples:
        if ex.split == "tune":
            points = rubrics[ex.qid].points
            out += [[q.text for q in points if q.id != p.id] for p in points]
    return out


def featurise(
    grader: Grader, items: list[tuple[str, list[str], float]], rival: list[list[str]]
) -> list[torch.Tensor]:
    """Each item's features (S, F): its point against its sentences, beside its rivals."""
    texts = [
        t for (point, sents, _), r in zip(items, rival, strict=True) for t in (point, *sents, *r)
    ]
    grader.encoder.encode(texts)
    out = []
    for (point, sents, _), r in zip(items, rival, strict=True):
        enc = grader.encoder.encode([point, *r, *sents])
        out.append(rubric_features(enc[: 1 + len(r)], enc[1 + len(r) :])[0])  # (S, F)
    return out


def fit(
    feats: list[torch.Tensor], labels: torch.Tensor, weights: torch.Tensor, seed: int = SEED
) -> Head:
    torch.manual_seed(seed)
    head = Head()
    flat = torch.cat(feats)  # (sum S, F)
    cols = flat[:, HEAD_COLUMNS]  # (sum S, n)
    head.mean.copy_(cols.mean(0))
    head.std.copy_(cols.std(0).clamp_min(1e-3))
    lengths = torch.tensor([f.shape[0] for f in feats])
    owner = torch.repeat_interleave(torch.arange(len(feats)), lengths)  # (sum S,)
    pos = float((labels * weights).sum())
    neg = float(((1 - labels) * weights).sum())
    w = weights * torch.where(labels > 0, (pos + neg) / (2 * pos), (pos + neg) / (2 * neg))
    opt = torch.optim.Adam(head.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
    for _ in range(STEPS):
        logits = apply_rules(head(flat), flat, own=False)  # (sum S,)
        best = torch.full((len(feats),), -1e9).scatter_reduce(0, owner, logits, "amax")
        loss = torch.nn.functional.binary_cross_entropy_with_logits(best, labels, weight=w)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return head.eval()


def evaluate(grader: Grader, tune_threshold_split: str = "tune") -> dict[str, Any]:
    """Grade the held-out part with the grader and the two baselines; time per answer."""
    rubrics, examples = devset.load()
    feats: dict[tuple[str, str], torch.Tensor] = {}

    def features(rubric: Any, answer: str) -> torch.Tensor:
        key = (rubric.question, answer)
        if key not in feats:
            sents = tx.sentences(answer)
            enc = grader.encoder.encode([p.text for p in rubric.points] + sents)
            ps, ss = enc[: len(rubric.points)], enc[len(rubric.points) :]
            feats[key] = torch.tensor([[pair_features(p, s) for s in ss] for p in ps])
        return feats[key]  # (P, S, F)

    def baseline(column: int, tau: float):
        def predict(rubric: Any, answer: str) -> dict[str, bool]:
            best = features(rubric, answer)[..., column].max(1).values  # (P,)
            return {p.id: bool(v >= tau) for p, v in zip(rubric.points, best, strict=True)}

        return predict

    tune = [e for e in examples if e.split == tune_threshold_split]
    held = [e for e in examples if e.split == "heldout"]
    baselines = {}
    for name, column in (("minilm_cosine", FEATURES.index("cos")), ("keyword_overlap", 3)):
        grid = [i / 100 for i in range(0, 101, 2)]
        best_tau = max(
            grid,
            key=lambda t: devset.balanced_accuracy(
                devset.judge(tune, baseline(column, t), rubrics)
            ),
        )
        held_judged = devset.judge(held, baseline(column, best_tau), rubrics)
        baselines[name] = {"threshold": best_tau, **devset.report(held_judged)}

    grader.encoder._cache.clear()
    start = time.perf_counter()
    judged = devset.judge(
        held,
        lambda r, a: {v.id: v.covered for v in grader.grade(r, a).points},
        rubrics,
    )
    per_answer = (time.perf_counter() - start) / len(held)
    tune_judged = devset.judge(
        tune, lambda r, a: {v.id: v.covered for v in grader.grade(r, a).points}, rubrics
    )
    fresh = [j for j in judged if j[0].qid in FRESH_HELDOUT]
    older = [j for j in judged if j[0].qid not in ROUND3_HELDOUT]
    round3 = [j for j in judged if j[0].qid in ROUND3_HELDOUT]
    return {
        "heldout": devset.report(judged),
        "heldout_before_round3": devset.report(older) if round3 else None,
        "heldout_round3": devset.report(round3) if round3 else None,
        "heldout_fresh": devset.report(fresh) if fresh else None,
        "tune": {"balanced_accuracy": round(devset.balanced_accuracy(tune_judged), 3)},
        "baselines_heldout": baselines,
        "seconds_per_answer": round(per_answer, 4),
    }


# Every run whose held-out numbers were seen, and what changed after it (none of the changes
# was chosen by reading held-out answers; each is argued in its line). The last is the shipped.
HISTORY = [
    "run 1: head 8->16->1, no rule: heldout BA 0.786, salad 0.056, negated 0.333, "
    "paraphrase 0.556 -> add the negation rule the issue proposes (a sentence whose negation "
    "parity differs from the point's cannot cover it)",
    "run 2: + parity rule: BA 0.788, salad 0.0, negated 0.278, paraphrase 0.611; tune BA 0.993 "
    "(overfit) -> smaller head (8 hidden), weight decay 1e-2; rule by presence, not parity "
    "(a doubly negated sentence slipped through parity)",
    "run 3: BA 0.824, salad 0.0, negated 0.333, paraphrase 0.611; a synthetic probe (not the "
    "dev set) showed the head scoring two unrelated negated sentences as agreeing -> the head "
    "no longer sees neg_mismatch; negation is the rule's alone",
    "run 4: BA 0.818, salad 0.056, negated 0.333, paraphrase 0.611; the tests' partial answers "
    "(same subject, another claim) were called covered -> the same card's other bullets join "
    "the generated negatives (leave-one-question-out on the tune part: BA 0.763 -> 0.753, no "
    "better, kept because the argument for it stands)",
    "run 5 (round 1's shipped head): BA 0.787 (CI 0.709-0.858), salad 0.0, negated 0.333, "
    "paraphrase 0.5; a user pass found 'W_O does not mix heads ... it only fixes the shape' "
    "graded 2/2 on wo-two-roles (a point that itself says 'never' let the presence rule "
    "through) -> round 2: the negation rule compares what the point and the sentence deny "
    "(text.negation_mismatch; 'no X:' is a condition), the user-pass case and its rubric join "
    "the tune part, three fresh held-out questions (flops, no-o-bias, lora-o-proj; answers and "
    "labels written before any grader saw them, their cards left out of training). Judged on "
    "the tune part only: BA 0.787 -> 0.839, paraphrase 0.381 -> 0.714, negated 0.143 -> 0.190",
    "run 6 (retrained with the round-2 rule): held-out (9 questions) BA 0.770 (CI "
    "0.698-0.843), salad 0.0, negated 0.069, paraphrase 0.393; of which the fresh three: BA "
    "0.748, paraphrase 0.2 (their first look); tune BA 0.839. It also failed two of "
    "tests/test_grader.py's hand-written cases that run 5's head passes (the strong answer's "
    "'slice' point credited to the weighting sentence at 0.96; the 'common axes' paraphrase "
    "missed) -> a tune-only trial, no held-out look: clauses of a sentence as extra units "
    "(for terse answers): tune BA 0.767, salad 0.381, dropped",
    "run 7: run 5's head unchanged with the round-2 rule (python -m "
    "prep.demos.pretrained.grader.train --evaluate): tune BA 0.822 (run 6: 0.839, both "
    "in-sample), passes every hand-written case in tests/test_grader.py; chosen on those two "
    "before its held-out look (BA 0.777, salad 0.034, negated 0.138, paraphrase 0.429); "
    "shipped. Evaluated once more, unchanged, after the grader took torch's thread count from "
    "the machine's load (time per answer 1.73 s -> this file's, on 2 cores at load ~11)",
    "run 8 (round 3, before any tuning): run 7's head unchanged, on the held-out part extended "
    "by four fresh questions (logit-lens, gated-attention, mla, backward: 32 answers written "
    "and labelled from their cards' rubrics before any grader saw them). The nine older "
    "questions: BA 0.777, salad 0.034, negated 0.138, paraphrase 0.429 (as run 7); the four "
    "new: BA 0.864 (CI 0.789-0.931), salad 0.062, negated 0.0, paraphrase 0.5; all 13: BA "
    "0.808 (CI 0.754-0.857), salad 0.044, negated 0.089, paraphrase 0.455. Caveat: run 7's "
    "head was fit before these cards were held out, so its generated pairs include their "
    "bullets (other wording, same facts): the new part flatters it; every head fit from now "
    "on leaves those cards out",
    "run 9 (round 3, shipped): a ninth feature, cos_sentence = cos x function_ratio (trust "
    "MiniLM's cosine as far as the text is a sentence; a keyword list has none). Chosen on "
    "the tune part alone, leave one tune question out (7 folds, heads fit without the fold): "
    "today's features BA 0.746, salad 0.095, negated 0.190, paraphrase 0.333 -> with "
    "cos_sentence BA 0.814, salad 0.095, negated 0.190, paraphrase 0.619 (seeds 1-3: BA "
    "0.813/0.796/0.791 against 0.746/0.766/0.767). Tried and not taken, tune CV only: four "
    "more interaction features (BA 0.802), sentence windows (0.741), 36 hand-written "
    "word-disjoint paraphrases of deck points as training pairs (0.786-0.809, paraphrase "
    "0.667 but negated 0.238), a threshold moved on tune (no consistent gain). Its one "
    "held-out look: all 13 questions BA 0.817 (CI 0.765-0.867), salad 0.0, negated 0.067, "
    "paraphrase 0.523; the nine older BA 0.781, salad 0.0, negated 0.103, paraphrase 0.429; "
    "round 3's four BA 0.883, salad 0.0, negated 0.0, paraphrase 0.688",
    "run 10 (round 4, shipped): two context features, point_margin (cos minus the sentence's "
    "best cos with the rubric's other points: is this the point it states?) and "
    "sentence_margin (cos minus the point's best cos with the answer's other sentences: is "
    "this the answer's sentence for it?), against partial answers credited with a "
    "neighbouring point. Chosen on the tune part alone (python -m "
    "prep.demos.pretrained.grader.tunecv, 7 folds, seeds 0-3): without them BA "
    "0.806/0.796/0.795/0.796, paraphrase 0.57-0.62, negated 0.190 -> with them BA "
    "0.850/0.855/0.856/0.868, paraphrase 0.76-0.81, negated 0.0, salad 0.048. Tried and not "
    "taken, tune CV only: point_margin alone (0.827-0.839), with an align_recall margin too "
    "(0.851-0.863, no gain), is-best flags (0.844-0.850; 0.809-0.823), a softmax over points "
    "(0.819), the sentence margin clipped at 0 (0.827-0.855), clauses as extra units (0.773-"
    "0.790, salad 0.19), each card's answer sentences as covering its bullets, with and "
    "without another card's answer as a negative (0.844-0.862, no gain), a moved threshold "
    "(flat from logit -0.5 to 1), a 4-seed logit ensemble (0.856, no gain over one seed). "
    "About 14 variants on 7 questions: a little optimistic. Its one held-out look: the nine "
    "older BA 0.835 (CI 0.773-0.897), salad 0.0, negated 0.034, paraphrase 0.607; round 3's "
    "four BA 0.889, salad 0.062, negated 0.0, paraphrase 0.688; all 13 BA 0.855 (CI "
    "0.806-0.898), salad 0.022, negated 0.022, paraphrase 0.636",
    "run 11 (round 12, shipped): a mock interview credited 'W_O maps each head output into the "
    "residual stream.' with the tensor-parallel by-rows point at 0.88. Why: run 10's hard "
    "negatives were a rubric's own other points (point_margin far below 0) and corruptions of "
    "the point, so a same-subject sentence near every point (point_margin ~0, cos 0.49, lex "
    "0.18) sat where only paraphrases had been; with all else fixed the head's logit fell from "
    "+2.4 to -1.6 as lex_recall rose 0 -> 1 (fewer of the point's words read as more "
    "covered). A labelled generic set was written first (grader_generic.yaml: 16 sentences x "
    "every card sharing a word, ~6,000 points; part look / part final): run 10 credited 23% "
    "(look) and 24% (final) of those points. Changes: generic training negatives "
    "(grader_generic_train.txt, 8 bullets each) and a tenth pair feature, idf_recall (grader/"
    "idf.py). Tune CV (seeds 0, 1): run 10 BA 0.850/0.855 -> negatives alone 0.842/0.849 "
    "(generic look 0.043) -> with idf_recall 0.844/0.855 (look 0.033). Tried, not taken: a "
    "head monotone in the eight similarity features (look 0.044, tune recall 0.831 in-sample), "
    "2 or 4 negatives a sentence (look 0.096, 0.058). Its one held-out look: all 13 BA 0.854 "
    "(CI 0.805-0.896; run 10 0.855), precision 0.876 -> 0.886, recall 0.807 -> 0.795, salad "
    "0.022, negated 0.022, paraphrase 0.614 (0.636); generic final part 0.240 -> 0.026. "
    "Lost: test_grader's three-word 'weights each head;' (now a strict xfail). Tried after, "
    "not taken: idf weights times each token's distance from the rubric's other points (for "
    "the partial-answer xfails): look 0.037, in-sample tune BA 0.897, no xfail passed",
    "run 12 (round 13, not shipped): the partial-answer limit ('Each head's block of W_O can scale "
    "it up ...' credited with the mixing and slice points, 0.75 and 0.73). A labelled set was "
    "written first (grader_partial.yaml: 29 one-point sentences, each against its card's whole "
    "rubric; part look 15 / final 14): run 11 credited 0.196 (look) and 0.213 (final) of the "
    "points they do not state, recall 1.0. Why: every feature but point_margin compares the "
    "sentence with one point alone, and point_margin compares whole-sentence cosines, held up "
    "by the rubric's shared subject words; on look every false credit had a point_margin "
    "below 0. Tried first: own_share as a twelfth head input: look 0.196 -> 0.235, dropped. "
    "Shipped: own_share as a rule (a sentence less than a third of which is about the point "
    "cannot cover it; a third: up to three points a sentence), the head refit with it, and "
    "on the decks as they are now (audit12 edited cards after run 11: the idf table differed "
    "in 98 word pieces); the fit's decks_sha256 is stored (grader/fitted.py). Tune CV (7 "
    "folds, seeds 0, 1): BA 0.850/0.850 -> 0.874/0.868, partial 0.905 -> 0.952, rambling "
    "0.62/0.67 -> 0.905, paraphrases found 0.762 -> 0.667 (recall traded), strong 0.952 -> "
    "0.905. Its one held-out look: all 13 BA 0.847 (CI 0.800-0.891; run 11 0.854), partial "
    "0.733 -> 0.822, rambling 0.867 -> 0.933, paraphrase found 0.614 -> 0.455 (below the "
    "issue's 0.50 bar), terse 0.756 -> 0.733. It also failed two of the hand-written tests "
    "run 11 passes (test_grader_paraphrase's plain-words paraphrase 0.28; test_grader_generic's "
    "mock sentence 0.53 on the by-rows point), neither touched by the rule (own_share 0.75, "
    "0.85): fit under the rule, the head lost what the sibling negatives teach (the rule caps "
    "every one of them, so they gave no gradient)",
    "run 13 (round 13, shipped): run 12's rule at grading, the head fit under the negation "
    "rule alone (apply_rules own=False), on the decks as they are now. Judged without a "
    "held-out look: both tests of run 12 pass again, every hand-written grader test passes; "
    "partial look 0.196 -> 0.059 of unstated points credited (recall 1.0, 12 of 15 answers "
    "exact); tune CV (seeds 0, 1): BA 0.850 -> 0.857/0.857, partial 0.905 -> 1.0, rambling "
    "0.62/0.67 -> 0.81/0.857, paraphrases found 0.762 -> 0.667, terse 0.667 -> 0.619. Its "
    "held-out look (the second this round): all 13 BA 0.862 (CI 0.817-0.902; run 11 0.854), "
    "precision 0.886 -> 0.934, recall 0.795 -> 0.771 (traded), partial 0.733 -> 0.844, "
    "rambling 0.867 -> 0.911, paraphrase found 0.614 (as run 11), terse 0.756 -> 0.689, salad "
    "and negated 0.022; the partial set's final part: 0.213 -> 0.0 of unstated points "
    "credited, recall 1.0, 14 of 14 answers exact (run 11: 7); generic final 0.026 -> 0.027",
    "run 14 (round 13, shipped): a learner pass graded a strong zero-init answer 1 of 5: the "
    "negation rule called any sentence with a denial in any clause a mismatch for every plain "
    "point ('At init every block writes nothing, and ... the residual stream is just the "
    "embedding.' could not cover the embedding point). Now a sentence that alone negates is "
    "a mismatch only when what it denies is in the point (text.negation_mismatch), and a cue "
    "ending its clause denies the words before it ('writes nothing'). Tune CV seed 0: BA 0.857 "
    "(run 13's recipe 0.857), negated 0.0, salad 0.095 -> 0.143, rambling 0.81 -> 0.857; seed "
    "1: 0.850 (0.857). Its held-out look (the third this round): all 13 BA 0.875 (CI "
    "0.836-0.914), precision 0.924, recall 0.807 (run 11: 0.854, 0.886, 0.795), strong 0.978, "
    "partial 0.867, rambling 0.867, terse 0.756, paraphrase 0.614, salad and negated 0.022; "
    "partial final part 0.0 of unstated points credited (14 of 14 exact); generic final 0.024",
]

BARS = {
    "balanced_accuracy": (">=", 0.80),
    "salad_called_covered": ("<=", 0.25),
    "negated_called_covered": ("<=", 0.25),
    "paraphrase_found": (">=", 0.50),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=WEIGHTS / "grader.json")
    parser.add_argument(
        "--evaluate",
        action="store_true",
        help="no training: grade the dev set with the head already in --out, rewrite its metrics",
    )
    parser.add_argument(
        "--tune-only",
        action="store_true",
        help="report the tune part per style and stop: no held-out look, nothing written",
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(max(1, torch.get_num_threads()))
    metrics_path = args.out.with_name(args.out.stem + "_metrics.json")
    if args.evaluate:
        head = Head.from_json(json.loads(args.out.read_text("utf-8"))["head"])
        old = json.loads(metrics_path.read_text("utf-8")) if metrics_path.exists() else {}
        metrics = evaluate(Grader(head=head))
        metrics["bars"] = {k: f"{op} {v}" for k, (op, v) in BARS.items()}
        metrics["history"] = HISTORY
        metrics["training"] = old.get("training")  # the run that fit this head
        metrics_path.write_text(json.dumps(metrics, indent=2) + "\n", "utf-8")
        print(json.dumps({k: metrics[k] for k in ("heldout", "seconds_per_answer")}, indent=1))
        return 0
    start = time.perf_counter()
    rng = random.Random(SEED)
    grader = Grader(head=Head())
    load_s = time.perf_counter() - start
    write_idf(grader.encoder.tokenizer)  # idf_recall's table, from the decks as they are now
    decks = digest()  # stored with the head: fitted.stale() compares the decks with it
    gen = generated(rng)
    items = gen + tune_instances()
    n_gen = len(gen)
    feats = featurise(grader, items, rivals(gen, random.Random(SEED + 1)) + tune_rivals())
    labels = torch.tensor([lab for *_, lab in items])
    weights = torch.tensor([1.0] * n_gen + [TUNE_WEIGHT] * (len(items) - n_gen))
    grader.head = fit(feats, labels, weights)
    train_s = time.perf_counter() - start - load_s
    if args.tune_only:
        args.out.write_text(json.dumps({"head": grader.head.to_json()}) + "\n", "utf-8")
        rubrics, examples = devset.load()
        tune = [e for e in examples if e.split == "tune"]
        judged = devset.judge(
            tune, lambda r, a: {v.id: v.covered for v in grader.grade(r, a).points}, rubrics
        )
        print(json.dumps(devset.report(judged), indent=1))
        return 0
    metrics = evaluate(grader)
    metrics["bars"] = {k: f"{op} {v}" for k, (op, v) in BARS.items()}
    metrics["history"] = HISTORY
    metrics["training"] = {
        "seed": SEED,
        "steps": STEPS,
        "lr": LR,
        "weight_decay": WEIGHT_DECAY,
        "generated_pairs": n_gen,
        "tune_point_instances": len(items) - n_gen,
        "heldout_cards_excluded": sorted(HELDOUT_CARDS),
        "seconds_load": round(load_s, 1),
        "seconds_features_and_fit": round(train_s, 1),
    }
    shipped = {"head": grader.head.to_json(), "decks_sha256": decks}
    args.out.write_text(json.dumps(shipped, indent=None) + "\n", "utf-8")
    metrics_path.write_text(json.dumps(metrics, indent=2) + "\n", "utf-8")
    print(json.dumps({k: metrics[k] for k in ("heldout", "tune", "seconds_per_answer")}, indent=1))
    for name, base in metrics["baselines_heldout"].items():
        print(
            name,
            base["balanced_accuracy"],
            base["salad_called_covered"],
            base["negated_called_covered"],
            base["paraphrase_found"],
        )
    print(f"wrote {args.out} and {metrics_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
