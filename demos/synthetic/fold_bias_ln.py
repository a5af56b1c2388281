"""fold-bias-ln: the value bias folds into the output bias, and LayerNorm's affine into the weights.

Value bias: head h's values are x W_V^h + b_V^h at every position. Each attention row sums to 1, so
the weighted average of the values carries b_V^h through unchanged: z_h = A_h x W_V^h + b_V^h.
Through W_O that is the constant b_V^h W_O^h, so b_O + sum_h b_V^h W_O^h is the folded output bias
and b_V can be dropped (TransformerLens does this when it folds the value biases).

LayerNorm: LN(x) = gamma * n(x) + beta, with n(x) the normalised x. The next projection reads
LN(x) W + b = n(x) (diag(gamma) W) + (beta W + b): gamma scales the rows of W (x @ W convention)
and beta moves into the bias. TransformerLens's fold_ln does this before any attribution.

Both folds hold in real arithmetic and agree to float rounding here. The bias fold needs rows that
sum to 1: with sigmoid attention, or a gate multiplying each head's output after attention (as in
gated attention), b_V^h is scaled per query and is no longer a constant.
"""

from __future__ import annotations

from dataclasses import dataclass

from prep.demos import harness
from prep.demos._torch import torch
from prep.demos.harness import IDENTITY, MEASUREMENT, SANITY, Check, DeviceChoice, Report
from prep.demos.synthetic import attention as attn

NAME = "fold-bias-ln"
DTYPE = torch.float32
CONTRAST_LABEL = "attention weights that do not sum to 1 (sigmoid attention; a gate after it)"
# Both folds are algebra; the two contrasts (attention rows not summing to 1) show how far
# the fold misses on a random draw: sanity (DESIGN.md: a generic fact any weights would show).
CHECK_KINDS = {IDENTITY: 2, SANITY: 2, MEASUREMENT: 0}
SCALES = attn.standard_scales(large_seq_len=1024)


@dataclass
class Params:
    gamma: torch.Tensor  # (d_model,) LayerNorm gain (ones when folded)
    beta: torch.Tensor  # (d_model,) LayerNorm bias (zeros when folded)
    w: attn.Weights  # W_Q, W_K, W_V: (n_heads, d_model, d_head); W_O: (n_heads, d_head, d_model)
    b_Q: torch.Tensor  # (n_heads, d_head)
    b_K: torch.Tensor  # (n_heads, d_head)
    b_V: torch.Tensor  # (n_heads, d_head)
    b_O: torch.Tensor  # (d_model,)


@dataclass
class Setup:
    cfg: attn.Sizes
    x: torch.Tensor  # (B, T, d_model) the residual stream entering the layer
    original: Params
    bias_folded: Params  # b_V moved into b_O
    ln_folded: Params  # gamma and beta moved into W_Q, W_K, W_V and their biases
    attention: str = "softmax"  # "softmax" | "sigmoid"


def layer(
    x: torch.Tensor, p: Params, attention: str = "softmax", gate: torch.Tensor | None = None
) -> torch.Tensor:
    """Pre-LN attention sub-layer output (before the residual add), biases everywhere.

    `gate` (B, T, n_heads), if given, multiplies each head's output after attention, per query.
    """
    n = torch.nn.functional.layer_norm(x, x.shape[-1:])  # (B, T, d_model) no affine
    ln = n * p.gamma + p.beta  # (B, T, d_model)
    q = torch.einsum("btm,hmd->bhtd", ln, p.w.W_Q) + p.b_Q[None, :, None]  # (B, h, T, dh)
    k = torch.einsum("btm,hmd->bhtd", ln, p.w.W_K) + p.b_K[None, :, None]  # (B, h, T, dh)
    v = torch.einsum("btm,hmd->bhtd", ln, p.w.W_V) + p.b_V[None, :, None]  # (B, h, T, dh)
    t = x.shape[1]
    scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5  # (B, h, T, T)
    mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()  # (T, T) causal
    if attention == "softmax":
        a = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)  # rows sum to 1
    else:
        a = torch.sigmoid(scores) * mask  # (B, h, T, T) rows do not sum to 1
    z = (a @ v).transpose(1, 2)  # (B, T, n_heads, d_head)
    if gate is not None:
        z = z * gate[..., None]  # (B, T, n_heads, d_head) gated per head and query
    return attn.project(z, p.w.W_O) + p.b_O  # (B, T, d_model)


def fold_value_bias(p: Params) -> Params:
    b_o = p.b_O + torch.einsum("hd,hdm->m", p.b_V, p.w.W_O)  # (d_model,)
    return Params(p.gamma, p.beta, p.w, p.b_Q, p.b_K, torch.zeros_like(p.b_V), b_o)


