"""ov-rank: each head's OV circuit is a d_model x d_model matrix of rank at most d_head.

OV^h = W_V^h W_O^h with W_V^h (d_model, d_head) and W_O^h (d_head, d_model): it factors through
d_head dimensions, so rank(OV^h) <= d_head whatever the weights. Ranks are numerical: the number of
singular values above tol = sigma_max * d_model * eps (torch.linalg.matrix_rank's default). The
demo runs in float64 so the gap is wide: the d_model - d_head "zero" singular values of OV^h sit
near sigma_max * 1e-16, while the smallest singular value of a random d_model x d_model Gaussian
matrix is typically sigma_max / (2 d_model), about 1e-4 at d_model 4096, far above tol (~1e-12).
In float32 that margin would shrink to under 10x at d_model 4096.
"""

from __future__ import annotations

from dataclasses import dataclass

from prep.demos import harness
from prep.demos._torch import torch
from prep.demos.decoder import decoder
from prep.demos.harness import IDENTITY, SANITY, Check, DeviceChoice, Report
from prep.demos.synthetic import attention as attn

NAME = "ov-rank"
DTYPE = torch.float64  # the harness runs float64 demos on the CPU where mps lacks it
CONTRAST_LABEL = "full d_model x d_model matrices"
# The rank bound and its gap, and the full-rank contrasts, are algebra (generic matrices);
# two ranks per layer of the shipped 2-layer decoder are measured, at every scale.
CHECK_KINDS = {IDENTITY: 2, SANITY: 6}
# Generic facts of a random draw are sanity checks (DESIGN.md: "a random matrix has full rank").


@dataclass(frozen=True)
class Config:
    d_model: int
    n_heads: int
    heads_checked: int  # heads whose d_model x d_model SVD is taken (all of them when small)

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads


SCALES = {
    "small": Config(d_model=64, n_heads=8, heads_checked=8),
    "large": Config(d_model=4096, n_heads=32, heads_checked=2),
}


@dataclass
class Setup:
    cfg: Config
    W_V: torch.Tensor  # (n_heads, d_model, d_head)
    W_O: torch.Tensor  # (n_heads, d_head, d_model)
    heads: list[int]  # the heads whose OV rank is measured
    trained: list[tuple[torch.Tensor, torch.Tensor]]  # per layer of the shipped decoder: W_V, W_O


