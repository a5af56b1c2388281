"""How rare each MiniLM word piece is in the bundled decks: the inverse document frequency that
weighs the grader's idf_recall (BERTScore's idf weighting, Zhang et al. 2020), torch-free.

A point's words are not equally telling. "W_O", "head" and "residual stream" are in a large share
of the decks' sentences, so a sentence that shares only those is about the subject, not about the
point; "rows", "GPU" and "partial" are what the tensor-parallel point says. The table
(demos/pretrained/data/grader_idf.json) counts, for each word piece, the sentences of the training
cards (prompts, answers, bullets and points; the held-out cards left out) that hold it. It is a
snapshot, like the head's weights: `python -m prep.demos.pretrained.grader.train` rebuilds both.
"""

from __future__ import annotations

import json
import math
from functools import cache
from importlib import resources

IDF_FILE = "grader_idf.json"


@cache
def table() -> tuple[int, dict[str, int]]:
    """(number of sentences, {word piece: sentences holding it})."""
    raw = resources.files("prep.demos.pretrained").joinpath("data", IDF_FILE).read_text("utf-8")
    data = json.loads(raw)
    return int(data["n_sentences"]), {str(k): int(v) for k, v in data["df"].items()}


def idf(piece: str) -> float:
    """log((N + 1) / (df + 1)): 0 for a piece in every sentence, highest for one never seen."""
    n, df = table()
    return math.log((n + 1) / (df.get(piece, 0) + 1))


def build(sentences: list[str], tokenize) -> dict:  # noqa: ANN001 - a text -> pieces callable
    """The table's JSON form from the corpus sentences (each piece counted once a sentence)."""
    df: dict[str, int] = {}
    for sentence in sentences:
        for piece in set(tokenize(sentence)):
            df[piece] = df.get(piece, 0) + 1
    return {"n_sentences": len(sentences), "df": dict(sorted(df.items()))}
