"""scale-migration: a per-channel scale moves freely between W_V and W_O (SmoothQuant's trick).

The input of W_O (o_proj) is the concat of the heads' outputs z = A x W_V. Attention mixes
positions, never channels, so dividing value channel j by s_j (the column j of W_V) divides z's
channel j by s_j, and multiplying row j of the flattened W_O by s_j undoes it exactly: the layer's
output is unchanged. SmoothQuant (Xiao et al. 2022) uses this freedom for linear layers to move
activation outliers into the weights, with s_j = max|X_j|^alpha / max|W_j|^(1-alpha), so that
8-bit quantisation of the activations loses less. Here X is W_O's input and alpha = 0.5.

It is the same invertible freedom between W_V^h and W_O^h that makes a W_O-norm "importance"
ill-defined (importance-reparam): per-channel instead of per-head.

The synthetic layer gets a few outlier value channels (their W_V columns scaled up), the pattern
LLM activations show. Quantisation is symmetric int8, per tensor for activations and weights.
"""

from __future__ import annotations

from dataclasses import dataclass

from prep.demos import harness
from prep.demos._torch import torch
from prep.demos.harness import IDENTITY, SANITY, Check, DeviceChoice, Report
from prep.demos.synthetic import attention as attn

NAME = "scale-migration"
DTYPE = torch.float32
CONTRAST_LABEL = "the same migration across a GELU (an FFN's up and down projections)"
# The migrated output is algebra; the channel-range and int8-error improvements, and how far the
# migration misses across a GELU on a random draw (the contrast), are sanity.
CHECK_KINDS = {IDENTITY: 1, SANITY: 3}
SCALES = attn.standard_scales(large_seq_len=1024)
ALPHA = 0.5  # SmoothQuant's migration strength
OUTLIER_GAIN = 30.0  # how much larger the outlier value channels are
N_OUTLIERS = 3


@dataclass
class Setup:
    cfg: attn.Sizes
    x: torch.Tensor  # (B, T, d_model)
    w: attn.Weights  # the original layer, with outlier value channels
    s: torch.Tensor  # (n_heads*d_head,) per-channel migration scales
    W_V_m: torch.Tensor  # (n_heads, d_model, d_head) W_V with channel j divided by s_j
    W_O_m: torch.Tensor  # (n_heads*d_head, d_model) flat W_O with row j multiplied by s_j


def smooth_scales(act_max: torch.Tensor, w_max: torch.Tensor) -> torch.Tensor:
    return act_max.pow(ALPHA) / w_max.pow(1 - ALPHA)  # (channels,)


