"""Content tests for the bundled W_O question bank (questions/*.yaml).

These check what the format validator cannot: that the seed card's points are all covered,
that the bank has the agreed size and mix, that follow-ups form real chains, that text renders
in a plain terminal, that numerical claims link a demo (or have their arithmetic checked here),
and that the sources are cited precisely.
"""

from __future__ import annotations

import re
from collections import Counter
from fractions import Fraction

import pytest

from prep.demos.registry import names as demo_names
from prep.engine.decks.deck import SLUG, Card
from prep.engine.decks.deckcache import load_collection
from tests.demo_names import DEMO_NAMES


@pytest.fixture(scope="module")
def collection():
    return load_collection(include_bundled=True, demo_names=demo_names())


@pytest.fixture(scope="module")
def cards(collection) -> list[Card]:
    return collection.cards


def card_text(card: Card) -> str:
    """Everything a user reads on a card, as one string."""
    parts = [card.prompt, card.answer, card.explain, card.analogy]
    parts += card.choices + card.bullets + card.sources
    return "\n".join(p for p in parts if p)


# --- (a) the bundled decks load cleanly ---------------------------------------------------


def test_bundled_decks_load_without_errors(collection):
    assert collection.errors == [], "\n".join(str(e) for e in collection.errors)
    assert {c.deck for c in collection.cards} >= {
        "wo-core",
        "wo-followups",
        "wo-red-flags",
        "wo-practice",
    }


def test_every_linked_demo_is_registered(cards):
    # Independent of the registry: a card may only link a demo named in tests/demo_names.py.
    unknown = {(c.id, d) for c in cards for d in c.demos if d not in DEMO_NAMES}
    assert not unknown, f"cards link demos that do not exist: {sorted(unknown)}"


def test_every_demo_is_linked_by_some_card(cards):
    linked = {d for c in cards for d in c.demos}
    missing = set(DEMO_NAMES) - linked
    assert not missing, f"no card links these demos: {sorted(missing)}"


# --- (b) every point of the seed card is covered -------------------------------------------

