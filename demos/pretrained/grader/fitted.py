"""What the grader was fitted on: the bundled decks' training cards, and a fingerprint of them
stored beside the head, so that a deck edited after the last fit is seen, not graded against
silently. Torch-free.

The idf table (grader_idf.json) and the head (weights/grader.json) are snapshots of the decks:
`python -m prep.demos.pretrained.grader.train` reads every training card's prompt, answer,
explain, bullets and points (the held-out cards left out), and writes both, with the sha256 of
those texts as "decks_sha256" in grader.json. `stale()` compares it with the decks as they are;
tests/test_grader_fitted.py fails when they differ. A user's own deck is not part of it: the
grader grades any rubric, as it grades the held-out cards it never saw.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from importlib import resources
from typing import Any

from prep.demos.pretrained.grader import text as tx

RETRAIN = "python -m prep.demos.pretrained.grader.train"
# The bundled cards whose topics the held-out rubrics ask about: never trained on.
HELDOUT_CARDS = frozenset(
    {
        "wo-residual-without-wo",
        "wo-per-head-sum",
        "wo-param-share",
        "wo-pruning-zero-block",
        "wo-attention-sinks",
        "wo-gpt2-init",
        # round 2's fresh held-out questions and the cards that share their facts
        "wo-flops",
        "wo-fu-flops-decode",
        "wo-no-o-bias",
        "wo-fu-no-bias-ablation",
        "wo-lora-o-proj",
        "wo-fu-lora-which",
        "wo-choice-lora-rank",
        # round 3's fresh held-out questions and the cards that share their facts
        "wo-logit-lens",
        "wo-fu-tuned-lens",
        "wo-fu-tuned-lens-heads",
        "wo-rf-lens-absent",
        "wo-gated-attention",
        "wo-fu-gate-vs-wo",
        "wo-mla",
        "wo-fu-mla-rope",
        "wo-fu-mla-cost",
        "wo-choice-mla-absorb",
        "wo-backward",
        "wo-fu-backward-memory",
    }
)


def bundled_cards() -> list[dict[str, Any]]:
    """Every card of the bundled decks (prep.questions), in file order, as parsed YAML."""
    import yaml

    folder = resources.files("prep.questions")
    out: list[dict[str, Any]] = []
    for name in sorted(p.name for p in folder.iterdir() if p.name.endswith(".yaml")):
        text = folder.joinpath(name).read_text("utf-8")
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}
        out += [c for c in data.get("cards") or [] if isinstance(c, dict)]
    return out


def training_cards(cards: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    return (
        [c for c in bundled_cards() if c.get("id") not in HELDOUT_CARDS]
        if cards is None
        else [c for c in cards if c.get("id") not in HELDOUT_CARDS]
    )


def corpus_sentences(cards: list[dict[str, Any]] | None = None) -> list[str]:
    """The training cards' sentences (prompt, answer, explain, bullets, points): everything of
    the decks that the idf table and the head's generated pairs are made from."""
    out: list[str] = []
    for card in training_cards(cards):
        for key in ("prompt", "answer", "explain"):
            out += tx.sentences(str(card.get(key) or ""), max_sentences=1000)
        out += [str(t) for t in (card.get("bullets") or []) + (card.get("points") or [])]
    return out


def digest(cards: list[dict[str, Any]] | None = None) -> str:
    """sha256 of the training cards' ids and texts as the fit reads them."""
    h = hashlib.sha256()
    for card in training_cards(cards):
        h.update(json.dumps(str(card.get("id")), ensure_ascii=False).encode("utf-8"))
        h.update(json.dumps(corpus_sentences([card]), ensure_ascii=False).encode("utf-8"))
    return h.hexdigest()


def fitted_digest() -> str | None:
    """The decks' sha256 stored with the shipped head (None: a head from before round 13)."""
    raw = resources.files("prep.demos.pretrained").joinpath("weights", "grader.json")
    value = json.loads(raw.read_text("utf-8")).get("decks_sha256")
    return str(value) if value else None


@cache
def stale() -> str | None:
    """One line when the bundled decks differ from those the grader was fitted on, else None."""
    if fitted_digest() == digest():
        return None
    return (
        "The grader was fitted to the decks before a card was edited, so its marks are "
        f"unmeasured: retrain it ({RETRAIN})."
    )
