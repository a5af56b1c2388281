"""head-weighting: scaling one head is W_O's to do, but W_V^i can do it just as well.

Head i's W_O block is W_O[i] of the per-head [n_heads, d_head, d_model] storage: rows
i*d_head:(i+1)*d_head of the flattened (in, out) matrix, and the columns
weight[:, i*d_head:(i+1)*d_head] of nn.Linear's (out, in) weight. Scaling the wrong axis (nn.Linear
rows i*d_head:(i+1)*d_head, i.e. output dims) rescales every head's write into those dims instead.

Mean-ablation replaces head i's output z_i by its mean over the data (here: every batch element and
token). Head i enters the output only as z_i @ W_O[i], so that is the same as zeroing W_O[i] and
adding the constant mean(z_i) @ W_O[i] to the output bias.
"""

from __future__ import annotations

from dataclasses import dataclass

from prep.demos import harness
from prep.demos._torch import torch
from prep.demos.harness import IDENTITY, MEASUREMENT, Check, DeviceChoice, Report
from prep.demos.synthetic import attention as attn

NAME = "head-weighting"
DTYPE = torch.float32
CONTRAST_LABEL = "mixing, which per-head weights cannot imitate"
# The four rescaling/ablation equalities are algebra; how far the best block-diagonal map
# misses a dense layer (the contrast) is measured on random weights.
CHECK_KINDS = {IDENTITY: 4, MEASUREMENT: 1}
SCALES = attn.standard_scales()
HEAD = 1  # the head being weighted
SCALE_A = 0.3  # the weight a


@dataclass
class Setup:
    cfg: attn.Sizes
    x: torch.Tensor  # (B, T, d_model)
    w: attn.Weights  # W_Q, W_K, W_V: (n_heads, d_model, d_head); W_O: (n_heads, d_head, d_model)
    scaled_w_o: torch.Tensor  # (n_heads*d_head, d_model) flat W_O with head HEAD's block * a
    zeroed_w_o: torch.Tensor  # (n_heads*d_head, d_model) flat W_O with head HEAD's block * 0
    mean_bias: torch.Tensor  # (d_model,) output bias that mean-ablates head HEAD with zeroed_w_o


def scale_head_block(w_flat: torch.Tensor, head: int, d_head: int, a: float) -> torch.Tensor:
    """Rows head*d_head:(head+1)*d_head of the (in, out) matrix = head's block."""
    out = w_flat.clone()  # (n_heads*d_head, d_model)
    out[head * d_head : (head + 1) * d_head] *= a
    return out


def scale_output_dims_bug(w_flat: torch.Tensor, head: int, d_head: int, a: float) -> torch.Tensor:
    """The axis mix-up: scales output dims head*d_head:(head+1)*d_head, i.e. nn.Linear's rows."""
    out = w_flat.clone()  # (n_heads*d_head, d_model)
    out[:, head * d_head : (head + 1) * d_head] *= a
    return out


def build(cfg: attn.Sizes, device: torch.device, gen: torch.Generator) -> Setup:
    x, w, z = attn.random_layer(cfg, gen, DTYPE)  # z: (B, T, n_heads, d_head)
    w_flat = attn.flat(w.W_O)  # (n_heads*d_head, d_model)
    return Setup(
        cfg,
        x,
        w,
        scale_head_block(w_flat, HEAD, cfg.d_head, SCALE_A),
        scale_head_block(w_flat, HEAD, cfg.d_head, 0.0),
        mean_head_output(z, HEAD) @ w.W_O[HEAD],  # (d_model,)
    )


def mean_head_output(z: torch.Tensor, head: int) -> torch.Tensor:
    """mean(z_head) over the data: every batch element and token."""
    return z[:, :, head].mean((0, 1))  # (d_head,)


def counterexample(cfg: attn.Sizes, device: torch.device, gen: torch.Generator) -> Setup:
    setup = build(cfg, device, gen)
    w_flat = attn.flat(setup.w.W_O)  # (n_heads*d_head, d_model)
    setup.scaled_w_o = scale_output_dims_bug(w_flat, HEAD, cfg.d_head, SCALE_A)
    setup.zeroed_w_o = scale_output_dims_bug(w_flat, HEAD, cfg.d_head, 0.0)
    return setup


def without_head(x: torch.Tensor, w: attn.Weights, head: int) -> torch.Tensor:
    """The layer rebuilt with n_heads - 1 heads: head `head` removed from every weight."""
    keep = [h for h in range(w.W_Q.shape[0]) if h != head]
    z = attn.head_outputs(x, w.W_Q[keep], w.W_K[keep], w.W_V[keep])  # (B, T, n_heads-1, d_head)
    return attn.project(z, w.W_O[keep])  # (B, T, d_model)


