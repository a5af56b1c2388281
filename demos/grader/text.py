"""The grader's text rules, torch-free: sentences, content words, negation cues, salad signs.

These are the parts of grading that a rule states better than a model: where an answer's
sentences begin and end, which words carry content, and whether a sentence negates what a
point asserts ("W_O does not mix heads" against "W_O mixes heads"). The learned head
(prep.demos.grader.model) weighs them together with MiniLM's similarities.
"""

from __future__ import annotations

import re

# Negation cues. "without" is not one: "without W_O, heads keep their slices" asserts something.
NEGATIONS = frozenset(
    [
        "not",
        "no",
        "never",
        "none",
        "nothing",
        "neither",
        "nor",
        "cannot",
        "cant",
        "can't",
        "don't",
        "doesn't",
        "isn't",
        "aren't",
        "wasn't",
        "weren't",
        "won't",
        "wouldn't",
        "shouldn't",
        "couldn't",
        "didn't",
        "hasn't",
        "haven't",
        "nobody",
    ]
)
_NEG_SUFFIX = re.compile(r"n['’]t$")

STOPWORDS = (
    frozenset(
        [
            "a",
            "an",
            "the",
            "and",
            "or",
            "but",
            "if",
            "then",
            "so",
            "of",
            "to",
            "in",
            "on",
            "at",
            "by",
            "for",
            "with",
            "from",
            "into",
            "onto",
            "as",
            "is",
            "are",
            "was",
            "were",
            "be",
            "been",
            "being",
            "it",
            "its",
            "it's",
            "this",
            "that",
            "these",
            "those",
            "there",
            "here",
            "which",
            "who",
            "whom",
            "what",
            "when",
            "where",
            "why",
            "how",
            "can",
            "could",
            "would",
            "should",
            "will",
            "shall",
            "may",
            "might",
            "must",
            "do",
            "does",
            "did",
            "done",
            "has",
            "have",
            "had",
            "having",
            "i",
            "you",
            "he",
            "she",
            "we",
            "they",
            "them",
            "their",
            "our",
            "your",
            "my",
            "me",
            "us",
            "his",
            "her",
            "than",
            "too",
            "very",
            "just",
            "also",
            "only",
            "even",
            "such",
            "same",
            "other",
            "each",
            "every",
            "any",
            "all",
            "both",
            "either",
            "one",
            "two",
            "some",
            "more",
            "most",
            "much",
            "many",
            "up",
            "down",
            "out",
            "over",
            "under",
            "again",
            "further",
            "once",
            "about",
            "above",
            "below",
            "between",
            "through",
            "during",
            "before",
            "after",
            "because",
            "while",
            "until",
            "per",
            "via",
        ]
    )
    | NEGATIONS
)

_WORD = re.compile(r"[A-Za-z0-9_]+(?:['’][A-Za-z]+)?|[·×^*/=+-]")
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+")
_ENUM = re.compile(r"^\s*(?:[-*•]|\(?\d+[.)]|\(?[a-z][.)])\s+")


def words(text: str) -> list[str]:
    """Lower-case word tokens (identifiers like W_O and d_head stay whole)."""
    return [w.lower().replace("’", "'") for w in _WORD.findall(text)]


def stem(word: str) -> str:
    """A crude suffix-stripper: 'mixing', 'mixes', 'mixed' -> 'mix'. Enough for overlap counts."""
    for suffix in ("ing", "ings", "ed", "es", "s", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "ls":
        word = word[:-1]  # 'mixx' never, but 'writt' -> 'writ'
    return word


def content_stems(text: str) -> set[str]:
    return {stem(w) for w in words(text) if w not in STOPWORDS and len(w) > 1 or w.isdigit()}


def is_negation(word: str) -> bool:
    return word in NEGATIONS or bool(_NEG_SUFFIX.search(word))


def negations(text: str) -> int:
    """How many negation cues the text holds ("n't" counts, "without" does not)."""
    return sum(1 for w in words(text) if is_negation(w))


def negation_mismatch(point: str, sentence: str) -> bool:
    """The sentence negates where the point does not, or the other way round (parity of cues)."""
    return negations(point) % 2 != negations(sentence) % 2


def function_ratio(text: str) -> float:
    """Share of function words: a keyword list ("W_O, heads, mixing, residual") has almost none."""
    ws = [w for w in words(text) if w.isalpha()]
    if not ws:
        return 0.0
    return sum(1 for w in ws if w in STOPWORDS) / len(ws)


def sentences(answer: str, max_sentences: int = 24) -> list[str]:
    """The answer's sentences (also split at ';' and line breaks), list bullets stripped.

    A very long answer keeps its first `max_sentences` sentences (graded time stays bounded).
    """
    out = []
    for piece in _SENTENCE_END.split(answer.strip()):
        piece = _ENUM.sub("", piece).strip()
        if any(c.isalnum() for c in piece):
            out.append(piece)
    return out[:max_sentences]
