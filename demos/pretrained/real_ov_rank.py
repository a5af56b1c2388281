"""real-ov-rank: every head's OV circuit W_V^h W_O^h on a real checkpoint has rank exactly d_head.

rank(W_V^h W_O^h) <= d_head holds by construction (a d_model x d_head times d_head x d_model
product). That it equals d_head is a measurement: trained W_V^h and W_O^h could have lost a
direction. Rank is torch.linalg.matrix_rank's rule in float64 (singular values above
sigma_max * d_model * eps, about 1e-13 relative), applied to the d_head x d_model core that has
exactly the product's nonzero singular values (see ov_core); a pass bar of "== d_head for every head" is the
claim itself. The effective rank (fewest singular values holding 90% of the squared Frobenius
mass) is reported per head beside the same number for Gaussian factors of the same shapes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from prep.demos import harness
from prep.demos._torch import torch
from prep.demos.harness import IDENTITY, MEASUREMENT, Check
from prep.demos.pretrained import pretrained as pt

NAME = "real-ov-rank"
DTYPE = torch.float64
CONTRAST_LABEL = "layer 0's head 0 with one direction of W_V^0 removed"
MASS = 0.9  # effective rank: singular values holding this share of the squared mass
# The shipped all-MiniLM-L6-v2: one measurement per layer (6), one identity contrast.
CHECK_KINDS = {IDENTITY: 1, MEASUREMENT: 6}


@dataclass(frozen=True)
class Config:
    gaussian_draws: int  # Gaussian (W_V, W_O) pairs for the effective-rank baseline


SCALES = {"small": Config(gaussian_draws=4), "large": Config(gaussian_draws=64)}


@dataclass
class Setup:
    real: pt.Real
    ov: list[torch.Tensor]  # per layer (n_heads, d_head, d_model): ov_core of W_V^h W_O^h
    gaussian_eff: float  # mean effective rank of Gaussian factors of the same shapes


def ov_circuits(real: pt.Real, layer: int) -> torch.Tensor:
    w = real.weights(layer)
    return torch.einsum("hmk,hkn->hmn", w.W_V.double(), w.W_O.double())  # (h, d, d)


def ov_core(ov: torch.Tensor, w_v: torch.Tensor) -> torch.Tensor:
    """The d_head x d_head core whose singular values are the nonzero ones of each OV circuit.

    With W_V^h = Q R (Q: d_model x d_head orthonormal columns), W_V^h W_O^h = Q (R W_O^h), and
    R W_O^h = Q^T (W_V^h W_O^h); its rows span the product's row space, so its singular values
    are exactly the product's nonzero ones. SVDs of (d_head x d_model) matrices instead of
    (d_model x d_model) ones: ~100x less work at d_model 384.
    """
    q, _ = torch.linalg.qr(w_v.double())  # (h, d_model, d_head)
    return q.transpose(-1, -2) @ ov  # (h, d_head, d_model)


def effective_rank(sv: torch.Tensor) -> torch.Tensor:
    """Per row of singular values (descending): fewest holding MASS of the squared mass."""
    mass = (sv**2).cumsum(-1) / (sv**2).sum(-1, keepdim=True)  # (..., k)
    return (mass < MASS).sum(-1) + 1  # (...,)


def build(cfg: Config, real: pt.Real, gen: torch.Generator) -> Setup:
    ov = []
    for layer in range(real.n_layers):
        ov.append(ov_core(ov_circuits(real, layer), real.weights(layer).W_V))
    d, dh = real.d_model, real.d_head
    g_v = torch.randn(cfg.gaussian_draws, d, dh, generator=gen, device=gen.device)  # (k, d, dh)
    g_o = torch.randn(cfg.gaussian_draws, dh, d, generator=gen, device=gen.device)  # (k, dh, d)
    g_v, g_o = g_v.double(), g_o.double()
    sv = torch.linalg.svdvals(ov_core(g_v @ g_o, g_v))  # (k, d_head)
    return Setup(real, ov, float(effective_rank(sv).double().mean()))


def counterexample(cfg: Config, real: pt.Real, gen: torch.Generator) -> Setup:
    """Every layer's head 0 with W_V^0 projected off one direction: rank d_head - 1."""
    return break_claim(build(cfg, real, gen))


def break_claim(setup: Setup) -> Setup:
    """A copy in which every layer's head 0 lost one direction."""
    return dataclasses.replace(setup, ov=[drop_direction(ov) for ov in setup.ov])


def drop_direction(ov: torch.Tensor) -> torch.Tensor:
    """Head 0's OV circuit with its top singular direction removed (rank d_head - 1)."""
    u, s, vh = torch.linalg.svd(ov[0], full_matrices=False)  # (dh, dh), (dh,), (dh, d)
    s = s.clone()
    s[0] = 0.0
    out = ov.clone()
    out[0] = (u * s) @ vh  # (d_head, d_model)
    return out


def ranks(ov: torch.Tensor, d_model: int) -> torch.Tensor:
    """matrix_rank's default rule for the d_model x d_model product: singular values above
    sigma_max * d_model * eps."""
    return torch.linalg.matrix_rank(ov, rtol=d_model * torch.finfo(ov.dtype).eps)


def check(setup: Setup) -> list[Check]:
    real = setup.real
    out = []
    for layer, ov in enumerate(setup.ov):
        r = ranks(ov, real.d_model)  # (n_heads,)
        full = int((r == real.d_head).sum())
        out.append(
            harness.equals(
                f"layer {layer}: heads whose W_V^h W_O^h has rank exactly d_head = {real.d_head} "
                f"(ranks {int(r.min())}..{int(r.max())})",
                full,
                real.n_heads,
                "rank <= d_head always; below d_head means a head lost a value direction",
                kind=MEASUREMENT,
            )
        )
    return out


def contrast(setup: Setup, gen: torch.Generator) -> list[Check]:
    r = ranks(drop_direction(setup.ov[0])[0], setup.real.d_model)
    return [
        harness.equals(
            "layer 0, head 0 with one direction removed: rank",
            int(r),
            setup.real.d_head - 1,
            "the same rank test must see a missing direction",
        )
    ]


def notes(setup: Setup) -> list[str]:
    lines = []
    for layer, ov in enumerate(setup.ov):
        eff = effective_rank(torch.linalg.svdvals(ov))
        lines.append(
            f"layer {layer}: effective rank ({MASS:.0%} of squared mass) per head: "
            + " ".join(str(int(e)) for e in eff)
            + f" (mean {float(eff.double().mean()):.1f} of {setup.real.d_head})"
        )
    lines.append(
        f"Gaussian W_V^h, W_O^h of the same shapes: mean effective rank {setup.gaussian_eff:.1f} "
        f"of {setup.real.d_head}."
    )
    return lines


run = pt.runner(__name__)
