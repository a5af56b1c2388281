"""The write-subspace overlap of many W_O at once: real-block-structure's null kernel (issue 26).

The statistic is `real_block_structure.mean_max_cosine`: for every pair of heads i < j, the
largest principal cosine between the row spaces of A_i and A_j (d_head x d_model each),
averaged over the pairs. Here it is computed the same way in law and in value, cheaper:

1. Whiten first. With A_i A_i^T = L_i L_i^T, the rows of Q_i^T = L_i^-1 A_i are an orthonormal
   basis of head i's write space, so the cross blocks M_ij = Q_i^T Q_j come straight out of the
   Gram matrix of the whitened rows (no two 32 x 32 products a pair afterwards), and only its
   upper block triangle is needed: four row groups, 62% of the full product's work.
2. The top eigenvalue of B = M^T M (the squared largest cosine) with a certificate instead of
   a full eigvalsh (45% of a null chunk before, 3,300 LAPACK calls of ~25 us each). B is
   symmetric positive semi-definite with eigenvalues l_1 >= ... >= l_32 >= 0. Squaring
   P <- P^2 / tr(P^2) `SQUARINGS` times gives p = 2^SQUARINGS and
     upper = (tr B^p)^(1/p) = (sum l_i^p)^(1/p) >= l_1,
   from the traces that normalised each step (logs, no overflow), while P tends to v v^T
   (v the top eigenvector), so its largest-diagonal column x gives the Rayleigh quotient
     lower = x^T B x / x^T x <= l_1.
   A pair whose bounds agree to `TOL` (upper - lower <= TOL * lower) takes `lower`: it is
   within TOL * l_1 of l_1, so its cosine sqrt(l_1) within TOL / 2 = 1e-6 relative (plus
   float32 rounding, ~1e-7, as eigvalsh's own). The other pairs (where l_2 / l_1 is so close to
   1 that p = 512 does not separate them: 1-3% on MiniLM's layers) take eigvalsh as before.
   The printed means have 3 digits and their standard errors 4: 1e-6 is far below both.
3. Sub-batches of `SUB` draws: the same random numbers as one batch (torch's generator gives a
   tensor's worth of normals in sequence, whatever the split), but the working set of a
   sub-batch (~6 MB, not ~30 MB a tensor) stays in cache and is not mapped afresh each time.

`tests/test_overlap_kernel.py` holds this kernel equal to `mean_max_cosine` (the direct route,
float64) on fixed inputs within the stated tolerance, the bounds as bounds, and the fallback.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

from prep.demos._torch import torch

Tensor: TypeAlias = torch.Tensor  # a type for annotations (torch is not followed by mypy)

TOL = 2e-6  # relative, on each pair's squared cosine: the cosine within 1e-6 (module docstring)
SQUARINGS = 9  # p = 512: 97-99% of MiniLM's null pairs certified, the rest go to eigvalsh
SUB = 10  # draws a sub-batch
GROUPS = 4  # row groups of heads for the upper block triangle of the Gram matrix


def bounds(b: Tensor, squarings: int = SQUARINGS) -> tuple[Tensor, Tensor]:
    """(lower, upper) on the largest eigenvalue of each symmetric PSD matrix in b (N, n, n):
    the Rayleigh quotient of P^(2^squarings)'s largest-diagonal column and the trace bound
    (tr B^p)^(1/p), p = 2^squarings (module docstring): (N,) each."""
    trace = b.diagonal(dim1=-2, dim2=-1).sum(-1)  # (N,)
    p = b / trace[:, None, None]  # (N, n, n) eigenvalues l_i / tr B
    log_upper = trace.log()  # (N,) log of the bound, built step by step
    power = 1
    for _ in range(squarings):
        p = torch.matmul(p, p)  # (N, n, n)
        t = p.diagonal(dim1=-2, dim2=-1).sum(-1)  # (N,)
        p.div_(t[:, None, None])
        power *= 2
        log_upper += t.log() / power  # log (tr B^power)^(1/power), by the normalising traces
    col = p.diagonal(dim1=-2, dim2=-1).argmax(-1)  # (N,) the column of p nearest v v_c
    x = torch.take_along_dim(p, col[:, None, None], -1)  # (N, n, 1)
    lower = (x * (b @ x)).sum((-2, -1)) / (x * x).sum((-2, -1))  # (N,) Rayleigh quotient
    return lower, log_upper.exp()


def top_eigenvalue(b: Tensor, squarings: int = SQUARINGS, tol: float = TOL) -> Tensor:
    """The largest eigenvalue of each symmetric PSD matrix in b (..., n, n): the lower bound
    where the bounds agree to `tol` (relative), eigvalsh where they do not: (...)."""
    shape = b.shape[:-2]
    b = b.reshape(-1, *b.shape[-2:])  # (N, n, n)
    lower, upper = bounds(b, squarings)  # (N,) each
    unsure = ~(upper - lower <= tol * lower)  # NaN (a zero trace) is unsure too
    if bool(unsure.any()):
        lower[unsure] = torch.linalg.eigvalsh(b[unsure])[..., -1]
    return lower.reshape(shape)


def cross_blocks(w_o: Tensor) -> Tensor:
    """M_ij = Q_i^T Q_j for the head pairs i < j (triu_indices order): (k, pairs, dh, dh), from
    W_O (k, h, dh, d) through the whitened rows' Gram matrix, upper block triangle only."""
    k, h, dh, d = w_o.shape
    chol = torch.linalg.cholesky(w_o @ w_o.transpose(-1, -2))  # (k, h, dh, dh) L_i
    eye = torch.eye(dh, dtype=w_o.dtype, device=w_o.device).expand_as(chol)
    inv = torch.linalg.solve_triangular(chol, eye, upper=False)  # (k, h, dh, dh) L_i^-1
    q = (inv @ w_o).reshape(k, h * dh, d)  # (k, h*dh, d): head i's rows orthonormal
    bounds = [round(g * h / GROUPS) for g in range(GROUPS + 1)]
    blocks = []
    for start, end in zip(bounds, bounds[1:], strict=False):
        if start == end:
            continue
        rows = q[:, start * dh : end * dh]  # (k, n*dh, d) heads start..end-1
        gram = rows @ q[:, start * dh :].transpose(-1, -2)  # (k, n*dh, (h-start)*dh)
        gram = gram.view(k, end - start, dh, h - start, dh).transpose(2, 3)  # (k, n, h-s, dh, dh)
        i, j = torch.triu_indices(end - start, h - start, 1)  # pairs with j > i, local
        blocks.append(gram[:, i, j])  # (k, pairs here, dh, dh)
    return torch.cat(blocks, 1)  # (k, pairs, dh, dh): i ascending, then j


