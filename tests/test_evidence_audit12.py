"""Audit12's evidence fixes, each held by a test that fails on the code before it:

- a difference of two numbers prints a negative right side in parentheses (report.fmt_difference);
- real-importance's checks name one hidden-state target, the token mean, in every check;
- real-block-structure's covariance null runs high, which is why its cards claim no more than
  "the heads do not exceed it" (the withdrawn 'pushed apart' check: demos/BARS.md);
- learned-suppression's control and AdamW rows run at the pre-registered seed count.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import re
from pathlib import Path

from prep.demos import harness
from prep.demos._torch import torch
from prep.demos.registry import DEMOS
from prep.demos.report import fmt_difference

GOLDEN = Path(__file__).parent / "golden" / "real-importance-seed0.json"
BARS = Path(__file__).parent.parent / "demos" / "BARS.md"
CPU = torch.device("cpu")


def module(name: str):
    return importlib.import_module(DEMOS[name].module)


def test_a_difference_prints_a_negative_right_side_in_parentheses() -> None:
    assert fmt_difference(0.88, -0.03) == "0.88 - (-0.03)"
    assert fmt_difference(0.825, -0.818, 3) == "0.825 - (-0.818)"
    assert fmt_difference(0.98, 0.62) == "0.98 - 0.62"
    assert fmt_difference(-0.1, 0.2) == "-0.10 - 0.20"
    # rounding decides the sign shown: -0.001 at 2 digits is "-0.00", still parenthesised
    assert fmt_difference(0.5, -0.001) == "0.50 - (-0.00)"


def test_no_report_of_real_importance_prints_minus_minus() -> None:
    text = GOLDEN.read_text()
    assert not re.search(r"- -\d", text), re.findall(r".{30}- -\d.{5}", text)


def test_real_importance_checks_name_one_hidden_state_target() -> None:
    """Check 3's left side (rho against the hidden-state change) is check 1's rho, layer by
    layer: one target under one name (it was the mean of per-sentence means, 0.81 against the
    token mean's 0.797 in layer 1)."""
    report = json.loads(GOLDEN.read_text())
    built_in = [c for c in report["checks"] if "Spearman rho(activation-aware score" in c["name"]]
    gaps = [
        c for c in report["checks"] if "drop of the paraphrase-retrieval margin) =" in c["name"]
    ]
    assert len(built_in) == len(gaps) == 6
    for first, third in zip(built_in, gaps, strict=True):
        left = re.search(r"margin\) = (-?\d\.\d\d) - ", third["name"])
        assert left, third["name"]
        assert left.group(1) == f"{first['measured']:.2f}", (first["name"], third["name"])


def test_pair_sums_give_the_token_mean() -> None:
    """Every pair's token sums over all real tokens are the token mean `zero` (so the bootstrap
    over pairs resamples that target), with padding left out."""
    ri = module("real-importance")
    from prep.demos.pretrained import pretrained as pt

    gen = torch.Generator().manual_seed(0)
    rel = torch.rand(3, 6, 5, generator=gen, dtype=torch.float64)  # (h, N = 3 pairs, T)
    mask = torch.ones(6, 5)
    mask[1, 3:] = 0  # padding in the second sentence, another in the fifth
    mask[4, 1:] = 0
    sums, tokens = ri.per_pair(rel, mask), ri.pair_tokens(mask)
    assert sums.shape == (3, 3) and tokens.tolist() == [8.0, 10.0, 6.0]
    torch.testing.assert_close(sums.sum(-1) / tokens.sum(), pt.masked_mean(rel, mask))
    # the old target, the mean of per-sentence means, is a different number here
    sentence = (rel * mask).sum(-1) / mask.sum(-1)
    assert not torch.allclose(sentence.mean(-1), pt.masked_mean(rel, mask))


def test_the_covariance_null_runs_high(minilm) -> None:
    """A W_O drawn from N(0, C), C layer 0's row covariance, overlaps far less than blocks
    redrawn from its own row covariance: that null is biased towards overlap, so the heads
    sitting below it is no evidence that they are pushed apart (the withdrawn check), and
    passing it does not show the overlap is only anisotropy. The cards must say no more."""
    rbs = module("real-block-structure")
    gen = torch.Generator().manual_seed(5)
    w = minilm.weights(0).W_O.detach().float()
    h, dh, d = w.shape
    lam = rbs.row_variances(w)
    drawn = torch.randn(h, dh, d, generator=gen) * lam.sqrt().float()  # the null world
    observed = float(rbs.mean_max_cosine(drawn.double()))
    null = rbs.covariance_null(drawn, 50, gen)
    assert float(null.min()) > observed  # below every redraw
    assert float(null.mean()) - observed > 10 * float(null.std())


def test_block_structure_cards_claim_only_what_the_null_can_show() -> None:
    from prep.demos.registry import names
    from prep.engine.decks.deckcache import load_collection

    coll = load_collection(include_bundled=True, demo_names=names())
    text = {c.id: " ".join([c.answer, c.explain, *c.bullets]) for c in coll.cards}
    for card in ("wo-cross-head-mixing", "wo-rf-block-diagonal-cheaper"):
        assert "not heads pairing up" not in text[card], card
        assert "or more" not in text[card] and "as much as W_O's own anisotropy" not in text[card]
    # (audit13: the cards now cite the exact-Gram null, which does not run high, not this one)


def test_learned_suppression_t_rows_run_at_the_preregistered_seed_count() -> None:
    """The control and AdamW rows run at the n BARS.md argued from the pilot (20), the
    weight-decay row and the contrast at 5, and those 5 are the first 5 of the same draw."""
    ls = module("learned-suppression")
    cfg = ls.SCALES["small"]
    assert "So n = 20 for both rows (at\n  every scale)" in BARS.read_text()
    assert all(c.n_seeds_t == 20 and c.n_seeds == 5 for c in ls.SCALES.values())
    setup = ls.build(dataclasses.replace(cfg, steps=0), CPU, harness.make_generator(CPU, 0))
    assert len(setup.control) == len(setup.adam) == 20
    assert len(setup.runs) == len(setup.all_useful) == 5
    for main, control in zip(setup.runs, setup.control[:5], strict=False):
        assert torch.equal(main.ov_init, control.ov_init)  # the same seed's task
    checks = ls.check(setup)
    t_rows = [c for c in checks if "t upper bound over" in c.name]
    assert len(t_rows) == 2 and all("over 20 seeds" in c.name for c in t_rows)


def test_the_suppression_card_quotes_the_validation_bars_md_records() -> None:
    """The control/AdamW pass counts over the ten fresh draws are a pre-registered validation
    (demos/BARS.md), not a demo output: the card's counts are the ones BARS.md records."""
    from prep.demos.registry import names
    from prep.engine.decks.deckcache import load_collection

    coll = load_collection(include_bundled=True, demo_names=names())
    card = next(c for c in coll.cards if c.id == "wo-learned-suppression")
    said = re.search(r"(\d+) and (\d+) of 10 fresh draws", card.explain)
    recorded = re.search(r"validation: control (\d+) of 10, AdamW (\d+) of 10", BARS.read_text())
    assert said and recorded and said.groups() == recorded.groups()