# Each point: an id, regexes that must ALL match the text of one single card (case-insensitive),
# and optionally which kinds of card count and which field to search ("bullets", "sources").
SEED_POINTS: list[dict] = [
    {
        "id": "role-cross-head-mixing",
        "patterns": [r"cross-head mixing", r"share|same (residual )?direction"],
    },
    {
        "id": "role-learned-per-head-weighting",
        "patterns": [r"per-head weighting", r"amplif", r"suppress"],
    },
    {
        "id": "lost-without-wo-though-shapes-match",
        "patterns": [
            r"remove W_O|without W_O|no W_O",
            r"shapes? (still )?(line up|match)",
            r"slice",
        ],
    },
    {"id": "spreadsheet-editor-analogy", "patterns": [r"spreadsheet", r"editor", r"column"]},
    {
        "id": "analogy-readers-see-every-column",
        "patterns": [r"readers", r"every column", r"same cell"],
    },
    {
        "id": "only-place-heads-mix",
        "patterns": [r"only (place|point|operation)|only in W_O", r"mix"],
    },
    {
        "id": "concat-is-bookkeeping",
        "patterns": [r"bookkeeping|just places|only places|side by side", r"concat"],
    },
    {"id": "slice-structure-after-concat", "patterns": [r"i·d_head", r"\(i\+1\)·d_head − 1"]},
    {
        "id": "slices-enable-batching",
        "patterns": [
            r"softmax\(Q_i K_iᵀ / √d_head\)",
            r"no communication|independent",
            r"batch",
            r"matmul",
        ],
    },
    {
        "id": "residual-write-fixed-by-index",
        "patterns": [r"residual", r"fixed by (its|the head's) index"],
    },
    {
        "id": "residual-partitioned-into-slices",
        "patterns": [r"partition", r"residual stream", r"slices?"],
    },
    {
        "id": "downstream-can-read-every-slice",
        "patterns": [r"read every slice", r"W_Q, W_K, W_V", r"FFN"],
    },
    {"id": "no-two-heads-same-direction", "patterns": [r"no two heads", r"same direction"]},
    {"id": "with-wo-each-head-chooses", "patterns": [r"each head chooses where it writes"]},
    {"id": "production-keeps-wo", "patterns": [r"production", r"keep", r"(GPT|LLaMA)"]},
    {"id": "block-diagonal-never-share", "patterns": [r"block-diagonal", r"never share"]},
    {"id": "block-diagonal-params", "patterns": [r"block-diagonal", r"d_model²/h"]},
    {
        "id": "off-diagonal-blocks-write-outside",
        "patterns": [r"off-diagonal blocks", r"outside (its|their) (own )?slice"],
    },
    {
        "id": "head-importance-column-block-norm",
        "patterns": [r"importance", r"W_o\.weight\[:, h\*d_head:\(h\+1\)\*d_head\]", r"norm"],
    },
    {"id": "ov-circuit-composition", "patterns": [r"OV circuit", r"composition", r"subspace"]},
    {"id": "voita-prunable-heads-methods", "patterns": [r"relevance", r"confidence", r"L0"]},
    # the red flag must be on a red-flag card
    {
        "id": "red-flag-shape-formality",
        "patterns": [r"formality|just there to bring", r"only (place|point)"],
        "kinds": ["red-flag"],
    },
    # the two 60-second bullets of the seed, as cram bullets
    {
        "id": "bullet-two-roles",
        "patterns": [r"two distinct roles of W_O beyond shape preservation"],
        "field": "bullets",
    },
    {
        "id": "bullet-dense-not-block-diagonal",
        "patterns": [
            r"cross-head mixing needs W_O's off-diagonal blocks",
            r"d_model × d_model matrix, not block diagonal",
        ],
        "field": "bullets",
    },
    # the seed's sources, cited precisely
    {
        "id": "source-voita-2019",
        "patterns": [r"Voita et al\. 2019, 'Analyzing Multi-Head Self-Attention"],
        "field": "sources",
    },
    {
        "id": "source-elhage-2021",
        "patterns": [r"Elhage et al\. 2021, 'A Mathematical Framework for Transformer Circuits'"],
        "field": "sources",
    },
    {
        "id": "source-olsson-2022",
        "patterns": [r"Olsson et al\. 2022, 'In-context Learning and Induction Heads'"],
        "field": "sources",
    },
    # the expert corrections, taught as follow-ups
    {
        "id": "expert-magnitude-survives-via-wv",
        "patterns": [r"scaling W_V\^h by a", r"exactly", r"write direction"],
        "kinds": ["follow-up"],
    },
    {
        # taught with the importance card itself since the deck v3 merge (it said the same)
        "id": "expert-importance-moves-into-wv",
        "patterns": [r"W_V\^h by c", r"W_O\^h by 1/c", r"(same function|function unchanged)"],
        "kinds": ["follow-up", "recall"],
    },
]


def _field_text(card: Card, field: str | None) -> str:
    if field == "bullets":
        return "\n".join(card.bullets)
    if field == "sources":
        return "\n".join(card.sources)
    return card_text(card)


def _covers(card: Card, point: dict) -> bool:
    if "kinds" in point and card.kind not in point["kinds"]:
        return False
    text = _field_text(card, point.get("field"))
    return all(re.search(p, text, re.IGNORECASE) for p in point["patterns"])


@pytest.mark.parametrize("point", SEED_POINTS, ids=[p["id"] for p in SEED_POINTS])
def test_seed_point_is_covered(cards, point):
    covering = [c.id for c in cards if _covers(c, point)]
    assert covering, (
        f"seed point {point['id']!r} is not covered by any card "
        f"(needs all of {point['patterns']} in one card"
        + (f", kind in {point['kinds']}" if "kinds" in point else "")
        + (f", in its {point['field']}" if "field" in point else "")
        + ")"
    )


def test_seed_point_ids_are_unique():
    ids = [p["id"] for p in SEED_POINTS]
    assert len(ids) == len(set(ids))


# --- (c) size, mix and follow-up chains ----------------------------------------------------


def test_at_least_110_cards_of_all_four_kinds(cards):
    # deck v3: 21 duplicates merged away (MERGED below), 33 new cards; the choice bar moved
    # from 14 to 12 because three duplicate choice cards were among the merged
    kinds = Counter(c.kind for c in cards)
    assert len(cards) >= 110, f"only {len(cards)} cards"
    assert kinds["recall"] >= 35, kinds
    assert kinds["choice"] >= 12, kinds
    assert kinds["red-flag"] >= 14, kinds
    assert kinds["follow-up"] >= 40, kinds