def mean_max_cosine(w_o: Tensor) -> Tensor:
    """real_block_structure.mean_max_cosine of each W_O in w_o (k, h, dh, d): (k,), its top
    eigenvalues certified to TOL (module docstring)."""
    out = []
    for start in range(0, w_o.shape[0], SUB):
        cross = cross_blocks(w_o[start : start + SUB])  # (s, pairs, dh, dh)
        top = top_eigenvalue(cross.transpose(-1, -2) @ cross)  # (s, pairs)
        out.append(top.clamp(0.0, 1.0).sqrt().mean(-1))  # (s,)
    return torch.cat(out)  # (k,)


def sample_mean_max_cosine(
    k: int,
    shape: tuple[int, int, int],
    gen: torch.Generator,
    scale: Tensor | None = None,
    device: torch.device | None = None,
) -> Tensor:
    """The statistic of k W_O of `shape` (h, dh, d) whose entries are N(0, 1), times `scale`
    (d,) per column if given, drawn SUB at a time from `gen` on the CPU (the same numbers as one
    randn of k) and measured on `device`: (k,) on the CPU."""
    h, dh, d = shape
    out = []
    for start in range(0, k, SUB):
        n = min(SUB, k - start)
        z = torch.randn(n, h * dh, d, generator=gen)  # (n, rows, d_model) N(0, I)
        if scale is not None:
            z.mul_(scale)  # (n, rows, d_model) column j scaled by scale[j]
        z = z if device is None else z.to(device)
        out.append(mean_max_cosine(z.view(n, h, dh, d)).cpu())  # (n,)
    return torch.cat(out)  # (k,)


