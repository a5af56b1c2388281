"""importance-reparam: W_O column norms are not a reparametrization-invariant importance score.

The deck's `head_importance` scores head h by the norm of nn.Linear's column block
W_o.weight[:, h*d_head:(h+1)*d_head] (= the per-head block W_O[h], transposed). Since softmax
weights do not depend on V, z_h is linear in W_V^h, and (c W_V^h)(W_O^h / c) = W_V^h W_O^h: the
layer computes the same function while that score moves by 1/c. The OV circuit W_V^h W_O^h is the
product that the function depends on, so its norm does not move.
"""

from __future__ import annotations

from dataclasses import dataclass

from prep.demos import harness
from prep.demos._torch import torch
from prep.demos.harness import IDENTITY, MEASUREMENT, Check, DeviceChoice, Report
from prep.demos.synthetic import attention as attn

NAME = "importance-reparam"
DTYPE = torch.float32
CONTRAST_LABEL = "W_O^h scaled alone, a real change"
SCALES = attn.standard_scales()
HEAD = 2  # the head being reparametrized
C = 10.0  # W_V^h * C, W_O^h / C
RATIO_RTOL = 1e-5  # ratios of norms in float32
# The three checks and the contrast's norm ratio are algebra (true for any weights); how much the
# output moves when only W_O^h shrinks is measured on random weights. real-importance measures
# what these identities mean on a pretrained model.
CHECK_KINDS = {IDENTITY: 4, MEASUREMENT: 1}


@dataclass
class Setup:
    cfg: attn.Sizes
    x: torch.Tensor  # (B, T, d_model)
    before: attn.Weights  # W_V: (n_heads, d_model, d_head); W_O: (n_heads, d_head, d_model)
    after: attn.Weights  # the same with W_V^h * c and W_O^h / c


def reparametrize(w: attn.Weights, head: int, c_v: float, c_o: float) -> attn.Weights:
    w_v = w.W_V.clone()  # (n_heads, d_model, d_head)
    w_o = w.W_O.clone()  # (n_heads, d_head, d_model)
    w_v[head] *= c_v
    w_o[head] *= c_o
    return attn.Weights(w.W_Q, w.W_K, w_v, w_o)


def build(cfg: attn.Sizes, device: torch.device, gen: torch.Generator) -> Setup:
    x = attn.random_inputs(cfg, gen, DTYPE)  # (B, T, d_model)
    w = attn.random_weights(cfg, gen, DTYPE)
    return Setup(cfg, x, w, reparametrize(w, HEAD, C, 1 / C))


def counterexample(cfg: attn.Sizes, device: torch.device, gen: torch.Generator) -> Setup:
    """W_V^h scaled by c but W_O^h left alone: the 'compensation' forgotten."""
    setup = build(cfg, device, gen)
    setup.after = reparametrize(setup.before, HEAD, C, 1.0)
    return setup


def fro(x: torch.Tensor) -> torch.Tensor:
    """Frobenius norm summed in two stages (rows, then row norms).

    One float32 reduction over 16M entries drifts by ~1e-4 relative on CPU, which would swamp a
    1e-5 ratio tolerance at d_model 4096; two 4096-long stages stay near float32 rounding.
    """
    return x.norm(dim=-1).norm()  # ()


def head_importance(w_o: torch.Tensor) -> torch.Tensor:
    """The deck's score, on nn.Linear's (out, in) weight: column block norms per head."""
    n_heads, d_head, d_model = w_o.shape
    weight = attn.flat(w_o).T  # (d_model, n_heads*d_head) as nn.Linear stores W_o
    return torch.stack(
        [fro(weight[:, h * d_head : (h + 1) * d_head]) for h in range(n_heads)]
    )  # (n_heads,)


def ov_norm(w: attn.Weights, head: int) -> torch.Tensor:
    """||W_V^h W_O^h||_F of the d_model x d_model OV circuit."""
    return fro(w.W_V[head] @ w.W_O[head])  # () from (d_model, d_model)


def _output(x: torch.Tensor, w: attn.Weights) -> torch.Tensor:
    z = attn.head_outputs(x, w.W_Q, w.W_K, w.W_V)  # (B, T, n_heads, d_head)
    return attn.project(z, w.W_O)  # (B, T, d_model)


def _ratio_check(name: str, ratio: torch.Tensor, target: float, detail: str) -> Check:
    return harness.approx(name, ratio, target, rtol=RATIO_RTOL, detail=detail, kind=IDENTITY)


def check(setup: Setup) -> list[Check]:
    rtol, atol = harness.tolerance(DTYPE, setup.cfg.d_model)
    imp_before = head_importance(setup.before.W_O)  # (n_heads,)
    imp_after = head_importance(setup.after.W_O)  # (n_heads,)
    return [
        harness.close(
            f"output after W_V^{HEAD}*c, W_O^{HEAD}/c  vs  before",
            _output(setup.x, setup.after),
            _output(setup.x, setup.before),
            rtol=rtol,
            atol=atol,
            detail="the two factors must cancel: scale W_V^h by c AND W_O^h by 1/c, same head",
            kind=IDENTITY,
        ),
        _ratio_check(
            f"W_O column-norm importance of head {HEAD}: after / before  (1/c = {1 / C:g})",
            imp_after[HEAD] / imp_before[HEAD],
            1 / C,
            "the importance score reads only W_O, so it must move by exactly the factor on W_O^h",
        ),
        _ratio_check(
            f"||W_V^{HEAD} W_O^{HEAD}||_F: after / before",
            ov_norm(setup.after, HEAD) / ov_norm(setup.before, HEAD),
            1.0,
            "the OV circuit is the product the output depends on; c and 1/c cancel in it",
        ),
    ]


def contrast(setup: Setup, gen: torch.Generator) -> list[Check]:
    """W_O^h / c alone, without the compensating W_V^h * c: now the head really is weaker."""
    changed = reparametrize(setup.before, HEAD, 1.0, 1 / C)
    return [
        harness.at_least(
            f"only W_O^{HEAD} / c: relative change of the output",
            harness.relative_error(_output(setup.x, changed), _output(setup.x, setup.before)),
            0.01,
            kind=MEASUREMENT,
        ),
        _ratio_check(
            f"only W_O^{HEAD} / c: ||W_V W_O||_F after / before  (1/c = {1 / C:g})",
            ov_norm(changed, HEAD) / ov_norm(setup.before, HEAD),
            1 / C,
            "",
        ),
    ]


def notes(cfg: attn.Sizes) -> list[str]:
    rtol, atol = harness.tolerance(DTYPE, cfg.d_model)
    return [
        f"Head h = {HEAD}, c = {C:g}. Output compared with rtol={rtol:.2g}, atol={atol:.2g}; "
        f"norm ratios with rtol={RATIO_RTOL:g}.",
        "Red flag: ranking heads by W_O norms alone. Score the OV circuit, or measure the "
        "effect of ablating the head.",
    ]


def run(scale: str = "small", device: str | DeviceChoice = "cpu", seed: int = 0) -> Report:
    return harness.run_module(__name__, scale, device, seed)