# Issue 13's topics: each tag is on cards of several kinds, and each new deck has every kind.
TOPIC_TAGS = {
    "dla": 3,  # direct logit attribution (and the frozen LayerNorm scale)
    "logit-lens": 1,
    "patching": 4,  # activation, path and attribution patching
    "ablation": 3,  # zero vs mean vs resample
    "tensor-parallel": 4,
    "folding": 3,  # b_V into b_O, LayerNorm weights
    "residual": 2,  # no privileged basis
    "ov-circuit": 3,  # full OV circuit, copying eigenvalues
    "composition": 2,  # virtual weights
    "mla": 4,
    "architecture": 2,  # removing W_V and W_O
    "lora": 2,
    "quantisation": 2,  # the third (wo-rf-quant-importance) merged into wo-rf-prune-smallest-norm
    "initialisation": 4,  # GPT-2 scaled init, zero init, muP
    "gating": 4,  # attention sinks, gated attention, norm-based analysis
}


@pytest.mark.parametrize("tag", sorted(TOPIC_TAGS))
def test_each_topic_has_cards(cards, tag):
    tagged = [c for c in cards if tag in c.tags]
    assert len(tagged) >= TOPIC_TAGS[tag], f"{tag}: only {[c.id for c in tagged]}"


@pytest.mark.parametrize("deck", ["wo-attribution", "wo-systems"])
def test_new_decks_have_every_kind_and_chains(collection, deck):
    in_deck = collection.in_deck(deck)
    assert {c.kind for c in in_deck} == {"recall", "choice", "red-flag", "follow-up"}, deck
    by_id = {c.id: c for c in collection.cards}
    assert max(_depth(c, by_id) for c in in_deck) >= 3, f"{deck}: no three-level chain"


# Cards merged away (issue 13, then deck v3: one card per idea), and the card that kept each
# one's point. The kept card lists the dropped id under `aliases:`, so the dropped id's
# progress moves onto it and imports naming it land there (engine/aliases.py).
MERGED = {
    # issue 13
    "wo-only-mixing-point": "wo-choice-where-heads-mix",
    "wo-identity-permutation": "wo-choice-permutation",
    "wo-fu-readers-combine": "wo-residual-without-wo",
    "wo-fu-what-removal-takes": "wo-fu-magnitude-survives",
    # deck v3
    "wo-rf-no-wo-no-weighting": "wo-fu-magnitude-survives",
    "wo-rf-wo-gates-heads": "wo-fu-mixing-is-additive",
    "wo-fu-fold-next-layer": "wo-rf-fold-next-layer",
    "wo-rf-zero-block-faster": "wo-pruning-zero-block",
    "wo-fu-no-op-attention": "wo-attention-sinks",
    "wo-kobayashi-norms": "wo-rf-attention-weight",
    "wo-fu-importance-not-invariant": "wo-head-importance",
    "wo-rf-quant-importance": "wo-rf-prune-smallest-norm",
    "wo-choice-mqa-share": "wo-fu-gqa-share",
    "wo-fu-gqa-why-wo-stays": "wo-rf-gqa-shrinks-wo",
    "wo-fu-block-diagonal-absorbed": "wo-fu-block-diagonal",
    "wo-editor-analogy": "wo-residual-without-wo",
    "wo-rf-stranded-slices": "wo-residual-without-wo",
    "wo-choice-no-wo-jacobian": "wo-choice-where-heads-mix",
    "wo-choice-ov-rank": "wo-fu-ov-rank-why",
    "wo-rf-ov-any-map": "wo-fu-ov-rank-why",
    "wo-fu-zero-vs-mean-ablation": "wo-ablation-kinds",
    "wo-rf-simplify": "wo-simplifying-blocks",
    "wo-rf-dla-causal": "wo-fu-dla-direct-only",
    "wo-slice-structure": "wo-per-head-sum",
    "wo-choice-layout": "wo-per-head-sum",
}


@pytest.mark.parametrize("removed", sorted(MERGED))
def test_merged_cards_are_gone_and_kept_as_aliases(collection, removed):
    assert collection.get(removed) is None, f"{removed} was merged away"
    kept = collection.get(MERGED[removed])
    assert kept is not None
    assert removed in kept.aliases, f"{kept.id} must list {removed} under aliases"


