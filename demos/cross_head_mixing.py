"""cross-head-mixing: only a W_O with off-diagonal blocks lets two heads share a direction.

Head h writes z_h @ W_O[h], so its write subspace is the row space of W_O[h] (d_head x d_model).
The cosines of the principal angles between two heads' write subspaces are the singular values of
Q_h^T Q_g, where Q_h is an orthonormal basis of that row space. With W_O[h]^T = Q_h R_h (reduced
QR), Q_h^T Q_g = R_h^{-T} (W_O[h] W_O[g]^T) R_g^{-1}. Computing it this way keeps a structural
zero exact: when W_O[h] W_O[g]^T is exactly 0 (disjoint supports), so is the cosine matrix, and its
largest singular value is 0.0, not rounding noise from a QR of columns with zero rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from prep.demos import attention as attn
from prep.demos import harness
from prep.demos._torch import torch
from prep.demos.harness import Check, DeviceChoice, Report

NAME = "cross-head-mixing"
DTYPE = torch.float32
CONTRAST_LABEL = "W_O without the shared direction"
SCALES = attn.standard_scales()
COSINE_ATOL = 1e-5  # float32: a cosine of 1 computes as 1 up to ~1e-6


@dataclass
class Setup:
    cfg: attn.Sizes
    z: torch.Tensor  # (B, T, n_heads, d_head)
    shared: torch.Tensor  # (n_heads, d_head, d_model) dense W_O; heads 0 and 1 share direction u
    u: torch.Tensor  # (d_model,) the shared unit direction
    none: torch.Tensor  # (n_heads, d_head, d_model) "no W_O", i.e. the identity in per-head blocks
    block_diag: torch.Tensor  # (n_heads, d_head, d_model)


def shared_direction_w_o(
    cfg: attn.Sizes, gen: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """A dense W_O whose heads 0 and 1 both write coordinate 0 along one unit direction u.

    Row 0 of W_O[0] and of W_O[1] is u; every other row of every head is random and then made
    orthogonal to u, so the output's component along u is exactly z_0[0] + z_1[0] in exact math.
    """
    u = attn.randn((cfg.d_model,), gen, DTYPE)  # (d_model,)
    u = u / u.norm()  # (d_model,)
    w_o = attn.dense_w_o(cfg, gen, DTYPE)  # (n_heads, d_head, d_model)
    w_o = w_o - (w_o @ u)[..., None] * u  # (n_heads, d_head, d_model) rows orthogonal to u
    w_o[0, 0] = u
    w_o[1, 0] = u
    return w_o, u


def build(cfg: attn.Sizes, device: torch.device, gen: torch.Generator) -> Setup:
    _, _, z = attn.random_layer(cfg, gen, DTYPE)  # z: (B, T, n_heads, d_head)
    shared, u = shared_direction_w_o(cfg, gen)
    none = attn.identity_w_o(cfg, device, DTYPE)  # (n_heads, d_head, d_model)
    return Setup(cfg, z, shared, u, none, attn.block_diagonal_w_o(cfg, gen, DTYPE))


def counterexample(cfg: attn.Sizes, device: torch.device, gen: torch.Generator) -> Setup:
    """Random dense matrices where the claim needs sharing, no W_O and block-diagonal."""
    setup = build(cfg, device, gen)
    setup.shared = attn.dense_w_o(cfg, gen, DTYPE)  # (n_heads, d_head, d_model)
    setup.none = attn.dense_w_o(cfg, gen, DTYPE)  # (n_heads, d_head, d_model)
    setup.block_diag = attn.dense_w_o(cfg, gen, DTYPE)  # (n_heads, d_head, d_model)
    return setup


def principal_cosines(w_o: torch.Tensor) -> torch.Tensor:
    """Largest cosine between the write subspaces of every pair of heads; diagonal set to 0.

    Returns (n_heads, n_heads). Needs each W_O[h] to have full row rank d_head.
    """
    n_heads, dh, _ = w_o.shape
    _, r = torch.linalg.qr(w_o.transpose(1, 2))  # R: (n_heads, d_head, d_head)
    eye = torch.eye(dh, device=w_o.device, dtype=w_o.dtype).expand(n_heads, dh, dh)  # (h,dh,dh)
    r_inv = torch.linalg.solve_triangular(r, eye, upper=True)  # (n_heads, d_head, d_head)
    gram = torch.einsum("hkm,gjm->hgkj", w_o, w_o)  # (n_heads, n_heads, d_head, d_head)
    cos = torch.einsum("hak,hgaj,gjb->hgkb", r_inv, gram, r_inv)  # (h, h, dh, dh) Q_h^T Q_g
    largest = torch.linalg.matrix_norm(cos, ord=2)  # (n_heads, n_heads) top singular value
    # The spectral norm of an exactly-zero matrix is 0; don't let the SVD's rounding say otherwise.
    largest = torch.where(cos.abs().amax((-2, -1)) == 0, 0.0, largest)  # (n_heads, n_heads)
    return largest.fill_diagonal_(0.0)


def _readout_error(setup: Setup, w_o: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(component of the two heads' output along u, what it would be if both add there)."""
    y = setup.z[:, :, 0] @ w_o[0] + setup.z[:, :, 1] @ w_o[1]  # (B, T, d_model)
    along_u = y @ setup.u  # (B, T)
    both = setup.z[:, :, 0, 0] + setup.z[:, :, 1, 0]  # (B, T)
    return along_u, both