def trained_ov(device: torch.device) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(W_V, W_O) of each layer of the shipped decoder, in float64."""
    model_cfg, params, _ = decoder.load(device=device)
    return [
        (params[f"blocks.{ly}.W_V"].to(DTYPE), params[f"blocks.{ly}.W_O"].to(DTYPE))
        for ly in range(model_cfg.n_layers)
    ]


def build(cfg: Config, device: torch.device, gen: torch.Generator) -> Setup:
    h, d, dh = cfg.n_heads, cfg.d_model, cfg.d_head
    w_v = attn.randn((h, d, dh), gen, DTYPE) / d**0.5  # (n_heads, d_model, d_head)
    w_o = attn.randn((h, dh, d), gen, DTYPE) / d**0.5  # (n_heads, d_head, d_model)
    heads = sorted(
        {round(i * (h - 1) / max(cfg.heads_checked - 1, 1)) for i in range(cfg.heads_checked)}
    )
    return Setup(cfg, w_v, w_o, heads, trained_ov(device))


def counterexample(cfg: Config, device: torch.device, gen: torch.Generator) -> Setup:
    """W_V with d_model columns per head (a fused, unsplit V): the OV product is full rank."""
    setup = build(cfg, device, gen)
    d = cfg.d_model
    setup.W_V = attn.randn((cfg.n_heads, d, d), gen, DTYPE) / d**0.5  # (n_heads, d_model, d_model)
    setup.W_O = attn.randn((cfg.n_heads, d, d), gen, DTYPE) / d**0.5  # (n_heads, d_model, d_model)
    # and a trained decoder whose head 0 (every layer) lost one of its d_head value dims
    setup.trained = [(w_v.clone().index_fill_(2, torch.tensor([0]), 0.0), w_o)
                     for w_v, w_o in setup.trained]  # fmt: skip
    return setup


def rank(matrix: torch.Tensor) -> int:
    """Singular values above sigma_max * max(m, n) * eps count (matrix_rank's default tol)."""
    return int(torch.linalg.matrix_rank(matrix))


def check(setup: Setup) -> list[Check]:
    cfg = setup.cfg
    eps = torch.finfo(DTYPE).eps
    ranks, gaps = [], []
    for h in setup.heads:
        ov = setup.W_V[h] @ setup.W_O[h]  # (d_model, d_model)
        sv = torch.linalg.svdvals(ov)  # (d_model,) descending
        ranks.append(int((sv > sv[0] * cfg.d_model * eps).sum()))
        gaps.append(float(sv[cfg.d_head] / sv[0]) if cfg.d_head < cfg.d_model else 0.0)
    return [
        harness.at_most(
            f"max rank of the d_model x d_model W_V^h W_O^h, heads {setup.heads}",
            max(ranks),
            cfg.d_head,
            "an OV circuit factors through the head's d_head dims, so its rank cannot exceed "
            "d_head; a higher rank means the per-head W_V/W_O are wider than d_head",
        ),
        harness.at_most(
            "max sigma_(d_head+1) / sigma_max over those heads (the rank tolerance)",
            max(gaps),
            cfg.d_model * eps,
            "singular values past the d_head-th should be rounding noise, below d_model * eps",
        ),
        *trained_checks(setup.trained),
    ]


def trained_checks(trained: list[tuple[torch.Tensor, torch.Tensor]]) -> list[Check]:
    """Measured on the shipped decoder: does training use every dim the bound allows?

    Bars (argued before the run): nothing in training pushes a head's OV below rank d_head or the
    layer's summed OV below rank d_model, and a generic matrix has full rank, so the claim is
    equality; an exact zero singular value would need a coincidence or a dead head."""
    checks = []
    for layer, (w_v, w_o) in enumerate(trained):
        n_heads, d_model, dh = w_v.shape
        ranks = [rank(w_v[h] @ w_o[h]) for h in range(n_heads)]
        whole = rank(torch.einsum("hmk,hkn->mn", w_v, w_o))  # (d_model, d_model) summed
        checks += [
            harness.equals(
                f"trained decoder layer {layer}: smallest OV rank over heads (ranks {ranks}; "
                f"d_head = {dh})",
                min(ranks),
                dh,
                "a trained head whose OV rank is below d_head leaves some of its value dims unused",
                kind=SANITY,
            ),
            harness.equals(
                f"trained decoder layer {layer}: rank of sum_h W_V^h W_O^h (d_model = {d_model})",
                whole,
                d_model,
                "the heads' OV circuits together should reach every residual direction",
                kind=SANITY,
            ),
        ]
    return checks


def contrast(setup: Setup, gen: torch.Generator) -> list[Check]:
    cfg = setup.cfg
    d = cfg.d_model
    generic = attn.randn((d, d), gen, DTYPE)  # (d_model, d_model)
    all_heads = torch.einsum("hmk,hkn->mn", setup.W_V, setup.W_O)  # (d_model, d_model)
    return [
        harness.equals(
            f"random {d} x {d} Gaussian matrix: rank",
            rank(generic),
            d,
            kind=SANITY,
            bar=harness.RANDOM_DRAW,
        ),
        harness.equals(
            "sum over all heads of W_V^h W_O^h (the whole layer's OV): rank",
            rank(all_heads),
            d,
            kind=SANITY,
            bar=harness.RANDOM_DRAW,
        ),
    ]


def notes(cfg: Config) -> list[str]:
    return [
        "Rank = singular values above sigma_max * d_model * eps(float64) "
        "(torch.linalg.matrix_rank default). float64 keeps true zeros (~1e-16 sigma_max) "
        "far below the smallest real singular values.",
        "Sanity: the shipped decoder's trained heads (float64 ranks) reach d_head, and the "
        "layer's summed OV d_model, as any weights of these shapes do.",
        f"OV ranks measured for {cfg.heads_checked} of {cfg.n_heads} heads (a "
        f"{cfg.d_model} x {cfg.d_model} SVD each); the bound holds for every head by the "
        "same factorization.",
    ]


def run(scale: str = "small", device: str | DeviceChoice = "cpu", seed: int = 0) -> Report:
    return harness.run_module(__name__, scale, device, seed)