def test_every_alias_is_in_the_merge_table(collection):
    aliases = collection.aliases()
    assert aliases == MERGED


def _depth(card: Card, by_id: dict[str, Card]) -> int:
    """Number of follow-up links from the root card down to this one."""
    depth, seen = 0, set()
    while card.parent is not None and card.parent in by_id and card.id not in seen:
        seen.add(card.id)
        depth += 1
        card = by_id[card.parent]
    return depth


def test_follow_ups_form_chains(cards):
    by_id = {c.id: c for c in cards}
    for c in cards:
        if c.kind == "follow-up":
            assert c.parent in by_id, f"{c.id}: parent {c.parent!r} missing"
            # a chain starts at a main card, not at another chain's dead end
            root = c
            while root.parent is not None:
                root = by_id[root.parent]
            assert root.kind != "follow-up", f"{c.id}: chain root {root.id} is a follow-up"
    deep = [c.id for c in cards if _depth(c, by_id) >= 2]
    assert len(deep) >= 4, f"need at least 4 follow-ups two or more levels deep, have {deep}"
    assert max(_depth(c, by_id) for c in cards) >= 3, "no follow-up chain is three levels deep"


def test_no_parent_cycles(cards):
    by_id = {c.id: c for c in cards}
    for c in cards:
        seen = {c.id}
        cur = c
        while cur.parent is not None:
            assert cur.parent not in seen, f"parent cycle through {c.id}"
            seen.add(cur.parent)
            cur = by_id[cur.parent]


# --- (d) ids ------------------------------------------------------------------------------


def test_ids_are_unique_stable_slugs(cards):
    ids = [c.id for c in cards]
    assert len(ids) == len(set(ids)), [i for i, n in Counter(ids).items() if n > 1]
    for i in ids:
        assert SLUG.match(i), f"{i!r} is not a slug"
        assert i.startswith("wo-"), f"{i!r}: bundled W_O card ids start with 'wo-'"
        assert len(i) <= 40, f"{i!r}: keep ids short"


# --- (e) explain / analogy / bullets --------------------------------------------------------


def test_every_card_explains_why(cards):
    missing = [c.id for c in cards if not c.explain]
    assert not missing, f"cards without explain: {missing}"


def test_main_cards_have_analogy_and_bullets(cards):
    main = [c for c in cards if c.kind == "recall"]
    no_analogy = [c.id for c in main if not c.analogy]
    no_bullets = [c.id for c in main if not c.bullets]
    assert not no_analogy, f"main cards without analogy: {no_analogy}"
    assert not no_bullets, f"main cards without cram bullets: {no_bullets}"


AUTHOR_YEAR = re.compile(
    r"\b([A-Z][A-Za-z-]+|nostalgebraist)(?: et al\.| & [A-Z][a-z]+|, [A-Z][a-z]+ & [A-Z][a-z]+)?"
    r",? \(?((?:19|20)\d\d)\b"
)


def _author_years(text: str) -> set[tuple[str, str]]:
    return {(m.group(1), m.group(2)) for m in AUTHOR_YEAR.finditer(text)}


def test_papers_named_in_the_text_are_cited(cards):
    """A card that says "Michel et al. 2019" lists that paper in its sources."""
    for c in cards:
        text = "\n".join([c.prompt, c.answer, c.explain, c.analogy, *c.choices, *c.bullets])
        cited = set().union(*(_author_years(s) for s in c.sources)) if c.sources else set()
        missing = _author_years(text) - cited - {("GPT-", "2")}
        assert not missing, f"{c.id}: names {sorted(missing)} without citing it in sources"


def test_no_internal_jargon(cards):
    for c in cards:
        assert not re.search(r"\bseed\b|\bseed's\b", card_text(c), re.IGNORECASE), (
            f"{c.id}: 'the seed' is this project's word, not the reader's"
        )


