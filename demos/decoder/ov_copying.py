"""ov-copying: the shipped decoder's induction head has a copying OV circuit.

A head's full OV circuit W_E W_V^h W_O^h W_U (vocab x vocab, row = the attended token, column = the
logit it raises) says what the head does to the logits once it has attended to a token, ignoring
positional embeddings and the other layer's writes. A copying head raises the logit of the token
it attends to: the matrix looks like a positive multiple of the identity on its image, so its
eigenvalues are mostly positive (Elhage et al. 2021 use sum(lambda) / sum(|lambda|) as the copying
measure). The circuit has rank <= d_head; its d_head generically nonzero eigenvalues are those of
W_O^h W_U W_E W_V^h (d_head x d_head), computed here.

Measured per head of the shipped decoder (demos/decoder/weights/decoder.*):
- the fraction of the d_head eigenvalues with positive real part;
- sum(lambda) / sum(|lambda|) (1 = every eigenvalue positive real, ~0 for a random matrix);
- the copying score: the fraction of tokens whose own logit is the largest in their row.
The induction head is the layer-1 head that attends most to the token after the earlier occurrence
(as in the induction demo). Random baseline: Gaussian weights with each tensor's trained std.

Pass bars (argued before the first run on the shipped weights):
- "mostly positive": at least 0.75 of the eigenvalues (a random d_head x d_head real matrix has
  about half; with d_head = 16, 12 or more positive is a 2-sigma event for a coin flip).
- sum(lambda)/sum(|lambda|) >= 0.5 (half the spectral mass net positive).
- copying score above its own permutation null (argued before the run, demos/BARS.md,
  2026-12-01): "copying" means a row's largest logit falls on the same token, not merely
  somewhere. Relabelling the output tokens (permuting the circuit's columns) keeps every row's
  values, so any unigram or row-norm structure, and destroys only the token-to-itself alignment.
  At every seed the head's score must beat the largest of N_PERM relabellings of its own circuit
  (a permutation test at p < 1/N_PERM; no number chosen by hand). It replaces "ten times chance"
  (COPY_CHANCE_MULTIPLE = 10), chosen after seeds 1 and 2 scored 0.44 and 0.42, and, before
  that, 0.5 ("most tokens"), which seed 0 alone reached.
- "unlike random weights": the mean over random draws of each measure stays below its bar.
- The two eigenvalue rows against the same relabelling (audit13, demos/BARS.md): at every seed
  their permutation p over N_PERM relabelled spectra (W_O W_U P W_E W_V) is at most 0.01, as
  well as the fixed bar. Before, their only comparison was isotropic random weights, and a
  relabelled circuit's spectrum reaches the fixed 3/4 in its tail (0.69-0.75 at most in 1000).

What the runs showed, and how the claim changed (the bars did not): the claim also said "unlike
the other heads", checked as "the induction head has the highest copying score of all heads".
On the shipped decoder all four layer-1 heads are induction heads (see the induction demo) with
copying OV circuits (every eigenvalue positive; copying scores 0.36-0.55), and L1H1 and L1H2
nearly tie on induction attention, so which one is "the" induction head depends on the sampled
batch: with seeds 1, 2, 3 and 5 it was L1H2 (copying 0.53), which L1H1 (0.55) beats. Some layer-0
heads are partly copying too (L0H0, L0H2: 0.88 and 0.94 of eigenvalues positive, copying 0.41 and
0.44). So the check was dropped, every head's values are reported in the check names, and the
claim is only about the strongest induction head against random weights.

Three training seeds (issue 22): eigenvalues stay all positive (1.00, 1.00, 1.00), but the copying
score of the induction head is 0.55, 0.44, 0.42: "most tokens" held at seed 0 only. The claim now
says "beyond its own permutation null" (above); the check names print every seed's score.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from prep.demos import harness
from prep.demos._torch import torch
from prep.demos.decoder import circuit, decoder
from prep.demos.harness import IDENTITY, MEASUREMENT, SANITY, Check, DeviceChoice, Report

NAME = "ov-copying"
DTYPE = torch.float64  # eigenvalues of a product of five matrices: keep rounding out of the way
CONTRAST_LABEL = "random Gaussian weights with the trained tensors' standard deviations"
# 3 measured on the shipped decoder's induction head against random weights; the random
# weights' own values (the contrast) are sanity: what any Gaussian weights give.
CHECK_KINDS = {IDENTITY: 0, SANITY: 3, MEASUREMENT: 3}
POSITIVE_BAR = 0.75
MASS_BAR = 0.5
P_BAR = 0.01  # the eigenvalue rows' relabelling p at every seed (demos/BARS.md, audit13)
SPECTRUM_SEED = 13  # the relabelled spectra's own generator: the other draws stay as they were


@dataclass(frozen=True)
class Config:
    n_sequences: int  # sequences used to find the induction head
    n_random: int  # random weight draws in the baseline
    n_perm: int  # output-token relabellings in the copying score's permutation null


SCALES = {
    "small": Config(n_sequences=128, n_random=100, n_perm=1000),
    "large": Config(n_sequences=4096, n_random=2000, n_perm=10000),
}


@dataclass
class HeadOV:
    positive: float  # fraction of eigenvalues with positive real part
    mass: float  # sum(lambda) / sum(|lambda|), real part
    copying: float  # fraction of tokens whose own logit is the row maximum
    null_max: float = float("nan")  # largest copying score over the relabelled circuits
    # the eigenvalue rows' permutation p-values against the same relabelling (audit13)
    positive_p: float = float("nan")
    mass_p: float = float("nan")


@dataclass
class Setup:
    cfg: Config
    model_cfg: decoder.DecoderConfig
    params: dict[str, torch.Tensor]
    ind: int  # the layer-1 induction head
    heads: dict[tuple[int, int], HeadOV]
    others: list[HeadOV] = field(default_factory=list)  # the induction head at seeds 1, 2


def relabelled_copying(top: torch.Tensor, n_perm: int, gen: torch.Generator) -> torch.Tensor:
    """Copying scores of `n_perm` circuits whose output tokens (columns) are randomly permuted:
    top (vocab,) = each row's argmax column -> (n_perm,). Permuting columns keeps each row's
    values and moves row i's maximum to column perm[top[i]]; the score counts rows where that
    is the row's own token."""
    vocab = top.shape[0]
    rand = torch.rand(n_perm, vocab, generator=gen, device=gen.device)  # (n_perm, vocab)
    perms = rand.argsort(-1).to(top.device)  # (n_perm, vocab): new label of each column
    own = torch.arange(vocab, device=top.device)  # (vocab,)
    return (perms[:, top] == own).double().mean(-1)  # (n_perm,)