def check(setup: Setup) -> list[Check]:
    cfg, w, x = setup.cfg, setup.w, setup.x
    rtol, atol = harness.tolerance(DTYPE, cfg.d_model)
    z = attn.head_outputs(x, w.W_Q, w.W_K, w.W_V)  # (B, T, n_heads, d_head)
    out = attn.project(z, w.W_O)  # (B, T, d_model)
    write_i = z[:, :, HEAD] @ w.W_O[HEAD]  # (B, T, d_model) head i's write
    out_scaled = attn.concat(z) @ setup.scaled_w_o  # (B, T, d_model)
    out_zeroed = attn.concat(z) @ setup.zeroed_w_o  # (B, T, d_model)
    z_mean = z.clone()  # (B, T, n_heads, d_head)
    z_mean[:, :, HEAD] = mean_head_output(z, HEAD)  # head i's output replaced by its mean
    w_v_scaled = w.W_V.clone()  # (n_heads, d_model, d_head)
    w_v_scaled[HEAD] *= SCALE_A
    z_v = attn.head_outputs(x, w.W_Q, w.W_K, w_v_scaled)  # (B, T, n_heads, d_head)
    out_v = attn.project(z_v, w.W_O)  # (B, T, d_model) W_O untouched
    axis_hint = (
        "head i's block is rows i*d_head:(i+1)*d_head of the (in, out) matrix, i.e. nn.Linear "
        "weight[:, i*d_head:(i+1)*d_head]; scaling weight's rows rescales output dims of every "
        "head instead"
    )
    return [
        harness.close(
            f"W_O[{HEAD}] * a: output  vs  output - (1 - a) * head {HEAD}'s write",
            out_scaled,
            out - (1 - SCALE_A) * write_i,
            rtol=rtol,
            atol=atol,
            detail=axis_hint,
        ),
        harness.close(
            f"W_O[{HEAD}] * 0: output  vs  the layer with head {HEAD} removed",
            out_zeroed,
            without_head(x, w, HEAD),
            rtol=rtol,
            atol=atol,
            detail=axis_hint,
        ),
        harness.close(
            f"W_O[{HEAD}] * 0 + bias mean(z_{HEAD}) @ W_O[{HEAD}]  vs  z_{HEAD} replaced by its mean",
            out_zeroed + setup.mean_bias,
            attn.project(z_mean, w.W_O),
            rtol=rtol,
            atol=atol,
            detail="zeroing the block alone is zero-ablation: it also removes head i's average "
            "write; mean-ablation puts that constant back as the bias mean(z_i) @ W_O[i] (the "
            "head's own block, with the original, un-zeroed weights)",
        ),
        harness.close(
            f"W_V^{HEAD} * a (W_O untouched)  vs  W_O[{HEAD}] * a",
            out_v,
            out_scaled,
            rtol=rtol,
            atol=atol,
            detail="softmax weights do not depend on V, so head i's output z_i = A_i x W_V^i is "
            "linear in W_V^i and the factor a passes straight through to its write",
        ),
    ]


def best_block_diagonal_fit(z: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The best output a block-diagonal W_O can give: per head, the least-squares d_head x d_head
    map B_h from z_h to target slice h (which W_V^h could absorb, so this is also "no W_O with a
    learnable W_V"). z (B, T, n_heads, d_head), target (B, T, d_model) -> fit (B, T, d_model)."""
    n_heads, dh = z.shape[2], z.shape[3]
    fit = torch.empty_like(target)  # (B, T, d_model)
    for h in range(n_heads):
        zh = z[:, :, h].reshape(-1, dh)  # (B*T, d_head)
        th = target[..., h * dh : (h + 1) * dh].reshape(-1, dh)  # (B*T, d_head)
        b_h = torch.linalg.lstsq(zh.double(), th.double()).solution.to(z.dtype)  # (dh, dh)
        fit[..., h * dh : (h + 1) * dh] = (zh @ b_h).reshape(target.shape[:-1] + (dh,))
    return fit


def contrast(setup: Setup, gen: torch.Generator) -> list[Check]:
    """What per-head maps cannot do: imitate a dense W_O's mixing. The fair rival to W_O is not one
    scalar per head but the best block-diagonal map (a learnable W_V can absorb any B_h)."""
    w, x = setup.w, setup.x
    z = attn.head_outputs(x, w.W_Q, w.W_K, w.W_V)  # (B, T, n_heads, d_head)
    target = attn.project(z, w.W_O)  # (B, T, d_model) dense W_O mixes the heads
    fit = best_block_diagonal_fit(z, target)  # (B, T, d_model)
    n = setup.cfg.n_heads
    return [
        harness.at_least(
            "best block-diagonal W_O (least squares per head) fitting a dense W_O layer: "
            f"relative error (independent heads: sqrt(1 - 1/{n}) = {(1 - 1 / n) ** 0.5:.3f})",
            harness.relative_error(fit, target),
            0.5,
            "slice h of a dense layer's output mixes every head; from z_h alone only head h's "
            "share can be fitted",
            kind=MEASUREMENT,
        )
    ]


def notes(cfg: attn.Sizes) -> list[str]:
    rtol, atol = harness.tolerance(DTYPE, cfg.d_model)
    return [
        f"Head i = {HEAD}, a = {SCALE_A}. Tolerance rtol={rtol:.2g}, atol={atol:.2g} "
        "(float32 assert_close defaults widened by sqrt(d_model/64)).",
        "So weighting alone is not W_O's unique job; what only W_O provides is mixing "
        "(see cross-head-mixing). It is still a natural place to learn the weights.",
        "Contrast: the best block-diagonal map (a d_head x d_head least-squares fit per head, "
        "which W_V could absorb) cannot reproduce a dense W_O's output. Pass bar 0.5, argued "
        "before the run: with independent heads slice h keeps only 1/n_heads of its variance "
        "from z_h, an error of sqrt(1 - 1/n_heads); correlated heads can lower it, not to 0.",
    ]


def run(scale: str = "small", device: str | DeviceChoice = "cpu", seed: int = 0) -> Report:
    return harness.run_module(__name__, scale, device, seed)