def test_cited_sources_are_precise(cards):
    known = (
        "Vaswani et al. 2017, 'Attention Is All You Need'",
        "Voita et al. 2019, 'Analyzing Multi-Head Self-Attention: Specialized Heads Do the Heavy Lifting, the Rest Can Be Pruned'",
        "Michel, Levy & Neubig 2019, 'Are Sixteen Heads Really Better than One?'",
        "Elhage et al. 2021, 'A Mathematical Framework for Transformer Circuits'",
        "Olsson et al. 2022, 'In-context Learning and Induction Heads'",
        "Shazeer 2019, 'Fast Transformer Decoding: One Write-Head is All You Need'",
        "Ainslie et al. 2023, 'GQA: Training Generalized Multi-Query Transformer Models from Multi-Head Checkpoints'",
        "Clark et al. 2019, 'What Does BERT Look At? An Analysis of BERT's Attention'",
        "Shazeer et al. 2020, 'Talking-Heads Attention'",
        "nostalgebraist 2020, 'interpreting GPT: the logit lens'",
        "Meng et al. 2022, 'Locating and Editing Factual Associations in GPT'",
        "Wang et al. 2022, 'Interpretability in the Wild: a Circuit for Indirect Object Identification in GPT-2 small'",
        "Nanda 2023, 'Attribution Patching: Activation Patching At Industrial Scale'",
        "Heimersheim & Nanda 2024, 'How to use and interpret activation patching'",
        "Shoeybi et al. 2019, 'Megatron-LM: Training Multi-Billion Parameter Language Models Using Model Parallelism'",
        "DeepSeek-AI 2024, 'DeepSeek-V2: A Strong, Economical, and Efficient Mixture-of-Experts Language Model'",
        "He & Hofmann 2023, 'Simplifying Transformer Blocks'",
        "Hu et al. 2021, 'LoRA: Low-Rank Adaptation of Large Language Models'",
        "Xiao et al. 2022, 'SmoothQuant: Accurate and Efficient Post-Training Quantization for Large Language Models'",
        "Radford et al. 2019, 'Language Models are Unsupervised Multitask Learners'",
        "Yang et al. 2022, 'Tensor Programs V: Tuning Large Neural Networks via Zero-Shot Hyperparameter Transfer'",
        "Xiao et al. 2023, 'Efficient Streaming Language Models with Attention Sinks'",
        "Qiu et al. 2025, 'Gated Attention for Large Language Models: Non-linearity, Sparsity, and Attention-Sink-Free'",
        "Kobayashi et al. 2020, 'Attention is Not Only a Weight: Analyzing Transformers with Vector Norms'",
        # deck v3
        "Kramár et al. 2024, 'AtP*: An efficient and scalable method for localizing LLM behaviour to components'",
        "Bhojanapalli et al. 2020, 'Low-Rank Bottleneck in Multi-head Attention Models'",
        "Korthikanti et al. 2022, 'Reducing Activation Recomputation in Large Transformer Models'",
        "Dao et al. 2022, 'FlashAttention: Fast and Memory-Efficient Exact Attention with IO-Awareness'",
        "Elhage et al. 2022, 'Toy Models of Superposition'",
        "Kissane et al. 2024, 'Interpreting Attention Layer Outputs with Sparse Autoencoders'",
        "Millidge & Black 2022, 'The Singular Value Decompositions of Transformer Weight Matrices are Highly Interpretable'",
        "McDougall et al. 2023, 'Copy Suppression: Comprehensively Understanding an Attention Head'",
        "Belrose et al. 2023, 'Eliciting Latent Predictions from Transformers with the Tuned Lens'",
        "Miller 2023, 'Attention Is Off By One'",
        "Gemma Team 2024, 'Gemma 2: Improving Open Language Models at a Practical Size'",
        "Gemma Team 2025, 'Gemma 3 Technical Report'",
        "Team OLMo et al. 2024, '2 OLMo 2 Furious'",
        "Dehghani et al. 2023, 'Scaling Vision Transformers to 22 Billion Parameters'",
        "Chowdhery et al. 2022, 'PaLM: Scaling Language Modeling with Pathways'",
        "Dettmers et al. 2023, 'QLoRA: Efficient Finetuning of Quantized LLMs'",
    )
    for c in cards:
        for s in c.sources:
            assert s.startswith(known), f"{c.id}: unrecognised citation {s!r}"


# --- (f) terminal-friendly text --------------------------------------------------------------

LATEX = re.compile(r"\\|\$|[_^]\{")


def test_no_latex_in_any_text(cards):
    bad = [(c.id, m.group()) for c in cards for m in [LATEX.search(card_text(c))] if m]
    assert not bad, f"LaTeX-style markup renders raw in a terminal: {bad}"


