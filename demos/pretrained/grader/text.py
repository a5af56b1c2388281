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


# "No W_O: ...", "no bias, so ...", "no W_O means fixed slices": "no" + one term before a colon,
# a comma or "means" states a condition (= "without W_O"), not a denial.
_CONDITION = re.compile(
    r"\bno\s+(?=[\w^·']+\s*(?:[:,;\u2192]|\s+(?:means|gives|leaves|then)\b))", re.IGNORECASE
)


# Phrases built on a negation word that deny nothing: a comparative bound ("no more than
# d_head" = at most d_head, "can't be larger than", "never fewer than two", "no better than
# chance", "isn't any worse than", "no more expensive than"), an equality ("no different
# from", "not any different than", "not dissimilar to", "none other than W_O"), an addition
# ("not only X but Y", "isn't just"), an identification ("nothing but a sum"), and the set
# phrases "no matter", "whether or not", "no doubt", "not least", "not unlike", "no wonder",
# "not to mention", "not surprisingly", "none the less", "nothing short of", "cannot help
# but", "never fails to". Each is read as what it says, in function words (no
# content stem is added; an adjective compared with "more"/"less" is kept); a real denial
# beside one ("no more than d_head, and heads never mix") still counts. What makes a
# comparative: a listed one, or any word ending in -er, directly before "than".
_COMPARATIVE = (
    r"more|less|fewer|better|worse|greater|larger|bigger|smaller|higher|lower|longer|shorter|"
    r"wider|narrower|later|earlier|faster|slower|cheaper|deeper|[a-z]+er"
)
_NOT = r"\b(?:not|no|never|cannot|[a-z]+n['’]t)"
# between the negation and the comparison: "be", and a degree ("any", "much", "all that")
_DEGREE = (
    r"(?:\s+be)?(?:\s+(?:any|much|far|way|at\s+all|all\s+that|significantly|substantially|"
    r"a\s+lot|really|very))?"
)
_NON_DENIAL = [
    (
        re.compile(rf"{_NOT}{_DEGREE}\s+(?:{_COMPARATIVE})(?:\s+off)?\s+than\b", re.IGNORECASE),
        "about",
    ),
    # "no more expensive than", "not any less important than": as ADJ as (the adjective kept)
    (
        re.compile(rf"{_NOT}{_DEGREE}\s+(?:more|less)\s+([a-z_]+)\s+than\b", re.IGNORECASE),
        r"as \1 as",
    ),
    (
        re.compile(
            rf"{_NOT}{_DEGREE}\s+(?:different|dissimilar|distinct)"
            r"(?:\s+(?:from|than|to)\b|(?=\s*(?:[.,;:!?]|$)))",
            re.IGNORECASE,
        ),
        "the same as",
    ),
    (re.compile(rf"{_NOT}\s+(?:only|just|merely|simply|solely)\b", re.IGNORECASE), "also"),
    # "cannot help but mix", "never fails to mix": it does mix
    (re.compile(rf"{_NOT}\s+(?:help\s+but|fail(?:s|ed)?\s+to)\b", re.IGNORECASE), "also"),
    (
        re.compile(
            r"\b(?:nothing|none)\s+(?:(?:more|less|else|other)\s+than|but|short\s+of)\b",
            re.IGNORECASE,
        ),
        "just",
    ),
    (re.compile(r"\b(?:no\s+matter|whether\s+or\s+not)\b", re.IGNORECASE), "for any"),
    (
        re.compile(
            r"\b(?:no\s+doubt|not\s+least|not\s+unlike|no\s+wonder|not\s+to\s+mention|"
            r"not\s+surprisingly|not\s+coincidentally|none\s+the\s+less)\b",
            re.IGNORECASE,
        ),
        "also",
    ),
]


def _unconditioned(text: str) -> str:
    for pattern, plain in _NON_DENIAL:
        text = pattern.sub(plain, text)
    return _CONDITION.sub("without ", text)


def negations(text: str) -> int:
    """How many negation cues the text holds ("n't" counts; "without" and a "no X:" condition
    do not)."""
    return sum(1 for w in words(_unconditioned(text)) if is_negation(w))


_CLAUSE_BREAK = re.compile(
    r"(?:\s*[,;:()\u2014\u2013]\s*|\s+-\s+|\s+)(?:but|and|while|whereas|so|because|although|since)\s+"
    r"|\s*[,;:()\u2014\u2013]\s*|\s+-\s+",
    re.IGNORECASE,
)


def clauses(text: str) -> list[str]:
    """The text's clauses: split at commas, colons, dashes, brackets and the conjunctions
    that join two claims (but, and, while, so, because ...)."""
    return [c for c in _CLAUSE_BREAK.split(text) if c and any(ch.isalnum() for ch in c)]


def denied(text: str) -> set[str]:
    """The content stems a text denies: in each clause with a negation cue, the words after the
    cue ("W_O does not mix heads" denies {mix, head}; "heads never share a direction" denies
    {share, direction}), or, when the cue ends its clause, the words before it ("every block
    writes nothing" denies {block, write}, round 13)."""
    out: set[str] = set()
    for clause in clauses(_unconditioned(text)):
        ws = words(clause)
        cues = [i for i, w in enumerate(ws) if is_negation(w)]
        if cues:
            after = content_stems(" ".join(ws[cues[0] + 1 :]))
            out |= after or content_stems(" ".join(ws[: cues[0]]))
    return out


def negation_mismatch(point: str, sentence: str) -> bool:
    """The sentence denies what the point asserts, or asserts what the point denies.

    - neither negates: no mismatch;
    - only the sentence negates: a mismatch when it denies what the point says (round 13:
      any denial was one, so "At init every block writes nothing, and the residual stream is
      just the embedding." could cover no plain point of its card, the embedding's included);
    - only the point negates: a mismatch when the sentence uses what the point denies
      ("softmax rows amplify values" against "... never amplify it"); a sentence that says
      it another way ("a convex combination of the values") is left to the head;
    - both negate: they agree only when they deny the same thing ("no two heads ever share
      a direction" and "heads never share a direction" do; "W_O does not mix heads" and
      "No W_O: ... heads never share a direction" do not).
    """
    p_neg, s_neg = negations(point) > 0, negations(sentence) > 0
    if not p_neg:
        return s_neg and bool(denied(sentence) & content_stems(point))
    p_denied = denied(point)
    if not s_neg:
        return bool(p_denied & content_stems(sentence))
    return not (p_denied & denied(sentence))


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
    out: list[str] = []
    glue = False  # the last piece ended in an abbreviation ("et al.", "e.g."): not a sentence end
    for piece in _SENTENCE_END.split(answer.strip()):
        piece = _ENUM.sub("", piece).strip()
        if _LABEL_ONLY.fullmatch(piece):
            continue  # a choice's letter alone, "(c).": no content to grade
        if glue and out:
            out[-1] = f"{out[-1]} {piece}"
        elif any(c.isalnum() for c in piece):
            out.append(piece)
        glue = bool(out) and bool(_ABBREVIATION.search(out[-1]))
    return out[:max_sentences]


# a period that ends an abbreviation, not a sentence: citations ("Xiao et al. 2023"), "e.g.",
# "i.e.", "vs.", "cf.", "Fig. 3", "Eq. 2", "approx."
_ABBREVIATION = re.compile(r"(?i:\b(?:et al|e\.g|i\.e|vs|cf|figs?|eqs?|approx|resp|sec))\.$")
_LABEL_ONLY = re.compile(r"\(?[a-dA-D]\)?[.:]?")
