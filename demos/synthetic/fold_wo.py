"""fold-wo: W_O folds into the value side of its own heads, never into the next layer.

Within the layer, head h writes A_h (x W_V^h) W_O^h = A_h (x (W_V^h W_O^h)): associativity lets
W_O^h join W_V^h as one d_model x d_model value-output matrix per head (the attention pattern A_h
does not depend on V). Across the layer boundary the next layer reads
LayerNorm(residual + concat(z) @ W_O): only the attention part went through W_O, so a W_O moved
into the next layer's W_Q would also act on the residual (and LayerNorm sits in between).

Here the residual entering the layer is x itself and the attention reads x directly (no pre-LN),
which keeps the algebra visible; the next layer's LayerNorm has no affine parameters.
"""

from __future__ import annotations

from dataclasses import dataclass

from prep.demos import harness
from prep.demos._torch import torch
from prep.demos.harness import IDENTITY, MEASUREMENT, Check, DeviceChoice, Report
from prep.demos.synthetic import attention as attn

NAME = "fold-wo"
DTYPE = torch.float32
CONTRAST_LABEL = "no residual add and no LayerNorm"
SCALES = attn.standard_scales(large_seq_len=1024)
# The fold, the parameter counts and the contrast's associativity are algebra; that moving W_O
# past the residual add and LayerNorm changes the next layer's queries is measured on random
# weights (it would not with W_O = I, or with a tiny W_O).
CHECK_KINDS = {IDENTITY: 4, MEASUREMENT: 2}


@dataclass
class Setup:
    cfg: attn.Sizes
    x: torch.Tensor  # (B, T, d_model) the layer input, also the residual stream
    w: attn.Weights  # W_Q, W_K, W_V: (n_heads, d_model, d_head); W_O: (n_heads, d_head, d_model)
    W_VO: torch.Tensor  # (n_heads, d_model, d_model) folded value-output matrices W_V^h W_O^h
    W_Q_next: torch.Tensor  # (d_model, d_model) the next layer's query projection (all heads)
    delta: torch.Tensor  # (B, T, d_model) a shift moved from the residual into the head outputs


def fold(w_v: torch.Tensor, w_o: torch.Tensor) -> torch.Tensor:
    return torch.einsum("hmk,hkn->hmn", w_v, w_o)  # (n_heads, d_model, d_model)


def build(cfg: attn.Sizes, device: torch.device, gen: torch.Generator) -> Setup:
    x = attn.random_inputs(cfg, gen, DTYPE)  # (B, T, d_model)
    w = attn.random_weights(cfg, gen, DTYPE)
    w_q_next = attn.randn((cfg.d_model, cfg.d_model), gen, DTYPE) / cfg.d_model**0.5  # (d, d)
    delta = attn.random_inputs(cfg, gen, DTYPE)  # (B, T, d_model)
    return Setup(cfg, x, w, fold(w.W_V, w.W_O), w_q_next, delta)


def counterexample(cfg: attn.Sizes, device: torch.device, gen: torch.Generator) -> Setup:
    """Fold pairs W_V^h with the next head's W_O, and W_O = identity (which does fold across)."""
    setup = build(cfg, device, gen)
    setup.W_VO = fold(setup.w.W_V, setup.w.W_O.roll(1, 0))  # (n_heads, d_model, d_model)
    setup.w.W_O = attn.identity_w_o(cfg, device, DTYPE)  # (n_heads, d_head, d_model)
    return setup


def folded_output(x: torch.Tensor, w: attn.Weights, w_vo: torch.Tensor) -> torch.Tensor:
    """Per head: values of width d_model (x W_VO^h), same attention, then sum over heads."""
    q = torch.einsum("btm,hmd->bhtd", x, w.W_Q)  # (B, n_heads, T, d_head)
    k = torch.einsum("btm,hmd->bhtd", x, w.W_K)  # (B, n_heads, T, d_head)
    v = torch.einsum("btm,hmn->bhtn", x, w_vo)  # (B, n_heads, T, d_model)
    z = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B,h,T,d)
    return z.sum(1)  # (B, T, d_model)


def next_queries(resid: torch.Tensor, w_q: torch.Tensor) -> torch.Tensor:
    """The next layer's queries: LayerNorm (no affine) then W_Q."""
    normed = torch.nn.functional.layer_norm(resid, resid.shape[-1:])  # (B, T, d_model)
    return normed @ w_q  # (B, T, d_model)


def flops(cfg: attn.Sizes) -> tuple[int, int]:
    """Multiply-add FLOPs (2 per MAC) for one sequence: V proj + A@V + O proj vs folded."""
    t, d, h = cfg.seq_len, cfg.d_model, cfg.n_heads
    original = 2 * t * d * d + 2 * t * t * d + 2 * t * d * d  # x@W_V, A@V over heads, concat@W_O
    folded = 2 * h * t * d * d + 2 * h * t * t * d  # x@W_VO^h, A_h@V'_h with d_model-wide V'
    return original, folded


