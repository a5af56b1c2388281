"""lora-wo: LoRA on the output projection, merged and unmerged, and what its rank allows.

LoRA (Hu et al. 2021) freezes a weight W and learns a low-rank update: h = W x + (alpha/r) B A x,
with A (r x d_in) random Gaussian and B (d_out x r) zero at initialisation, so the adapted layer
starts as the base layer. At deployment B A is merged into W, which adds no inference latency.

On o_proj (nn.Linear, weight (out, in) = (d_model, n_heads*d_head)) head h's block is the columns
h*d_head:(h+1)*d_head, and its update is B A[:, h*d_head:(h+1)*d_head]: every head's change of
write lies in the column space of B, one shared r-dimensional subspace of the residual stream.
"""

from __future__ import annotations

from dataclasses import dataclass

from prep.demos import harness
from prep.demos._torch import torch
from prep.demos.harness import IDENTITY, MEASUREMENT, SANITY, Check, DeviceChoice, Report
from prep.demos.synthetic import attention as attn

NAME = "lora-wo"
DTYPE = torch.float64  # matrix_rank needs clean singular values
CONTRAST_LABEL = "a full fine-tune of W_O (a dense update)"
# Merge, zero init, update ranks, adapter parameter count and the dense-update contrast are
# all algebra.
CHECK_KINDS = {IDENTITY: 5, SANITY: 2, MEASUREMENT: 0}
# The contrast is a random dense update: generic facts of a draw are sanity checks (DESIGN.md).

RANK = 4
ALPHA = 8.0


@dataclass(frozen=True)
class Config:
    batch: int = 2
    seq_len: int = 16
    d_model: int = 64
    n_heads: int = 8
    r: int = RANK

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads


SCALES = {"small": Config(), "large": Config(batch=1, seq_len=512, d_model=4096, n_heads=32, r=16)}


@dataclass
class Setup:
    cfg: Config
    z: torch.Tensor  # (B, T, n_heads*d_head) the concat, o_proj's input
    W: torch.Tensor  # (d_model, n_heads*d_head) the frozen o_proj weight (out, in)
    A: torch.Tensor  # (r, n_heads*d_head)
    B: torch.Tensor  # (d_model, r) as trained (nonzero)
    B_init: torch.Tensor  # (d_model, r) at initialisation (zero)
    merged: torch.Tensor  # (d_model, n_heads*d_head) W + (alpha/r) B A
    scaling: float  # alpha / r


def build(cfg: Config, device: torch.device, gen: torch.Generator) -> Setup:
    d = cfg.d_model
    z = attn.randn((cfg.batch, cfg.seq_len, d), gen, DTYPE)  # (B, T, n_heads*d_head)
    w = attn.randn((d, d), gen, DTYPE) / d**0.5  # (d_model, n_heads*d_head)
    a = attn.randn((cfg.r, d), gen, DTYPE) / d**0.5  # (r, n_heads*d_head) Gaussian init
    b = attn.randn((d, cfg.r), gen, DTYPE) * 0.1  # (d_model, r) stands for a trained B
    scaling = ALPHA / cfg.r
    return Setup(cfg, z, w, a, b, torch.zeros_like(b), w + scaling * b @ a, scaling)


def counterexample(cfg: Config, device: torch.device, gen: torch.Generator) -> Setup:
    """Merged without the alpha/r scaling, and B initialised randomly like A."""
    s = build(cfg, device, gen)
    s.merged = s.W + s.B @ s.A  # (d_model, n_heads*d_head)
    s.B_init = s.B.clone()
    return s


def unmerged(s: Setup, b: torch.Tensor) -> torch.Tensor:
    """The adapter beside the frozen weight: W z + (alpha/r) B (A z)."""
    return s.z @ s.W.T + s.scaling * (s.z @ s.A.T) @ b.T  # (B, T, d_model)


def rank(m: torch.Tensor) -> int:
    return int(torch.linalg.matrix_rank(m).item())


def check(s: Setup) -> list[Check]:
    cfg = s.cfg
    rtol, atol = harness.tolerance(DTYPE, cfg.d_model)
    delta = s.scaling * s.B @ s.A  # (d_model, n_heads*d_head)
    dh = cfg.d_head
    shared = torch.cat([delta[:, h * dh : (h + 1) * dh] for h in range(cfg.n_heads)], dim=1)
    n_adapter = s.A.numel() + s.B.numel()
    d = cfg.d_model
    return [
        harness.close(
            "merged (W + (alpha/r) B A) z  vs  W z + (alpha/r) B (A z)",
            s.z @ s.merged.T,
            unmerged(s, s.B),
            rtol=rtol,
            atol=atol,
            detail="the merged weight must carry the same alpha/r scaling as the adapter path",
        ),
        harness.exactly_zero(
            "at initialisation (B = 0): adapted layer - base layer",
            unmerged(s, s.B_init) - s.z @ s.W.T,
            "LoRA initialises B to zero, so training starts from the base model exactly",
        ),
        harness.equals(
            f"rank of the update (alpha/r) B A = r = {cfg.r}",
            rank(delta),
            cfg.r,
            "the update factors through r dimensions",
        ),
        harness.equals(
            f"rank of all {cfg.n_heads} heads' block updates together = r = {cfg.r}",
            rank(shared),
            cfg.r,
            "every head's block update B A_h lies in the column space of B",
        ),
        harness.equals(
            f"adapter parameters r*(d_in + d_out) = {cfg.r * 2 * d:,} vs d_model^2 = {d * d:,}",
            n_adapter,
            cfg.r * 2 * d,
        ),
    ]


def contrast(s: Setup, gen: torch.Generator) -> list[Check]:
    cfg = s.cfg
    dense = attn.randn((cfg.d_model, cfg.d_model), gen, DTYPE) * 0.01  # (d_model, d_model)
    dh = cfg.d_head
    head0 = dense[:, :dh]  # (d_model, d_head)
    head1 = dense[:, dh : 2 * dh]  # (d_model, d_head)
    return [
        harness.at_least(
            "dense update: rank",
            rank(dense),
            cfg.d_model,
            kind=SANITY,
            bar=harness.RANDOM_DRAW,
        ),
        harness.at_least(
            "dense update: rank of heads 0 and 1's block updates together (> d_head)",
            rank(torch.cat([head0, head1], dim=1)),
            2 * dh,
            kind=SANITY,
            bar=harness.RANDOM_DRAW,
        ),
    ]


def notes(cfg: Config) -> list[str]:
    d = cfg.d_model
    return [
        f"r = {cfg.r}, alpha = {ALPHA:g}: {cfg.r * 2 * d:,} adapter parameters against "
        f"{d * d:,} in W_O ({cfg.r * 2 * d / (d * d):.1%}).",
        "Rank is numerical (torch.linalg.matrix_rank in float64, default tolerance).",
    ]


def run(scale: str = "small", device: str | DeviceChoice = "cpu", seed: int = 0) -> Report:
    return harness.run_module(__name__, scale, device, seed)
