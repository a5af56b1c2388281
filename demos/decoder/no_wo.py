"""no-wo: without W_O (or with a permutation W_O) nothing mixes between heads.

The sub-layer output is y = concat(z) @ W for W in {none, identity, permutation, dense}, with W the
(in, out) = (d_model, d_model) matrix used as concat @ W (head h's rows are h*d_head:(h+1)*d_head).
The Jacobian dy/dz_h is measured by reverse-mode autograd (torch.func.jacrev), never assumed.

Jacobian size: for P token positions it has (P*d_model) x (P*n_heads*d_head) entries. At small
scale P is every position of one sequence, so cross-token entries are measured too. At large scale
a full Jacobian (T*d_model)^2 would be 2^46 entries, so P is a few positions: y is linear in z and
acts token by token, so each token's block is the same matrix and the few measured positions (with
their cross-token blocks) are representative.
"""

from __future__ import annotations

from dataclasses import dataclass

from prep.demos import harness
from prep.demos._torch import torch
from prep.demos.decoder import decoder
from prep.demos.harness import IDENTITY, SANITY, Check, DeviceChoice, Report
from prep.demos.synthetic import attention as attn

NAME = "no-wo"
DTYPE = torch.float32
CONTRAST_LABEL = "a dense W_O on the same head outputs"
# Jacobians of no/identity/permutation W_O and the dense contrast are algebra; one measured
# spread per layer of the shipped decoder (2 layers, whatever the scale).
# The trained-W_O spread is `sanity`: the decoder's W_O at initialisation spreads its heads as
# much (0.75 expected, 0.71-0.77 trained), so it cannot tell trained from untrained.
CHECK_KINDS = {IDENTITY: 6, SANITY: 4}
# Generic facts of a random draw are sanity checks (DESIGN.md: "a random W_O writes off-slice").


@dataclass(frozen=True)
class Config(attn.Sizes):
    jacobian_tokens: int = 16  # token positions whose Jacobian is built (all of them when small)


SCALES = {
    "small": Config(batch=1, seq_len=16, d_model=64, n_heads=8, jacobian_tokens=16),
    "large": Config(batch=1, seq_len=2048, d_model=4096, n_heads=32, jacobian_tokens=2),
}


@dataclass
class Setup:
    cfg: Config
    z: torch.Tensor  # (P, n_heads, d_head) head outputs at the measured positions
    mix: torch.Tensor | None  # (d_model, d_model) the "no W_O" layer's matrix; None = concat only
    perm: torch.Tensor  # (d_model, d_model) a permutation matrix used as W_O
    trained: list[torch.Tensor]  # per layer (n_heads, d_head, d_model): the shipped decoder's W_O


# Pass bar for the trained decoder (argued before the run): nothing in training prefers the
# residual basis the concat happens to use, so a trained W_O should spread each head like a random
# one, which puts 1 - 1/n_heads of a head's squared norm outside its own slice (0.75 at 4 heads).
# A W_O that merely weighted or permuted heads would put 0 there. Bar: every head >= 0.5.
SPREAD_BAR = 0.5


def outside_share(w_o: torch.Tensor) -> torch.Tensor:
    """Per head, the share of ||W_O[h]||_F^2 in output dims outside slice h: (n_heads,)."""
    n_heads, dh, d_model = w_o.shape
    head_of_dim = torch.arange(d_model, device=w_o.device) // dh  # (d_model,)
    own = head_of_dim[None, :] == torch.arange(n_heads, device=w_o.device)[:, None]  # (h, d)
    sq = (w_o**2).sum(1)  # (n_heads, d_model) squared norm per output dim
    return (sq * ~own).sum(-1) / sq.sum(-1)  # (n_heads,)


def trained_w_o(device: torch.device) -> list[torch.Tensor]:
    model_cfg, params, _ = decoder.load(device=device)
    return [params[f"blocks.{layer}.W_O"] for layer in range(model_cfg.n_layers)]