def fold_layer_norm(p: Params, with_beta: bool = True) -> Params:
    def weight(w: torch.Tensor) -> torch.Tensor:
        return p.gamma[None, :, None] * w  # (n_heads, d_model, d_head) rows scaled by gamma

    def bias(w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        shift = torch.einsum("m,hmd->hd", p.beta, w) if with_beta else 0.0
        return b + shift  # (n_heads, d_head)

    w = p.w
    folded = attn.Weights(weight(w.W_Q), weight(w.W_K), weight(w.W_V), w.W_O)
    return Params(
        torch.ones_like(p.gamma),
        torch.zeros_like(p.beta),
        folded,
        bias(w.W_Q, p.b_Q),
        bias(w.W_K, p.b_K),
        bias(w.W_V, p.b_V),
        p.b_O,
    )


def build(cfg: attn.Sizes, device: torch.device, gen: torch.Generator) -> Setup:
    x = attn.random_inputs(cfg, gen, DTYPE)  # (B, T, d_model)
    h, dh, d = cfg.n_heads, cfg.d_head, cfg.d_model
    p = Params(
        gamma=1.0 + 0.5 * attn.randn((d,), gen, DTYPE),  # (d_model,)
        beta=attn.randn((d,), gen, DTYPE),  # (d_model,)
        w=attn.random_weights(cfg, gen, DTYPE),
        b_Q=attn.randn((h, dh), gen, DTYPE),  # (n_heads, d_head)
        b_K=attn.randn((h, dh), gen, DTYPE),  # (n_heads, d_head)
        b_V=attn.randn((h, dh), gen, DTYPE),  # (n_heads, d_head) large, so a wrong fold shows
        b_O=attn.randn((d,), gen, DTYPE),  # (d_model,)
    )
    return Setup(cfg, x, p, fold_value_bias(p), fold_layer_norm(p))


def counterexample(cfg: attn.Sizes, device: torch.device, gen: torch.Generator) -> Setup:
    """Sigmoid attention (rows do not sum to 1), and a LayerNorm fold that forgets beta."""
    s = build(cfg, device, gen)
    s.attention = "sigmoid"
    s.ln_folded = fold_layer_norm(s.original, with_beta=False)
    return s


def check(s: Setup) -> list[Check]:
    rtol, atol = harness.tolerance(DTYPE, s.cfg.d_model)
    reference = layer(s.x, s.original, s.attention)  # (B, T, d_model)
    return [
        harness.close(
            "b_V = 0 and b_O + sum_h b_V^h W_O^h  vs  the layer with its value bias",
            layer(s.x, s.bias_folded, s.attention),
            reference,
            rtol=rtol,
            atol=atol,
            detail="the fold needs every attention row to sum to 1, so the weighted average of "
            "the values passes b_V^h through unchanged; sigmoid or gated attention breaks it",
        ),
        harness.close(
            "LayerNorm without affine, gamma in W's rows, beta W + b  vs  the layer",
            layer(s.x, s.ln_folded, s.attention),
            reference,
            rtol=rtol,
            atol=atol,
            detail="gamma scales the rows of W_Q, W_K, W_V (x @ W convention) and beta W must be "
            "added to each bias",
        ),
    ]


def contrast(s: Setup, gen: torch.Generator) -> list[Check]:
    """Where the rows do not sum to 1, b_V^h is no longer a constant write."""
    sig = layer(s.x, s.original, "sigmoid")  # (B, T, d_model)
    sig_folded = layer(s.x, s.bias_folded, "sigmoid")  # (B, T, d_model)
    # A gate after attention (sigmoid of the residual, per head and query) scales b_V^h too.
    cfg = s.cfg
    w_gate = attn.randn((cfg.d_model, cfg.n_heads), gen, DTYPE) / cfg.d_model**0.5  # (d, h)
    gate = torch.sigmoid(s.x @ w_gate)  # (B, T, n_heads)

    # Bar: b_V^h is as large as the values themselves here, so mis-scaling it by a factor far
    # from 1 (row sums of sigmoid weights grow with the position; gates average 0.5) moves the
    # output by a sizeable fraction.
    return [
        harness.at_least(
            "sigmoid attention: folded vs unfolded value bias, rel. error",
            harness.relative_error(sig_folded, sig),
            0.1,
            kind=SANITY,
            bar=harness.RANDOM_DRAW,
        ),
        harness.at_least(
            "gate after attention: folded vs unfolded value bias, rel. error",
            harness.relative_error(
                layer(s.x, s.bias_folded, gate=gate), layer(s.x, s.original, gate=gate)
            ),
            0.1,
            kind=SANITY,
            bar=harness.RANDOM_DRAW,
        ),
    ]


def notes(cfg: attn.Sizes) -> list[str]:
    rtol, atol = harness.tolerance(DTYPE, cfg.d_model)
    return [
        "Both folds are exact in real arithmetic; in float32 they agree to rounding "
        f"(assert_close defaults widened by sqrt(d_model/64): rtol={rtol:.2g}, atol={atol:.2g}).",
        "LayerNorm's normalisation itself does not fold: "
        "it depends on the input (mean and standard deviation). Only its affine part moves into the weights.",
    ]


def run(scale: str = "small", device: str | DeviceChoice = "cpu", seed: int = 0) -> Report:
    return harness.run_module(__name__, scale, device, seed)