def relabelled_spectra(
    params: dict[str, torch.Tensor], layer: int, head: int, n_perm: int, gen: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """(fraction positive, sum(lambda) / sum(|lambda|)) of `n_perm` full OV circuits with their
    output tokens relabelled, W_E W_V W_O W_U P: each (n_perm,). The nonzero eigenvalues are
    those of W_O (W_U P W_E) W_V, and W_U P W_E = W_U W_E[P^-1] (rows of W_E permuted)."""
    w = decoder.layer_params(params, layer)
    w_e, w_u = params["W_E"], params["W_U"]  # (vocab, d_model), (d_model, vocab)
    vocab = w_e.shape[0]
    perms = torch.stack([torch.randperm(vocab, generator=gen) for _ in range(n_perm)])
    inverse = perms.argsort(-1).to(w_e.device)  # (n_perm, vocab)
    mixed = w_u @ w_e[inverse]  # (n_perm, d_model, d_model): W_U P W_E
    small = w["W_O"][head] @ mixed @ w["W_V"][head]  # (n_perm, d_head, d_head)
    eig = torch.linalg.eigvals(small)  # (n_perm, d_head) complex
    positive = (eig.real > 0).double().mean(-1)  # (n_perm,)
    return positive, eig.sum(-1).real / eig.abs().sum(-1)  # (n_perm,) each


def upper_p(null: torch.Tensor, observed: float) -> float:
    """(1 + #{null >= observed}) / (1 + n): ties count against the observed."""
    return (1 + int((null >= observed).sum())) / (1 + len(null))


def with_spectrum_null(ov: HeadOV, params: dict, layer: int, head: int, n_perm: int) -> HeadOV:
    """`ov` with its eigenvalue rows' p-values against n_perm relabellings, drawn from their own
    generator (seeded by the head's place) so the rest of the run's draws are unchanged."""
    gen = torch.Generator().manual_seed(SPECTRUM_SEED + 100 * layer + head)
    positive, mass = relabelled_spectra(params, layer, head, n_perm, gen)
    return dataclasses.replace(
        ov, positive_p=upper_p(positive, ov.positive), mass_p=upper_p(mass, ov.mass)
    )


def head_ov(
    params: dict[str, torch.Tensor],
    layer: int,
    head: int,
    n_perm: int = 0,
    gen: torch.Generator | None = None,
) -> HeadOV:
    """A head's OV measures; with n_perm > 0 (and gen) also its copying score's permutation
    null."""
    eig = decoder.ov_eigenvalues(params, layer, head)  # (d_head,) complex
    circuit = decoder.ov_circuit(params, layer, head)  # (vocab, vocab)
    own = torch.arange(circuit.shape[0], device=circuit.device)  # (vocab,)
    top = circuit.argmax(-1)  # (vocab,)
    null = float("nan")
    if n_perm > 0 and gen is not None:
        null = float(relabelled_copying(top, n_perm, gen).max())
    return HeadOV(
        positive=float((eig.real > 0).double().mean()),
        mass=float(eig.sum().real / eig.abs().sum()),
        copying=float((top == own).double().mean()),
        null_max=null,
    )


def measure(cfg: Config, model_cfg, params: dict, gen: torch.Generator) -> Setup:
    obs = decoder.observe(model_cfg, params, cfg.n_sequences, gen)
    ind = int(decoder.induction_scores(obs.cache.pattern[1], obs.data).argmax())
    heads = {
        (layer, h): head_ov(params, layer, h, cfg.n_perm, gen)
        for layer in range(model_cfg.n_layers)
        for h in range(model_cfg.n_heads)
    }
    heads[(1, ind)] = with_spectrum_null(heads[(1, ind)], params, 1, ind, cfg.n_perm)
    return Setup(cfg, model_cfg, params, ind, heads)


def build(cfg: Config, device: torch.device, gen: torch.Generator) -> Setup:
    harness.progress("loading the shipped decoder")
    model_cfg, params, _ = decoder.load(device=device)
    setup = measure(cfg, model_cfg, {k: v.to(DTYPE) for k, v in params.items()}, gen)
    for path in circuit.seed_files()[1:]:  # the same measure at the other training seeds
        _, other, _ = decoder.load(path, device=device)
        more = measure(cfg, model_cfg, {k: v.to(DTYPE) for k, v in other.items()}, gen)
        setup.others.append(more.heads[(1, more.ind)])
    return setup


def counterexample(cfg: Config, device: torch.device, gen: torch.Generator) -> Setup:
    """The decoder at initialisation: random OV circuits."""
    model_cfg, _, _ = decoder.load(device=device)
    return measure(cfg, model_cfg, decoder.untrained(model_cfg, gen, DTYPE), gen)


def random_like(params: dict[str, torch.Tensor], gen: torch.Generator) -> dict[str, torch.Tensor]:
    """Gaussian tensors with each trained tensor's shape and standard deviation."""
    return {
        k: torch.randn(v.shape, generator=gen, device=gen.device, dtype=v.dtype) * v.std()
        for k, v in params.items()
    }


def _row(heads: dict[tuple[int, int], HeadOV], field: str) -> str:
    return ", ".join(f"L{ly}H{h} {getattr(ov, field):.2f}" for (ly, h), ov in heads.items())


def check(setup: Setup) -> list[Check]:
    every = [setup.heads[(1, setup.ind)], *setup.others]  # the induction head at each seed
    # per seed: copying score minus the largest relabelled score (NaN, so failing, if unmeasured)
    margins = [ov.copying - ov.null_max for ov in every]
    margin = float("nan") if any(math.isnan(m) for m in margins) else min(margins)
    vs_null = ", ".join(f"{ov.copying:.2f} vs {ov.null_max:.3f}" for ov in every)
    seeds = f"worst of {len(every)} training seeds" if len(every) > 1 else "one seed"

    def per_seed(f: str) -> str:
        return ", ".join(f"{getattr(ov, f):.2f}" for ov in every)

    return [
        spectrum_check(
            f"induction head: fraction of OV eigenvalues with positive real part, {seeds} "
            f"(per seed {per_seed('positive')}; seed 0 L1H{setup.ind}, all heads: "
            f"{_row(setup.heads, 'positive')})",
            every,
            "positive",
            POSITIVE_BAR,
            setup.cfg.n_perm,
            "a copying OV circuit maps each token towards itself, so its eigenvalues are mostly "
            "positive, and more so than the same circuit with its output tokens relabelled",
        ),
        spectrum_check(
            f"induction head: sum(lambda) / sum(|lambda|), {seeds} (per seed "
            f"{per_seed('mass')}; seed 0 all heads: {_row(setup.heads, 'mass')})",
            every,
            "mass",
            MASS_BAR,
            setup.cfg.n_perm,
            "the spectral mass of a copying circuit is net positive, beyond the same circuit "
            "with its output tokens relabelled",
        ),
        Check(
            f"induction head: copying score (tokens whose own logit is their row's largest) "
            f"minus the largest of {setup.cfg.n_perm} output-relabelled copies of its own "
            f"circuit, {seeds} (per seed {vs_null}; seed 0 all heads: "
            f"{_row(setup.heads, 'copying')})",
            margin,
            "> 0",
            margin > 0,
            "attending to a token should raise that token's own logit more often than the same "
            "circuit with its output tokens relabelled does",
            MEASUREMENT,
            f"a permutation test at p < 1/{setup.cfg.n_perm}: relabelling keeps every row's "
            "values and removes only token-to-itself alignment; argued before the run, "
            "demos/BARS.md",
        ),
    ]


def spectrum_check(
    name: str, every: list[HeadOV], which: str, bar: float, n_perm: int, detail: str
) -> Check:
    """The worst seed's value at least `bar`, and at every seed its relabelling p <= P_BAR."""
    worst = min(getattr(ov, which) for ov in every)
    ps = [getattr(ov, f"{which}_p") for ov in every]
    ok = worst >= bar and all(p <= P_BAR for p in ps)  # a NaN p (unmeasured) fails
    return Check(
        f"{name}; against {n_perm} output-relabelled copies of its own circuit, p per seed "
        f"{', '.join(f'{p:.3g}' for p in ps)}",
        worst,
        f">= {bar:g} and p <= {P_BAR:g} at every seed",
        ok,
        detail,
        MEASUREMENT,
        f"{bar:g} says what 'mostly' means (argued before the first run); the relabelling keeps "
        "every row's values and removes only token-to-itself alignment, the copying score's "
        "null (demos/BARS.md, audit13)",
    )


def contrast(setup: Setup, gen: torch.Generator) -> list[Check]:
    """The same three measures, averaged over random weight draws (layer-1 head 0 of each)."""
    n = setup.cfg.n_random
    null = setup.heads[(1, setup.ind)].null_max  # the seed-0 induction head's relabelled max
    draws = [head_ov(random_like(setup.params, gen), 1, 0) for _ in range(n)]
    mean = {f: sum(getattr(d, f) for d in draws) / n for f in ("positive", "mass", "copying")}
    return [
        harness.at_most(
            f"random weights: mean fraction of positive eigenvalues ({n} draws)",
            mean["positive"],
            POSITIVE_BAR,
            kind=SANITY,
        ),
        harness.at_most(
            "random weights: mean sum(lambda) / sum(|lambda|)", mean["mass"], MASS_BAR,
            kind=SANITY,
        ),
        harness.at_most(
            "random weights: mean copying score (bar: the trained head's relabelled maximum)",
            mean["copying"],
            null,
            kind=SANITY,
        ),
    ]  # fmt: skip


def notes(cfg: Config) -> list[str]:
    return [
        "Full OV circuit through the token embedding only (positional embeddings and layer-0 "
        "writes also reach layer-1 values; this is the standard first-order view).",
        "Eigenvalues from the d_head x d_head cyclic permutation W_O W_U W_E W_V, in float64.",
        f"Random baseline: {cfg.n_random} draws of Gaussian weights with the trained tensors' "
        "standard deviations.",
    ]


def figures(setup: Setup) -> dict:
    """The induction head's OV spectrum: its d_head eigenvalues' real parts, largest first."""
    eig = decoder.ov_eigenvalues(setup.params, 1, setup.ind)  # (d_head,) complex
    real = sorted((float(v) for v in eig.real), reverse=True)
    return {
        "ov_spectrum": {
            "kind": "bars",
            "title": f"L1H{setup.ind}'s full OV circuit W_E W_V W_O W_U: eigenvalues, real part",
            "labels": [f"λ{i}" for i in range(len(real))],
            "values": [round(v, 4) for v in real],
            "imag": [round(float(v), 4) for v in eig.imag],
            "caption": "a copying circuit maps each token towards itself: mostly positive",
        }
    }


def run(scale: str = "small", device: str | DeviceChoice = "cpu", seed: int = 0) -> Report:
    return harness.run_module(__name__, scale, device, seed)