def build(cfg: Config, device: torch.device, gen: torch.Generator) -> Setup:
    _, _, z = attn.random_layer(cfg, gen, DTYPE)  # z: (B, T, n_heads, d_head)
    z = z[0, : cfg.jacobian_tokens]  # (P, n_heads, d_head)
    order = torch.randperm(cfg.d_model, generator=gen, device=device)  # (d_model,)
    perm = torch.eye(cfg.d_model, device=device, dtype=DTYPE)[order]  # (d_model, d_model)
    return Setup(cfg, z, None, perm, trained_w_o(device))


def counterexample(cfg: Config, device: torch.device, gen: torch.Generator) -> Setup:
    """A dense W_O where the claim expects none, and a dense one in place of the permutation; the
    trained W_O replaced by an identity (a decoder that never mixed)."""
    setup = build(cfg, device, gen)
    setup.mix = attn.flat(attn.dense_w_o(cfg, gen, DTYPE))  # (d_model, d_model)
    setup.perm = attn.flat(attn.dense_w_o(cfg, gen, DTYPE))  # (d_model, d_model)
    setup.trained = [torch.eye(w.shape[-1], dtype=w.dtype).reshape(w.shape) for w in setup.trained]
    return setup


def jacobians(z: torch.Tensor, w: torch.Tensor | None) -> torch.Tensor:
    """dy/dz for y = concat(z) @ w (or concat(z) when w is None), laid out per head.

    Returns J with J[h, p, m, q, k] = d y[p, m] / d z[q, h, k]: (n_heads, P, d_model, P, d_head).
    """

    def layer(z_: torch.Tensor) -> torch.Tensor:
        c = attn.concat(z_)  # (P, n_heads*d_head)
        return c if w is None else c @ w  # (P, d_model)

    jac = torch.func.jacrev(layer)(z)  # (P, d_model, P, n_heads, d_head)
    return jac.permute(3, 0, 1, 2, 4)  # (n_heads, P, d_model, P, d_head)


def _outside_own_slice(jac: torch.Tensor, d_head: int) -> torch.Tensor:
    """Every entry of J_h except output dims in slice h at the same token: should be all zero."""
    n_heads, n_pos, d_model = jac.shape[:3]
    dev = jac.device
    head_of_dim = torch.arange(d_model, device=dev) // d_head  # (d_model,)
    own_slice = head_of_dim[None, :] == torch.arange(n_heads, device=dev)[:, None]  # (h, d)
    same_token = torch.eye(n_pos, dtype=torch.bool, device=dev)  # (P, P)
    keep = ~(own_slice[:, None, :, None, None] & same_token[None, :, None, :, None])  # (h,P,d,P,1)
    return jac[keep.expand_as(jac)]  # (entries outside the own slice,)


def _slice_block_minus_identity(jac: torch.Tensor, d_head: int) -> torch.Tensor:
    """J_h restricted to slice h at the same token, minus the identity: all 0 without W_O."""
    eye = torch.eye(d_head, device=jac.device, dtype=jac.dtype)  # (d_head, d_head)
    blocks = [
        jac[h, p, h * d_head : (h + 1) * d_head, p] - eye  # (d_head, d_head)
        for h in range(jac.shape[0])
        for p in range(jac.shape[1])
    ]
    return torch.stack(blocks)  # (n_heads*P, d_head, d_head)


def _mixing_counts(jac: torch.Tensor) -> tuple[int, int, int]:
    """(min and max output dims a head reaches, max head coordinates feeding one output dim)."""
    same_token = torch.stack([jac[:, p, :, p] for p in range(jac.shape[1])], 1)  # (h,P,d,dh)
    nonzero = same_token != 0  # (n_heads, P, d_model, d_head)
    dims_per_head = nonzero.any(-1).any(1).sum(-1)  # (n_heads,)
    feeding = nonzero.sum(dim=(0, 3)).amax()  # ()  head coordinates feeding one (token, dim)
    return int(dims_per_head.min()), int(dims_per_head.max()), int(feeding)