def test_no_stray_markdown_asterisks(cards):
    # `h*d_head` outside backticks would turn into italics in the Markdown renderer.
    for c in cards:
        prose = re.sub(r"`[^`]*`", "", card_text(c)).replace("AtP*", "")  # a paper's name
        assert "*" not in prose, f"{c.id}: put code with '*' in backticks, or use '·'"


def test_text_fits_a_small_terminal(cards):
    for c in cards:
        assert len(c.prompt) <= 240, f"{c.id}: prompt too long ({len(c.prompt)} chars)"
        code = c.answer.startswith("```")  # a live-coding answer: one code block
        limit = 900 if code else 600
        assert len(c.answer) <= limit, f"{c.id}: answer too long ({len(c.answer)} chars)"
        assert len(c.explain) <= 650, f"{c.id}: explain too long ({len(c.explain)} chars)"
        for b in c.bullets:
            assert len(b) <= 160, f"{c.id}: cram bullet too long: {b!r}"


# --- (g) numerical claims link a demo -------------------------------------------------------

# Digits that are not claims: years, model/paper names, head labels in quotes.
NOT_A_CLAIM = re.compile(
    r"\b(19|20)\d\d\b|GPT-2|\bL0\b|Head 5's|head_0|head 0|head 1\b"
    r"|Gemma \d|OLMo \d|Qwen\d|GPT-3"  # model names
)
CLAIM = re.compile(r"\d|≈|%|²|\bexactly\b|\brank\b", re.IGNORECASE)


def _claim_text(card: Card) -> str:
    text = card.answer + "\n" + "\n".join(card.choices)
    return NOT_A_CLAIM.sub("", text)


def test_numerical_claims_link_a_demo(cards):
    missing = [c.id for c in cards if CLAIM.search(_claim_text(c)) and not c.demos]
    assert not missing, f"cards make numerical claims but link no demo: {missing}"


def _attn_share_of_wo(n_heads: int, n_kv_heads: int) -> Fraction:
    # d_model = n_heads · d_head; W_Q and W_O are d², W_K and W_V are d² · n_kv/n_heads each.
    return Fraction(1) / (2 + 2 * Fraction(n_kv_heads, n_heads))


def _fmt(n: int) -> str:
    return f"{n:,}"


