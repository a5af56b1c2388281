"""cross-head-mixing: only a W_O with off-diagonal blocks lets two heads write along one direction.

Head h writes z_h @ W_O[h], so its write subspace is the row space of W_O[h] (d_head x d_model).
The cosines of the principal angles between two heads' write subspaces are the singular values of
Q_h^T Q_g, where Q_h is an orthonormal basis of that row space. With W_O[h]^T = Q_h R_h (reduced
QR), Q_h^T Q_g = R_h^{-T} (W_O[h] W_O[g]^T) R_g^{-1}. Computing it this way keeps a structural
zero exact: when W_O[h] W_O[g]^T is exactly 0 (disjoint supports), so is the cosine matrix, and its
largest singular value is 0.0, not rounding noise from a QR of columns with zero rows. The tests
hold it against scipy.linalg.subspace_angles, an independent implementation.

A cosine of exactly 1 means one vector lies in both heads' row spaces, so the rows of W_O[h] and
W_O[g] together are linearly dependent: the square (n_heads*d_head = d_model) W_O is singular.
A generic dense W_O (random, or trained) is invertible, so its heads' write subspaces overlap
partially (cosines strictly between 0 and 1) and never share a whole direction. The hand-built
sharing W_O below is singular on purpose (rank d_model - 1).

Sharing a write direction is a statement about writers. Readers sum heads with or without W_O: a
reader direction r (a row of the next layer's W_Q, or a column of W_U) reads concat(z) . r =
sum_h z_h . r_h, where r_h is r's slice h, so every head's contribution adds along r anyway.
"""

from __future__ import annotations

from dataclasses import dataclass

from prep.demos import harness
from prep.demos._torch import torch
from prep.demos.decoder import decoder
from prep.demos.harness import IDENTITY, SANITY, Check, DeviceChoice, Report
from prep.demos.synthetic import attention as attn

NAME = "cross-head-mixing"
DTYPE = torch.float32
CONTRAST_LABEL = "W_O without the shared direction"
# The hand-built, no-W_O, block-diagonal and basis-change checks and the trained-W_O contrast
# are algebra; the sharing-W_O contrast (how much readout a random shared direction loses when
# forced block-diagonal) is a fact of a random draw: sanity (audit12). 3 checks on a random
# dense W_O and 2 per layer of the shipped 2-layer decoder (the counts do not depend on scale).
# The partial-overlap checks are `sanity`: any dense W_O shows them, the decoder's at
# initialisation as much as its trained one (mean largest cosine 0.84 / 0.79 trained, 0.83 for a
# random one of this shape), so they cannot tell trained from untrained.
CHECK_KINDS = {IDENTITY: 8, SANITY: 8}
GENERIC = "any dense W_O of this shape shows it, trained or at initialisation: a generic fact"
SCALES = attn.standard_scales()
COSINE_ATOL = 1e-5  # float32: a cosine of 1 computes as 1 up to ~1e-6
# Bar for "partial overlap" (argued before the run): a cosine is called strictly inside (0, 1) when
# it is at least 1e-3 away from both ends. Structural zeros come out as exactly 0.0 and a shared
# direction as 1 within COSINE_ATOL, so 1e-3 is far outside rounding and far inside the range a
# dense d_head-dim subspace pair reaches (the Wachter edge below is 0.35..0.87 at our sizes).
PARTIAL_MARGIN = 1e-3
# float32 QR, triangular solve and SVD of a well-conditioned d_head x d_head problem: ~1e-6 each.
INVARIANCE_ATOL = 1e-4


@dataclass
class Setup:
    cfg: attn.Sizes
    z: torch.Tensor  # (B, T, n_heads, d_head)
    shared: torch.Tensor  # (n_heads, d_head, d_model) dense W_O; heads 0 and 1 share direction u
    u: torch.Tensor  # (d_model,) the shared unit direction
    none: torch.Tensor  # (n_heads, d_head, d_model) "no W_O", i.e. the identity in per-head blocks
    block_diag: torch.Tensor  # (n_heads, d_head, d_model)
    dense: torch.Tensor  # (n_heads, d_head, d_model) random Gaussian W_O
    trained: list[torch.Tensor]  # per layer (n_heads, d_head, d_model): the shipped decoder's W_O
    reader: torch.Tensor  # (d_model,) a random reader direction, nonzero in every slice
    mix: torch.Tensor  # (n_heads, d_head, d_head) random invertible per-head basis changes


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


def trained_w_o(device: torch.device) -> list[torch.Tensor]:
    """The shipped decoder's W_O per layer, each (n_heads, d_head, d_model)."""
    cfg, params, _ = decoder.load(device=device)
    return [params[f"blocks.{layer}.W_O"] for layer in range(cfg.n_layers)]


