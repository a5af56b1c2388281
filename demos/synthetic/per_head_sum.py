"""per-head-sum: the fused concat @ W_O is the sum of per-head writes, with the right layout.

W_O is stored per head as [n_heads, d_head, d_model]. Flattened head-major (reshape to
(n_heads*d_head, d_model)) its rows h*d_head:(h+1)*d_head are W_O[h], matching concat, which puts
head 0's d_head entries first. nn.Linear holds the transpose, so there head h's block is the
columns weight[:, h*d_head:(h+1)*d_head]. The classic bug flattens d_head-major instead
(W_O.transpose(0, 1).reshape(...)), which pairs head h's coordinates with other heads' rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from prep.demos import harness
from prep.demos._torch import torch
from prep.demos.harness import IDENTITY, MEASUREMENT, Check, DeviceChoice, Report
from prep.demos.synthetic import attention as attn

NAME = "per-head-sum"
DTYPE = torch.float32
CONTRAST_LABEL = "W_O flattened as (d_head, n_heads), the common layout bug"
SCALES = attn.standard_scales()
# Both checks are the algebra of the layout (true by construction for any weights); the contrast
# measures how wrong the layout bug is on random weights (it could be small, e.g. with 1 head).
CHECK_KINDS = {IDENTITY: 2, MEASUREMENT: 1}


@dataclass
class Setup:
    cfg: attn.Sizes
    z: torch.Tensor  # (B, T, n_heads, d_head)
    W_O: torch.Tensor  # (n_heads, d_head, d_model) per-head storage
    W_flat: torch.Tensor  # (n_heads*d_head, d_model) the matrix the fused path multiplies by


def build(cfg: attn.Sizes, device: torch.device, gen: torch.Generator) -> Setup:
    _, w, z = attn.random_layer(cfg, gen, DTYPE)  # z: (B, T, n_heads, d_head)
    return Setup(cfg, z, w.W_O, attn.flat(w.W_O))


def layout_bug(w_o: torch.Tensor) -> torch.Tensor:
    """The common bug: flatten as (d_head, n_heads) instead of (n_heads, d_head)."""
    h, dh, d = w_o.shape
    return w_o.transpose(0, 1).reshape(dh * h, d)  # (d_head*n_heads, d_model) rows interleaved


def counterexample(cfg: attn.Sizes, device: torch.device, gen: torch.Generator) -> Setup:
    setup = build(cfg, device, gen)
    setup.W_flat = layout_bug(setup.W_O)  # (d_head*n_heads, d_model)
    return setup


def sum_of_heads(z: torch.Tensor, w_o: torch.Tensor) -> torch.Tensor:
    """sum_h z_h @ W_O[h], one head at a time (the reference)."""
    out = torch.zeros(*z.shape[:2], w_o.shape[-1], device=z.device, dtype=z.dtype)  # (B,T,d)
    for h in range(w_o.shape[0]):
        out += z[:, :, h] @ w_o[h]  # (B, T, d_model)
    return out


def check(setup: Setup) -> list[Check]:
    cfg = setup.cfg
    rtol, atol = harness.tolerance(DTYPE, cfg.d_model)
    fused = attn.concat(setup.z) @ setup.W_flat  # (B, T, d_model)
    reference = sum_of_heads(setup.z, setup.W_O)  # (B, T, d_model)
    linear = torch.nn.Linear(cfg.d_model, cfg.d_model, bias=False, device=setup.z.device)
    with torch.no_grad():
        linear.weight.copy_(setup.W_flat.T)  # (out, in) = (d_model, n_heads*d_head)
        via_linear = linear(attn.concat(setup.z))  # (B, T, d_model)
    hint = (
        "is W_O flattened head-major? concat puts head 0's d_head entries first, so rows "
        "h*d_head:(h+1)*d_head of the flattened matrix must be W_O[h]; reshaping as "
        "(d_head, n_heads) interleaves the heads"
    )
    return [
        harness.close(
            "concat(z) @ W_O  vs  sum_h z_h @ W_O[h]",
            fused,
            reference,
            rtol=rtol,
            atol=atol,
            detail=hint,
            kind=IDENTITY,
        ),
        harness.close(
            "nn.Linear(concat(z)) with weight = W_O flattened, transposed (out, in)  vs  "
            "sum_h z_h @ W_O[h]",
            via_linear,
            reference,
            rtol=rtol,
            atol=atol,
            detail=hint + "; nn.Linear stores (out, in), so its weight is the transpose",
            kind=IDENTITY,
        ),
    ]


def contrast(setup: Setup, gen: torch.Generator) -> list[Check]:
    fused_bug = attn.concat(setup.z) @ layout_bug(setup.W_O)  # (B, T, d_model)
    reference = sum_of_heads(setup.z, setup.W_O)  # (B, T, d_model)
    return [
        harness.at_least(
            "layout bug: ||fused - sum of heads|| / ||sum of heads||",
            harness.relative_error(fused_bug, reference),
            0.5,
            kind=MEASUREMENT,
        )
    ]


def notes(cfg: attn.Sizes) -> list[str]:
    rtol, atol = harness.tolerance(DTYPE, cfg.d_model)
    return [
        f"Tolerance: assert_close's float32 defaults widened by sqrt(d_model/64): "
        f"rtol={rtol:.2g}, atol={atol:.2g}. The two sides sum the same products in a "
        "different order, so they agree to rounding, not bit for bit.",
    ]


def run(scale: str = "small", device: str | DeviceChoice = "cpu", seed: int = 0) -> Report:
    return harness.run_module(__name__, scale, device, seed)