def migrate(w: attn.Weights, s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    h, d, dh = w.W_V.shape
    per_head = s.reshape(h, dh)  # (n_heads, d_head) channel j = head j // dh, index j % dh
    w_v = w.W_V / per_head[:, None, :]  # (n_heads, d_model, d_head) columns divided by s
    w_o = attn.flat(w.W_O) * s[:, None]  # (n_heads*d_head, d_model) rows multiplied by s
    return w_v, w_o


def build(cfg: attn.Sizes, device: torch.device, gen: torch.Generator) -> Setup:
    x = attn.random_inputs(cfg, gen, DTYPE)  # (B, T, d_model)
    w = attn.random_weights(cfg, gen, DTYPE)
    channels = torch.randperm(cfg.d_model, generator=gen, device=gen.device)[:N_OUTLIERS]
    w_v = w.W_V.permute(1, 0, 2).reshape(cfg.d_model, cfg.d_model).clone()  # (d, h*dh)
    w_v[:, channels] *= OUTLIER_GAIN
    w.W_V = w_v.reshape(cfg.d_model, cfg.n_heads, cfg.d_head).permute(1, 0, 2).contiguous()
    z = attn.head_outputs(x, w.W_Q, w.W_K, w.W_V)  # (B, T, n_heads, d_head)
    act_max = attn.concat(z).abs().amax(dim=(0, 1))  # (n_heads*d_head,)
    w_max = attn.flat(w.W_O).abs().amax(dim=1)  # (n_heads*d_head,) per input row of W_O
    s = smooth_scales(act_max, w_max)  # (n_heads*d_head,)
    w_v_m, w_o_m = migrate(w, s)
    return Setup(cfg, x, w, s, w_v_m, w_o_m)


def counterexample(cfg: attn.Sizes, device: torch.device, gen: torch.Generator) -> Setup:
    """The scale applied to W_O's output columns instead of the rows that read channel j."""
    setup = build(cfg, device, gen)
    setup.W_O_m = attn.flat(setup.w.W_O) * setup.s[None, :]  # (n_heads*d_head, d_model)
    return setup


def quantize(t: torch.Tensor) -> torch.Tensor:
    """Symmetric int8 fake quantisation, one scale for the whole tensor."""
    step = t.abs().max() / 127
    return (t / step).round().clamp(-127, 127) * step


def spread(act_max: torch.Tensor) -> torch.Tensor:
    """Largest channel range over the median one."""
    return act_max.max() / act_max.median()


def check(setup: Setup) -> list[Check]:
    cfg, w = setup.cfg, setup.w
    rtol, atol = harness.tolerance(DTYPE, cfg.d_model)
    z = attn.concat(attn.head_outputs(setup.x, w.W_Q, w.W_K, w.W_V))  # (B, T, h*dh)
    z_m = attn.concat(attn.head_outputs(setup.x, w.W_Q, w.W_K, setup.W_V_m))  # (B, T, h*dh)
    w_o = attn.flat(w.W_O)  # (h*dh, d_model)
    out, out_m = z @ w_o, z_m @ setup.W_O_m  # (B, T, d_model) each
    before, after = spread(z.abs().amax(dim=(0, 1))), spread(z_m.abs().amax(dim=(0, 1)))
    q_err = harness.relative_error(quantize(z) @ quantize(w_o), out)
    q_err_m = harness.relative_error(quantize(z_m) @ quantize(setup.W_O_m), out)
    # Bars, argued before the run: with alpha = 0.5 a channel's new range is
    # sqrt(act_max * w_max), so a 30x activation outlier becomes about sqrt(30) ~ 5.5x: the
    # spread must at least halve. Per-tensor int8 steps are set by the largest value, so the
    # normal channels' quantisation error shrinks by about the same factor: at least halve too.
    return [
        harness.close(
            "z diag(1/s) @ diag(s) W_O  vs  z @ W_O (layer output)",
            out_m,
            out,
            rtol=rtol,
            atol=atol,
            detail="s_j must multiply ROW j of the flattened W_O (the row that reads channel j "
            "of the concat), not column j (output dim j)",
        ),
        harness.at_most(
            f"W_O input channel ranges, max/median: after / before ({before:.3g} before)",
            after / before,
            0.5,
            "migration should move the outlier channels' range into W_O's rows",
            kind=harness.SANITY,
        ),
        harness.at_most(
            f"int8 W_O matmul error after / before migration ({q_err:.3g} before)",
            q_err_m / q_err,
            0.5,
            "with the outliers migrated, the per-tensor int8 step is finer for the other channels",
            kind=harness.SANITY,
        ),
    ]


def contrast(setup: Setup, gen: torch.Generator) -> list[Check]:
    """Through a nonlinearity the scale cannot move: GELU(h / s) * s != GELU(h)."""
    cfg = setup.cfg
    d, f = cfg.d_model, 4 * cfg.d_model
    w_up = attn.randn((d, f), gen, DTYPE) / d**0.5  # (d_model, 4*d_model)
    w_down = attn.randn((f, d), gen, DTYPE) / f**0.5  # (4*d_model, d_model)
    s = torch.exp(attn.randn((f,), gen, DTYPE))  # (4*d_model,) scales spread around 1
    hidden = setup.x @ w_up  # (B, T, 4*d_model)
    gelu = torch.nn.functional.gelu
    out = gelu(hidden) @ w_down  # (B, T, d_model)
    out_m = gelu(hidden / s) @ (w_down * s[:, None])  # (B, T, d_model)
    return [
        harness.at_least(
            "FFN: GELU(x W_up diag(1/s)) diag(s) W_down vs unmigrated, rel. error",
            harness.relative_error(out_m, out),
            0.1,
            kind=SANITY,
            bar=harness.RANDOM_DRAW,
        )
    ]


def notes(cfg: attn.Sizes) -> list[str]:
    return [
        f"Outliers: {N_OUTLIERS} value channels with {OUTLIER_GAIN:g}x larger W_V columns. "
        f"Migration strength alpha = {ALPHA} (SmoothQuant's default for many models).",
        "The output agrees to float rounding: the scales are exact in real arithmetic. ReLU, "
        "being positively homogeneous, would let a positive scale through; GELU does not.",
    ]


def run(scale: str = "small", device: str | DeviceChoice = "cpu", seed: int = 0) -> Report:
    return harness.run_module(__name__, scale, device, seed)