def build(cfg: attn.Sizes, device: torch.device, gen: torch.Generator) -> Setup:
    _, _, z = attn.random_layer(cfg, gen, DTYPE)  # z: (B, T, n_heads, d_head)
    shared, u = shared_direction_w_o(cfg, gen)
    none = attn.identity_w_o(cfg, device, DTYPE)  # (n_heads, d_head, d_model)
    block = attn.block_diagonal_w_o(cfg, gen, DTYPE)  # (n_heads, d_head, d_model)
    dense = attn.dense_w_o(cfg, gen, DTYPE)  # (n_heads, d_head, d_model)
    reader = attn.randn((cfg.d_model,), gen, DTYPE)  # (d_model,)
    eye = torch.eye(cfg.d_head, device=device, dtype=DTYPE)  # (d_head, d_head)
    mix = eye + attn.randn((cfg.n_heads, cfg.d_head, cfg.d_head), gen, DTYPE) / (
        2 * cfg.d_head**0.5
    )  # (n_heads, d_head, d_head) near the identity, so well conditioned
    return Setup(cfg, z, shared, u, none, block, dense, trained_w_o(device), reader, mix)


def counterexample(cfg: attn.Sizes, device: torch.device, gen: torch.Generator) -> Setup:
    """Every W_O swapped for the opposite: random dense where the claim needs sharing, no W_O or
    block-diagonal; block-diagonal where it measures a dense or trained W_O."""
    setup = build(cfg, device, gen)
    setup.shared = attn.dense_w_o(cfg, gen, DTYPE)  # (n_heads, d_head, d_model)
    setup.none = attn.dense_w_o(cfg, gen, DTYPE)  # (n_heads, d_head, d_model)
    setup.block_diag = attn.dense_w_o(cfg, gen, DTYPE)  # (n_heads, d_head, d_model)
    setup.dense = attn.block_diagonal_w_o(cfg, gen, DTYPE)  # (n_heads, d_head, d_model)
    setup.trained = [_block_diagonal_part(w) for w in setup.trained]
    return setup


def _block_diagonal_part(w_o: torch.Tensor) -> torch.Tensor:
    """W_O with every off-diagonal block set to 0: head h keeps only columns of slice h."""
    n_heads, dh, _ = w_o.shape
    out = torch.zeros_like(w_o)  # (n_heads, d_head, d_model)
    for h in range(n_heads):
        out[h, :, h * dh : (h + 1) * dh] = w_o[h, :, h * dh : (h + 1) * dh]
    return out


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


def off_diagonal(matrix: torch.Tensor) -> torch.Tensor:
    """The n*(n-1) off-diagonal entries of a square matrix, as a vector."""
    n = matrix.shape[0]
    return matrix[~torch.eye(n, dtype=torch.bool, device=matrix.device)]  # (n*(n-1),)


def wachter_edge(d_head: int, d_model: int) -> float:
    """Where the largest principal cosine of two independent random d_head-dim subspaces of
    R^d_model concentrates for large sizes: sqrt(4 p (1 - p)) with p = d_head / d_model (the upper
    edge of Wachter's law for equal dimensions)."""
    p = d_head / d_model
    return (4 * p * (1 - p)) ** 0.5


