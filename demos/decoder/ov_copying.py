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
- copying score >= 0.5: most tokens raise their own logit most (chance is 1/vocab).
- "unlike random weights": the mean over random draws of each measure stays below its bar.

What the runs showed, and how the claim changed (the bars did not): the claim also said "unlike
the other heads", checked as "the induction head has the highest copying score of all heads".
On the shipped decoder all four layer-1 heads are induction heads (see the induction demo) with
copying OV circuits (every eigenvalue positive; copying scores 0.36-0.55), and L1H1 and L1H2
nearly tie on induction attention, so which one is "the" induction head depends on the sampled
batch: with seeds 1, 2, 3 and 5 it was L1H2 (copying 0.53), which L1H1 (0.55) beats. Some layer-0
heads are partly copying too (L0H0, L0H2: 0.88 and 0.94 of eigenvalues positive, copying 0.41 and
0.44). So the check was dropped, every head's values are reported in the check names, and the
claim is only about the strongest induction head against random weights.
"""

from __future__ import annotations

from dataclasses import dataclass

from prep.demos import harness
from prep.demos._torch import torch
from prep.demos.decoder import decoder
from prep.demos.harness import IDENTITY, MEASUREMENT, Check, DeviceChoice, Report

NAME = "ov-copying"
DTYPE = torch.float64  # eigenvalues of a product of five matrices: keep rounding out of the way
CONTRAST_LABEL = "random Gaussian weights with the trained tensors' standard deviations"
# All measured: 3 on the shipped decoder's induction head, 3 on random weights (the contrast).
CHECK_KINDS = {IDENTITY: 0, MEASUREMENT: 6}
POSITIVE_BAR = 0.75
MASS_BAR = 0.5
COPY_BAR = 0.5


@dataclass(frozen=True)
class Config:
    n_sequences: int  # sequences used to find the induction head
    n_random: int  # random weight draws in the baseline


SCALES = {
    "small": Config(n_sequences=128, n_random=100),
    "large": Config(n_sequences=4096, n_random=2000),
}


@dataclass
class HeadOV:
    positive: float  # fraction of eigenvalues with positive real part
    mass: float  # sum(lambda) / sum(|lambda|), real part
    copying: float  # fraction of tokens whose own logit is the row maximum


@dataclass
class Setup:
    cfg: Config
    model_cfg: decoder.DecoderConfig
    params: dict[str, torch.Tensor]
    ind: int  # the layer-1 induction head
    heads: dict[tuple[int, int], HeadOV]


def head_ov(params: dict[str, torch.Tensor], layer: int, head: int) -> HeadOV:
    eig = decoder.ov_eigenvalues(params, layer, head)  # (d_head,) complex
    circuit = decoder.ov_circuit(params, layer, head)  # (vocab, vocab)
    own = torch.arange(circuit.shape[0], device=circuit.device)  # (vocab,)
    return HeadOV(
        positive=float((eig.real > 0).double().mean()),
        mass=float(eig.sum().real / eig.abs().sum()),
        copying=float((circuit.argmax(-1) == own).double().mean()),
    )


def measure(cfg: Config, model_cfg, params: dict, gen: torch.Generator) -> Setup:
    obs = decoder.observe(model_cfg, params, cfg.n_sequences, gen)
    ind = int(decoder.induction_scores(obs.cache.pattern[1], obs.data).argmax())
    heads = {
        (layer, h): head_ov(params, layer, h)
        for layer in range(model_cfg.n_layers)
        for h in range(model_cfg.n_heads)
    }
    return Setup(cfg, model_cfg, params, ind, heads)


def build(cfg: Config, device: torch.device, gen: torch.Generator) -> Setup:
    harness.progress("loading the shipped decoder")
    model_cfg, params, _ = decoder.load(device=device)
    return measure(cfg, model_cfg, {k: v.to(DTYPE) for k, v in params.items()}, gen)


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
    ind = setup.heads[(1, setup.ind)]
    return [
        harness.at_least(
            f"L1H{setup.ind} (induction head): fraction of OV eigenvalues with positive real part "
            f"(all heads: {_row(setup.heads, 'positive')})",
            ind.positive,
            POSITIVE_BAR,
            "a copying OV circuit maps each token towards itself, so its eigenvalues are mostly "
            "positive; a random one has about half",
            kind=MEASUREMENT,
        ),
        harness.at_least(
            f"L1H{setup.ind}: sum(lambda) / sum(|lambda|) (all heads: {_row(setup.heads, 'mass')})",
            ind.mass,
            MASS_BAR,
            "the spectral mass of a copying circuit is net positive",
            kind=MEASUREMENT,
        ),
        harness.at_least(
            f"L1H{setup.ind}: copying score, tokens whose own logit is their row's largest "
            f"(all heads: {_row(setup.heads, 'copying')})",
            ind.copying,
            COPY_BAR,
            f"attending to a token should raise that token's logit most (chance 1/"
            f"{setup.model_cfg.vocab})",
            kind=MEASUREMENT,
        ),
    ]


def contrast(setup: Setup, gen: torch.Generator) -> list[Check]:
    """The same three measures, averaged over random weight draws (layer-1 head 0 of each)."""
    n = setup.cfg.n_random
    draws = [head_ov(random_like(setup.params, gen), 1, 0) for _ in range(n)]
    mean = {f: sum(getattr(d, f) for d in draws) / n for f in ("positive", "mass", "copying")}
    return [
        harness.at_most(
            f"random weights: mean fraction of positive eigenvalues ({n} draws)",
            mean["positive"],
            POSITIVE_BAR,
            kind=MEASUREMENT,
        ),
        harness.at_most(
            "random weights: mean sum(lambda) / sum(|lambda|)", mean["mass"], MASS_BAR,
            kind=MEASUREMENT,
        ),
        harness.at_most(
            "random weights: mean copying score", mean["copying"], COPY_BAR, kind=MEASUREMENT
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


def run(scale: str = "small", device: str | DeviceChoice = "cpu", seed: int = 0) -> Report:
    return harness.run_module(__name__, scale, device, seed)
