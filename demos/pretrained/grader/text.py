"""The grader's text rules, torch-free: sentences, content words, negation cues, salad signs.

These are the parts of grading that a rule states better than a model: where an answer's
sentences begin and end, which words carry content, and whether a sentence negates what a
point asserts ("W_O does not mix heads" against "W_O mixes heads"). The learned head
(prep.demos.pretrained.grader.model) weighs them together with MiniLM's similarities.
"""

from __future__ import annotations

import re

# Negation cues. "without" is not one: "without W_O, heads keep their slices" asserts something.
_NEGATION_WORDS = """
    aren't can't cannot cant couldn't didn't doesn't don't hasn't haven't isn't neither
    never no nobody none nor not nothing shouldn't wasn't weren't won't wouldn't
"""
NEGATIONS = frozenset(_NEGATION_WORDS.split())
_NEG_SUFFIX = re.compile(r"n['’]t$")

_FUNCTION_WORDS = """
    a about above after again all also an and any are as at be because been before being
    below between both but by can could did do does done down during each either even every
    for from further had has have having he her here his how i if in into is it it's its
    just many may me might more most much must my of on once one only onto or other our out
    over per same shall she should so some such than that the their them then there these
    they this those through to too two under until up us very via was we were what when
    where which while who whom why will with would you your
"""
STOPWORDS = frozenset(_FUNCTION_WORDS.split()) | NEGATIONS

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
    """One of the two negates (not, no, never, n't) and the other does not."""
    return (negations(point) > 0) != (negations(sentence) > 0)


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