def check(setup: Setup) -> list[Check]:
    cfg = setup.cfg
    dh = cfg.d_head
    jac_none = jacobians(setup.z, setup.mix)  # (n_heads, P, d_model, P, d_head)
    eye = torch.eye(cfg.d_model, device=setup.z.device, dtype=DTYPE)  # (d_model, d_model)
    jac_eye = jacobians(setup.z, eye)  # (n_heads, P, d_model, P, d_head)
    jac_perm = jacobians(setup.z, setup.perm)  # (n_heads, P, d_model, P, d_head)
    lo, hi, feeding = _mixing_counts(jac_perm)
    return [
        harness.exactly_zero(
            "no W_O: max |dy/dz_i| outside slice i (all heads, all token pairs)",
            _outside_own_slice(jac_none, dh),
            "without W_O the output is concat(z): y[h*d_head + k] is z_h[k] and nothing else; a "
            "nonzero here means some matrix mixed the heads after the concat",
        ),
        harness.exactly_zero(
            "no W_O: max |dy/dz_i - I| inside slice i",
            _slice_block_minus_identity(jac_none, dh),
            "inside its own slice the concat copies head i unchanged, so the block is I",
        ),
        harness.exactly_zero(
            "identity W_O: max |J - J(no W_O)|",
            jac_eye - jac_none,
            "an identity W_O is the same map as no W_O",
        ),
        harness.equals(
            "permutation W_O: fewest output dims any head reaches",
            lo,
            dh,
            "a permutation moves head i's d_head coordinates to d_head other dims, no more",
        ),
        harness.equals(
            "permutation W_O: most output dims any head reaches",
            hi,
            dh,
            "reaching more than d_head dims means W_O spreads a head: it is not a permutation",
        ),
        harness.equals(
            "permutation W_O: most head coordinates feeding one output dim",
            feeding,
            1,
            "each output dim of a permutation copies exactly one input coordinate; 2+ is mixing",
        ),
        *[
            harness.at_least(
                f"trained decoder layer {layer}: smallest share of a head's ||W_O[h]||^2 outside "
                f"its own slice (per head: {', '.join(f'{float(v):.2f}' for v in outside_share(w))})",
                outside_share(w).min(),
                SPREAD_BAR,
                "a trained W_O that kept each head in its own slice would be doing what no W_O "
                "does; a share near 0 means the decoder learned no mixing",
                kind=SANITY,
                bar="a random dense W_O puts 1 - 1/n_heads there (0.75 at 4 heads), the "
                "decoder's at initialisation too: this checks the set-up, not what training did",
            )
            for layer, w in enumerate(setup.trained)
        ],
    ]


def contrast(setup: Setup, gen: torch.Generator) -> list[Check]:
    cfg = setup.cfg
    dense = attn.flat(attn.dense_w_o(cfg, gen, DTYPE))  # (d_model, d_model)
    lo, _, feeding = _mixing_counts(jacobians(setup.z, dense))
    return [
        harness.equals(
            "dense W_O: fewest output dims any head reaches",
            lo,
            cfg.d_model,
            kind=SANITY,
            bar=harness.RANDOM_DRAW,
        ),
        harness.equals(
            "dense W_O: most head coordinates feeding one output dim",
            feeding,
            cfg.d_model,
            kind=SANITY,
            bar=harness.RANDOM_DRAW,
        ),
    ]


def notes(cfg: Config) -> list[str]:
    return [
        f"Jacobians by reverse-mode autograd (torch.func.jacrev) at {cfg.jacobian_tokens} "
        f"of {cfg.seq_len} token positions, cross-token entries included; the layer after "
        "the heads is linear and token-wise, so every token's block is the same matrix.",
        "Downstream layers can still read every slice; what is missing without W_O is two "
        "heads writing to the same direction.",
        "Sanity, not evidence about training: the shipped decoder's trained W_O "
        "(demos/decoder/weights/decoder.*) spreads each head outside its slice as any dense W_O does, "
        f"its initialisation included; bar {SPREAD_BAR:g}, random dense expectation "
        "1 - 1/n_heads.",
    ]


def run(scale: str = "small", device: str | DeviceChoice = "cpu", seed: int = 0) -> Report:
    return harness.run_module(__name__, scale, device, seed)