def sample_gram(
    k: int,
    heads: tuple[int, int],
    singular: Tensor,
    gen: torch.Generator,
    statistic: Callable[[Tensor], Tensor],
) -> Tensor:
    """``statistic`` (of W_O (n, h, dh, r), a row per W_O) of k W' = Q diag(singular) with Q Haar
    on the orthogonal group of the h * dh rows (real-block-structure's exact-Gram null: W'^T W' =
    diag(singular^2), the Gram of W_O in its right singular basis), drawn SUB at a time from
    `gen` on the CPU: (k, ...), the same draws whatever the statistic.

    Q is the Q factor of a QR of a Gaussian matrix; without the sign fix that makes it Haar it
    is a Haar Q times a diagonal of +-1 on the right, which multiplies every head by the same
    orthogonal matrix (diagonals commute) and leaves every principal angle as it was (and every
    Gram cosine: the statistics here are `mean_max_cosine` and `gram_mass`)."""
    h, dh = heads
    rows, r = h * dh, singular.numel()
    out = []
    for start in range(0, k, SUB):
        n = min(SUB, k - start)
        z = torch.randn(n, rows, rows, generator=gen)  # (n, rows, rows) N(0, I)
        q = torch.linalg.qr(z).Q[..., :r]  # (n, rows, r) orthonormal columns
        out.append(statistic((q * singular).view(n, h, dh, r)))  # (n, ...)
    return torch.cat(out)  # (k, ...)


def gram_cosines(w_o: Tensor) -> Tensor:
    """The mass-weighted overlap of every head pair i < j (triu_indices order): the cosine between
    their write Grams G_i = A_i^T A_i, tr(G_i G_j) / (||G_i||_F ||G_j||_F)
    = ||A_i A_j^T||_F^2 / (||A_i A_i^T||_F ||A_j A_j^T||_F), from W_O (k, h, dh, d)'s row Gram
    matrix: (k, pairs). Each pair of write directions counts its squared cosine weighted by the
    product of their squared singular values (demos/BARS.md, audit14)."""
    k, h, dh, d = w_o.shape
    flat = w_o.reshape(k, h * dh, d)  # (k, rows, d)
    gram = (flat @ flat.transpose(-1, -2)).view(k, h, dh, h, dh)  # block (i, j): A_i A_j^T
    sq = gram.pow(2).sum((2, 4))  # (k, h, h) ||A_i A_j^T||_F^2
    norm = sq.diagonal(dim1=-2, dim2=-1).sqrt()  # (k, h) ||G_i||_F = ||A_i A_i^T||_F
    i, j = torch.triu_indices(h, h, 1)
    return sq[:, i, j] / (norm[:, i] * norm[:, j])  # (k, pairs)


def mass_summary(cos: Tensor) -> Tensor:
    """Per W_O, from its pairs' gram_cosines (k, pairs): (k, 2), the mean over pairs and how far
    the largest pair stands out from that mean (the pair-identity statistic D)."""
    mean = cos.mean(-1)  # (k,)
    return torch.stack([mean, cos.max(-1).values - mean], -1)  # (k, 2)


def gram_mass(w_o: Tensor) -> Tensor:
    """mass_summary of each W_O's gram_cosines, W_O (k, h, dh, d): (k, 2)."""
    return mass_summary(gram_cosines(w_o))