def check(setup: Setup) -> list[Check]:
    rtol, atol = harness.tolerance(DTYPE, setup.cfg.d_model)
    along_u, both = _readout_error(setup, setup.shared)
    return [
        harness.at_least(
            "dense W_O: largest cosine between head 0's and head 1's write subspaces",
            principal_cosines(setup.shared)[0, 1],
            1 - COSINE_ATOL,
            "the two heads do not share a direction: a cosine of 1 needs a vector in both row "
            "spaces, which only off-diagonal blocks of W_O can provide",
        ),
        harness.close(
            "dense W_O: (head 0 + head 1 writes) . u  vs  z_0[0] + z_1[0]",
            along_u,
            both,
            rtol=rtol,
            atol=atol,
            detail="along the shared direction a downstream reader should see the sum of both "
            "heads' signals",
        ),
        harness.exactly_zero(
            "no W_O: largest cosine between any two heads' write subspaces",
            principal_cosines(setup.none),
            "without W_O head h writes only to slice h, and slices are orthogonal coordinates",
        ),
        harness.exactly_zero(
            "block-diagonal W_O: largest cosine between any two heads",
            principal_cosines(setup.block_diag),
            "a block-diagonal W_O keeps each head in its slice, so no direction is shared",
        ),
    ]


def contrast(setup: Setup, gen: torch.Generator) -> list[Check]:
    """A random dense W_O overlaps; the sharing W_O forced block-diagonal loses head 1 along u."""
    cfg = setup.cfg
    dense = attn.dense_w_o(cfg, gen, DTYPE)  # (n_heads, d_head, d_model)
    dh = cfg.d_head
    masked = torch.zeros_like(setup.shared)  # (n_heads, d_head, d_model)
    for h in range(cfg.n_heads):
        masked[h, :, h * dh : (h + 1) * dh] = setup.shared[h, :, h * dh : (h + 1) * dh]
    along_u, both = _readout_error(setup, masked)
    return [
        harness.at_least(
            "random dense W_O: largest cosine between two heads' write subspaces",
            principal_cosines(dense).max(),
            0.1,
        ),
        harness.at_least(
            "sharing W_O forced block-diagonal: relative error of readout along u",
            harness.relative_error(along_u, both),
            0.5,
        ),
    ]


NOTES = [
    "Write subspace of head h = row space of W_O[h]; cosines of principal angles = "
    "singular values of R_h^-T (W_O[h] W_O[g]^T) R_g^-1 from W_O[h]^T = Q_h R_h.",
    f"A cosine of 1 is checked to within {COSINE_ATOL:g} (float32); the zeros exactly.",
    "The sharing W_O is built by hand (heads 0 and 1 both write their coordinate 0 "
    "along u): the claim is that a dense W_O can do this, which a trained model may use.",
]


def run(scale: str = "small", device: str | DeviceChoice = "cpu", seed: int = 0) -> Report:
    return harness.run_module(__name__, scale, device, seed)