# card id -> strings whose numbers are recomputed here
STATED_ARITHMETIC = {
    "wo-param-share": [
        ("1/4", _attn_share_of_wo(32, 32) == Fraction(1, 4)),
        ("1/12", Fraction(1, 4 + 8) == Fraction(1, 12)),
        ("8.3%", round(100 / 12, 1) == 8.3),
    ],
    "wo-fu-gqa-share": [
        ("16/33", _attn_share_of_wo(32, 1) == Fraction(16, 33)),
        ("48.5%", round(float(_attn_share_of_wo(32, 1)) * 100, 1) == 48.5),
        ("40%", _attn_share_of_wo(32, 8) == Fraction(2, 5)),
        ("d_model²/4", Fraction(8, 32) == Fraction(1, 4)),
    ],
    "wo-rf-gqa-shrinks-wo": [("4×", 32 // 8 == 4)],
    "wo-choice-block-diag-count": [
        (_fmt(4096 * 4096 // 32), 32 * (4096 // 32) ** 2 == 524_288),
        (_fmt(4096 * 4096), True),
        (_fmt((4096 // 32) ** 2), True),
        (_fmt(4096 * 32), True),
    ],
    "wo-choice-fold-cost": [
        (_fmt(12 * 768 * 768), 12 * 768 * 768 == 7_077_888),
        (_fmt(2 * 768 * 768), 2 * 768 * 768 == 1_179_648),
        (_fmt(768 * 768), True),
        ("6×", 12 // 2 == 6),
    ],
    "wo-fold-into-values": [
        ("537M", round(32 * 4096**2 / 1e6) == 537),
        ("34M", round(2 * 4096**2 / 1e6) == 34),
        ("16×", 32 * 4096**2 // (2 * 4096**2) == 16),
    ],
    "wo-choice-init": [
        ("0.02/√48 ≈ 0.0029", round(0.02 / 48**0.5, 4) == 0.0029 and 2 * 24 == 48),
        ("0.02/48 ≈ 0.0004", round(0.02 / 48, 4) == 0.0004),
        ("0.02/√24 ≈ 0.0041", round(0.02 / 24**0.5, 4) == 0.0041),
    ],
    "wo-fu-ov-rank-why": [("at most 64", 512 // 8 == 64)],
}


@pytest.mark.parametrize("card_id", sorted(STATED_ARITHMETIC))
def test_stated_arithmetic(collection, card_id):
    card = collection.get(card_id)
    assert card is not None, f"no card {card_id!r}"
    text = card_text(card)
    for shown, holds in STATED_ARITHMETIC[card_id]:
        assert shown in text, f"{card_id}: expected the text to state {shown!r}"
        assert holds, f"{card_id}: the arithmetic behind {shown!r} is wrong"


# --- (h) choice cards ------------------------------------------------------------------------


def test_choice_cards_are_well_formed(cards):
    picks = [c for c in cards if c.kind in ("choice", "red-flag")]
    letters = Counter(c.correct_letter for c in picks)
    assert len(letters) >= 3, f"correct letters are too uniform: {letters}"
    assert max(letters.values()) <= len(picks) // 2, f"one letter dominates: {letters}"
    for c in picks:
        assert 3 <= len(c.choices) <= 4, f"{c.id}: give 3-4 plausible options"
        assert len(set(c.choices)) == len(c.choices), f"{c.id}: duplicate options"
        # the answer names the right option, e.g. "(b)"
        assert f"({c.correct_letter})" in c.answer, (
            f"{c.id}: answer should name ({c.correct_letter})"
        )


def test_red_flags_quote_a_candidate(cards):
    for c in cards:
        if c.kind == "red-flag":
            assert re.search(r'"[^"]{20,}"', c.prompt), f"{c.id}: quote the plausible wrong answer"
            assert re.search(r"gets? wrong", c.prompt), f"{c.id}: ask what the answer gets wrong"


def test_longest_option_is_not_a_giveaway(cards):
    # If the right option is usually the longest, learners pick by length, not by knowledge.
    picks = [c for c in cards if c.kind in ("choice", "red-flag")]
    longest = [
        c.id
        for c in picks
        if len(c.choices[c.correct])
        > max(len(o) for i, o in enumerate(c.choices) if i != c.correct)
    ]
    assert len(longest) <= len(picks) // 2, f"right option is strictly longest in {longest}"


# Hugging Face's q/k/v/o_proj are nn.Linear: .weight is (out, in). A value channel is a row of
# v_proj.weight and an input channel of o_proj is a column of o_proj.weight; the answers say so
# ("row j of v_proj.weight"), so a bullet or choice in the x·W convention ("o_proj rows",
# "v_proj column j") contradicts its own card.
_PROJ_LAYOUT_SLIPS = re.compile(
    r"o_proj(?:\.weight)?(?:'s)?\s+(?:input\s+)?rows?\b"
    r"|[qkv]_proj(?:\.weight)?(?:'s)?\s+(?:output\s+)?columns?\b"
)


def test_proj_rows_and_columns_follow_the_weight_layout(cards):
    slips = [
        f"{card.id}: {m.group(0)!r}"
        for card in cards
        for m in _PROJ_LAYOUT_SLIPS.finditer(" ".join(card_text(card).split()))
    ]
    assert not slips, slips


# --- (i) deck v3: red flags are said, not eliminated ------------------------------------------

# An option that says the quoted answer is right ("Nothing: ...") can never be the answer to
# "what does it get wrong?": a free elimination.
_NOTHING_WRONG = re.compile(
    r"^(nothing\s*[:,.]|nothing is wrong|none\b|it is (all )?(right|correct)\b)", re.IGNORECASE
)


def test_no_red_flag_option_says_nothing_is_wrong(cards):
    free = [
        (c.id, o)
        for c in cards
        if c.kind == "red-flag"
        for o in c.choices
        if _NOTHING_WRONG.match(o)
    ]
    assert not free, f"options that can never be correct: {free}"


def test_red_flag_letters_are_balanced(cards):
    flags = [c for c in cards if c.kind == "red-flag"]
    letters = Counter(c.correct_letter for c in flags)
    assert len(letters) >= 3, letters
    assert max(letters.values()) <= len(flags) // 2, (
        f"one letter dominates the red flags: {letters}"
    )


# --- (j) deck v3: levels and the first day ----------------------------------------------------


def test_every_card_has_a_level(cards):
    missing = [c.id for c in cards if c.level is None]
    assert not missing, f"cards without a level: {missing}"


def test_every_bundled_deck_declares_its_order(collection):
    assert all(info.order is not None for info in collection.decks.values())


# What a first day must cover, as basics: the two roles, the per-head sum, what is lost
# without W_O, why several heads, writing attention by hand, the OV circuit, and one red flag.
FIRST_DAY = {
    "wo-two-roles",
    "wo-per-head-sum",
    "wo-residual-without-wo",
    "wo-why-many-heads",
    "wo-code-mha",
    "wo-ov-circuit",
    "wo-rf-shape-formality",
}


def test_the_first_day_is_basics_and_starts_in_the_core_deck(collection):
    basics = {c.id for c in collection.cards if c.level == "basics"}
    assert basics >= FIRST_DAY, sorted(FIRST_DAY - basics)
    core = collection.in_deck("wo-core")
    assert all(c.level in ("basics", "core") for c in core), [
        (c.id, c.level) for c in core if c.level not in ("basics", "core")
    ]
    assert sum(c.level == "basics" for c in core) >= 5
    # a basics follow-up is only useful if its parent is basics too (it waits for the parent)
    by_id = {c.id: c for c in collection.cards}
    late = [
        c.id
        for c in collection.cards
        if c.level == "basics" and c.parent and by_id[c.parent].level != "basics"
    ]
    assert not late, late


# --- (k) deck v3: the interviewer's chains and the live-coding card ---------------------------

CHAINS = {  # item 4: what the interviewer asks next
    "wo-fu-is-wo-necessary": "wo-two-roles",
    "wo-fu-remove-sinks": "wo-attention-sinks",
    "wo-fu-tuned-lens": "wo-logit-lens",
    "wo-fu-lora-which": "wo-lora-o-proj",
}


@pytest.mark.parametrize("child", sorted(CHAINS))
def test_the_interviewers_next_question_follows_its_card(collection, child):
    card = collection.get(child)
    assert card is not None and card.kind == "follow-up" and card.parent == CHAINS[child]


def _code_block(card: Card) -> str:
    match = re.fullmatch(r"```python\n(.*)\n```", card.answer, re.DOTALL)
    assert match, f"{card.id}: the answer must be one python code block"
    return match.group(1)


def test_the_live_coding_card_is_the_code_the_demo_runs(collection):
    from prep.demos.synthetic import mha_code

    card = collection.get("wo-code-mha")
    assert card is not None and "mha-code" in card.demos
    assert _code_block(card) == mha_code.CARD_CODE


def test_the_live_coding_card_runs_and_matches_pytorch(collection):
    import torch

    from prep.demos.synthetic import mha_code

    mha = mha_code.load(_code_block(collection.get("wo-code-mha")))(32, 4)
    x = torch.randn(2, 5, 32, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        q, k, v = mha.qkv(x).split(32, dim=-1)
        q, k, v = (t.reshape(2, 5, 4, 8).transpose(1, 2) for t in (q, k, v))
        z = torch.nn.functional.scaled_dot_product_attention(q, k, v)  # (2, 4, 5, 8)
        expected = mha.o_proj(z.transpose(1, 2).reshape(2, 5, 32))
        torch.testing.assert_close(mha(x), expected)


def test_new_numbers_match_the_demo_that_measured_them(collection):
    """The copy-suppression card quotes the ov-copying demo's lowest head on the decoder."""
    from prep.demos import harness
    from prep.demos._torch import torch
    from prep.demos.decoder import ov_copying

    cpu = torch.device("cpu")
    setup = ov_copying.build(ov_copying.SCALES["small"], cpu, harness.make_generator(cpu, 0))
    lowest = min(setup.heads.values(), key=lambda h: h.mass)
    text = collection.get("wo-fu-copy-suppression-here").answer
    assert f"{lowest.mass:.2f}" in text
    assert f"{round(lowest.positive * 16)} of its 16 eigenvalues positive" in text
    assert lowest.mass > 0  # no head is net negative: the card says copy suppression is absent