def check(setup: Setup) -> list[Check]:
    cfg, w, x = setup.cfg, setup.w, setup.x
    rtol, atol = harness.tolerance(DTYPE, cfg.d_model)
    z = attn.head_outputs(x, w.W_Q, w.W_K, w.W_V)  # (B, T, n_heads, d_head)
    out = attn.project(z, w.W_O)  # (B, T, d_model)
    c = attn.concat(z)  # (B, T, d_model) before W_O
    true_q = next_queries(x + out, setup.W_Q_next)  # (B, T, d_model)
    naive_q = next_queries(x + c, attn.flat(w.W_O) @ setup.W_Q_next)  # (B, T, d_model)
    # Move delta from the residual into the head outputs: the sum x + c is the same, so a next
    # layer that sees only LayerNorm(x + c) cannot tell the two apart; the true model can.
    x2, c2 = x - setup.delta, c + setup.delta  # (B, T, d_model) each
    true_q2 = next_queries(x2 + c2 @ attn.flat(w.W_O), setup.W_Q_next)  # (B, T, d_model)
    n_folded = setup.W_VO.numel()
    n_original = w.W_V.numel() + w.W_O.numel()
    return [
        harness.close(
            "folded W_V^h W_O^h output  vs  attention then W_O",
            folded_output(x, w, setup.W_VO),
            out,
            rtol=rtol,
            atol=atol,
            detail="each head's folded matrix must be ITS OWN W_V^h times ITS OWN W_O^h "
            "(W_O[h] = rows h*d_head:(h+1)*d_head of the flattened W_O)",
            kind=IDENTITY,
        ),
        harness.equals(
            f"parameters folded: n_heads*d_model^2 = {cfg.n_heads * cfg.d_model**2}",
            n_folded,
            cfg.n_heads * cfg.d_model**2,
            kind=IDENTITY,
        ),
        harness.equals(
            f"parameters in W_V + W_O: 2*d_model^2 = {2 * cfg.d_model**2}",
            n_original,
            2 * cfg.d_model**2,
            kind=IDENTITY,
        ),
        harness.at_least(
            "next layer: LN(x + concat) @ (W_O W_Q)  vs  LN(x + concat @ W_O) @ W_Q, rel. error",
            harness.relative_error(naive_q, true_q),
            0.1,
            "if this is small, W_O is (close to) the identity; otherwise the residual x also "
            "gets multiplied by W_O when W_O is moved past the add",
            kind=MEASUREMENT,
        ),
        harness.at_least(
            "(x - delta, concat + delta) vs (x, concat): true next-layer queries, rel. diff",
            harness.relative_error(true_q2, true_q),
            0.1,
            "these two inputs have the same residual sum without W_O, so no weights of the "
            "next layer can produce both query sets (x + concat is the same for both: "
            "x - delta + concat + delta); that needs W_O != I",
            kind=MEASUREMENT,
        ),
    ]


def contrast(setup: Setup, gen: torch.Generator) -> list[Check]:
    """No residual add and no LayerNorm: then W_O does fold into the next layer's W_Q."""
    w = setup.w
    z = attn.head_outputs(setup.x, w.W_Q, w.W_K, w.W_V)  # (B, T, n_heads, d_head)
    c = attn.concat(z)  # (B, T, d_model)
    rtol, atol = harness.tolerance(DTYPE, 2 * setup.cfg.d_model)  # two chained reductions
    return [
        harness.close(
            "no residual, no LN: (concat @ W_O) @ W_Q  vs  concat @ (W_O W_Q)",
            (c @ attn.flat(w.W_O)) @ setup.W_Q_next,
            c @ (attn.flat(w.W_O) @ setup.W_Q_next),
            rtol=rtol,
            atol=atol,
            kind=IDENTITY,
        )
    ]


def notes(cfg: attn.Sizes) -> list[str]:
    original, folded = flops(cfg)
    return [
        f"Cost of folding: parameters {2 * cfg.d_model**2:,} -> "
        f"{cfg.n_heads * cfg.d_model**2:,} ({cfg.n_heads / 2:g}x); FLOPs per sequence of "
        f"{cfg.seq_len} tokens for V, A@V and O: {original:.3g} -> {folded:.3g} "
        f"({folded / original:.1f}x), because every head now carries d_model-wide values.",
        "The fold is exact in real arithmetic; in float32 it agrees to rounding "
        "(tolerance widened by sqrt(d_model/64)).",
    ]


def run(scale: str = "small", device: str | DeviceChoice = "cpu", seed: int = 0) -> Report:
    return harness.run_module(__name__, scale, device, seed)