def _readout_error(setup: Setup, w_o: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(component of the two heads' output along u, what it would be if both add there)."""
    y = setup.z[:, :, 0] @ w_o[0] + setup.z[:, :, 1] @ w_o[1]  # (B, T, d_model)
    along_u = y @ setup.u  # (B, T)
    both = setup.z[:, :, 0, 0] + setup.z[:, :, 1, 0]  # (B, T)
    return along_u, both


def _partial(name: str, cosines: torch.Tensor, what: str) -> list[Check]:
    """Every pair's largest cosine at least PARTIAL_MARGIN above 0 and below 1."""
    pairs = off_diagonal(cosines)  # (n*(n-1),)
    return [
        harness.at_least(
            f"{name}: smallest largest-cosine over head pairs (mean {float(pairs.mean()):.3f})",
            pairs.min(),
            PARTIAL_MARGIN,
            f"{what} should let every pair of heads' write subspaces overlap; a 0 means some "
            "pair writes to orthogonal subspaces (a block-diagonal W_O)",
            kind=SANITY,
            bar=GENERIC,
        ),
        harness.at_most(
            f"{name}: largest cosine over head pairs",
            pairs.max(),
            1 - PARTIAL_MARGIN,
            "a cosine of 1 needs a vector in both row spaces, i.e. a singular W_O; a generic "
            f"{what} is invertible",
            kind=SANITY,
            bar=GENERIC,
        ),
    ]


def check(setup: Setup) -> list[Check]:
    cfg = setup.cfg
    rtol, atol = harness.tolerance(DTYPE, cfg.d_model)
    along_u, both = _readout_error(setup, setup.shared)
    y_none = attn.project(setup.z, setup.none)  # (B, T, d_model)
    r_slices = setup.reader.reshape(cfg.n_heads, cfg.d_head)  # (n_heads, d_head) r_h
    per_head = torch.einsum("bthd,hd->bt", setup.z, r_slices)  # (B, T) sum_h z_h . r_h
    edge = wachter_edge(cfg.d_head, cfg.d_model)
    dense_pairs = off_diagonal(principal_cosines(setup.dense))  # (n*(n-1),)
    checks = [
        harness.at_least(
            "hand-built sharing W_O: largest cosine between head 0's and head 1's write subspaces",
            principal_cosines(setup.shared)[0, 1],
            1 - COSINE_ATOL,
            "the two heads do not share a direction: a cosine of 1 needs a vector in both row "
            "spaces, which only off-diagonal blocks of W_O can provide",
        ),
        harness.equals(
            f"hand-built sharing W_O: rank of the {cfg.d_model} x {cfg.d_model} matrix",
            int(torch.linalg.matrix_rank(attn.flat(setup.shared).double())),
            cfg.d_model - 1,
            "two heads share a whole direction only if their stacked rows are dependent, so a "
            "W_O with a cosine of exactly 1 is singular",
        ),
        harness.close(
            "hand-built sharing W_O: (head 0 + head 1 writes) . u  vs  z_0[0] + z_1[0]",
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
        harness.close(
            "no W_O: concat(z) . r  vs  sum_h z_h . r_h (a reader direction r spanning all slices)",
            y_none @ setup.reader,
            per_head,
            rtol=rtol,
            atol=atol,
            detail="a reader sums every head's contribution along its direction with or without "
            "W_O; only writing into a shared direction needs W_O",
        ),
        harness.close(
            "random dense W_O: cosines of W_O[h]  vs  of M_h W_O[h] (random invertible M_h)",
            principal_cosines(torch.einsum("hij,hjm->him", setup.mix, setup.dense)),
            principal_cosines(setup.dense),
            rtol=0.0,
            atol=INVARIANCE_ATOL,
            detail="principal angles depend only on the row spaces, which a change of basis "
            "inside a head leaves alone; raw row dot products would change",
        ),
        *_partial(
            f"random dense W_O (Wachter edge {edge:.3f})",
            principal_cosines(setup.dense),
            "a random dense W_O",
        ),
        harness.at_least(
            "random dense W_O: mean largest-cosine over pairs / Wachter edge",
            float(dense_pairs.mean()) / edge,
            0.5,
            "the largest principal cosine of two random subspaces sits near the Wachter edge "
            "(finite sizes fall a little below it); far below means the cosines are not principal "
            "cosines (raw row dot products, for instance, are ~1/sqrt(d_model))",
            kind=SANITY,
            bar="random-matrix theory: the Wachter edge is where two random subspaces' largest "
            "cosine concentrates",
        ),
    ]
    for layer, w_o in enumerate(setup.trained):
        checks += _partial(
            f"trained decoder, layer {layer} W_O", principal_cosines(w_o), "a trained dense W_O"
        )
    return checks  # fmt: skip


def contrast(setup: Setup, gen: torch.Generator) -> list[Check]:
    """The sharing W_O forced block-diagonal loses head 1 along u; the trained W_O likewise
    forced block-diagonal has no overlap left."""
    cfg = setup.cfg
    along_u, both = _readout_error(setup, _block_diagonal_part(setup.shared))
    trained_block = principal_cosines(_block_diagonal_part(setup.trained[0]))  # (h, h)
    return [
        harness.at_least(
            "sharing W_O forced block-diagonal: relative error of readout along u",
            harness.relative_error(along_u, both),
            0.5,
            kind=SANITY,
            bar=harness.RANDOM_DRAW,
        ),
        harness.exactly_zero(
            "trained layer-0 W_O forced block-diagonal: largest cosine between two heads",
            trained_block,
            f"{cfg.n_heads} heads confined to their slices cannot overlap",
        ),
    ]


def notes(cfg: attn.Sizes) -> list[str]:
    edge = wachter_edge(cfg.d_head, cfg.d_model)
    return [
        "Write subspace of head h = row space of W_O[h]; cosines of principal angles = "
        "singular values of R_h^-T (W_O[h] W_O[g]^T) R_g^-1 from W_O[h]^T = Q_h R_h (held "
        "against scipy.linalg.subspace_angles in the tests).",
        f"A cosine of 1 is checked to within {COSINE_ATOL:g} (float32); the zeros exactly. A "
        "cosine of exactly 1 needs a singular W_O: the hand-built one has rank d_model - 1.",
        f"Random dense W_O: two random {cfg.d_head}-dim subspaces of R^{cfg.d_model} have largest "
        f"principal cosine near the Wachter edge sqrt(4p(1-p)) = {edge:.3f}, p = d_head/d_model. "
        "Dense W_Os overlap partially, they do not share directions.",
        "Trained W_O: the shipped decoder (demos/decoder/weights/decoder.*, d_model 64, 4 heads).",
        "Readers add heads regardless: without W_O a direction r that spans several slices "
        "reads sum_h z_h . r_h. W_O's extra is on the write side.",
    ]


def run(scale: str = "small", device: str | DeviceChoice = "cpu", seed: int = 0) -> Report:
    return harness.run_module(__name__, scale, device, seed)
