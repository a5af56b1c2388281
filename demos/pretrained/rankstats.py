"""Spearman's rho against many reorderings, each score ranked once (issue 26).

The permutation test and the bootstraps of real-importance compare one fixed vector with
thousands of others: `pt.spearman` ranked both sides of every pair again (two argsorts per side
on the (n_draws, h) tensors). Here the fixed side is ranked once, and a permuted copy of it is
its ranks permuted (true when it has no ties: then `ranks(a[p]) == ranks(a)[p]`); a bootstrap
row needs one argsort, whose inverse is its ranks. `ranks` and `spearman` live here (pretrained.py re-exports them).

Why the numbers are the ones `spearman` gives, bit for bit: centred ranks are half-integers
(rank - (h-1)/2), so every product and sum of them is exact in float64 whatever the order of
summation, and the norms are the square roots of the same exact sums. A vector with ties goes
the old way (its ranks then depend on where the ties sit). tests/test_rankstats.py holds both
against `spearman` with torch.equal.
"""

from __future__ import annotations

from typing import TypeAlias

from prep.demos._torch import torch

Tensor: TypeAlias = torch.Tensor  # a type for annotations (torch is not followed by mypy)


def ranks(x: Tensor) -> Tensor:
    """Ranks 0..n-1 along the last dim (no ties expected in continuous scores)."""
    return x.argsort(-1).argsort(-1).to(torch.float64)


def spearman(a: Tensor, b: Tensor) -> Tensor:
    """Spearman's rho along the last dim: Pearson correlation of the ranks."""
    ra, rb = ranks(a), ranks(b)
    ra = ra - ra.mean(-1, keepdim=True)
    rb = rb - rb.mean(-1, keepdim=True)
    return (ra * rb).sum(-1) / (ra.norm(dim=-1) * rb.norm(dim=-1))


def centred_ranks(x: Tensor) -> Tensor:
    """Ranks 0..n-1 along the last dim minus their mean (n-1)/2: float64 half-integers."""
    r = ranks(x)
    return r - r.mean(-1, keepdim=True)


def has_ties(x: Tensor) -> bool:
    return int(x.unique().numel()) < x.numel()


def permuted_rho(a: Tensor, b: Tensor, perms: Tensor) -> Tensor:
    """rho(a[p], b) for every row p of perms (n_draws, n): `spearman(a[perms], b)`."""
    if has_ties(a):
        return spearman(a[perms], b.expand(perms.shape[0], -1))
    ra, rb = centred_ranks(a), centred_ranks(b)  # (n,) each
    return (ra[perms] * rb).sum(-1) / (ra.norm(dim=-1) * rb.norm(dim=-1))  # (n_draws,)


def rho_against_rows(score: Tensor, rows: Tensor) -> Tensor:
    """rho(score, row) for every row of rows (n_draws, h): `spearman(score.expand(...),
    rows)` with the score ranked once and each row argsorted once."""
    if has_ties(score):
        return spearman(score.expand(rows.shape[0], -1), rows)
    rs = centred_ranks(score)  # (h,)
    order = rows.argsort(-1)  # (n_draws, h): the element at rank k of each row
    h = score.shape[-1]
    rank = torch.arange(h, dtype=torch.float64, device=rows.device)  # (h,)
    rank = rank - rank.mean()  # centred, as pt.spearman's
    # sum_i rs_i * rank_i(row) = sum_k rs[order_k] * k: the same exact sum, reordered
    return (rs[order] * rank).sum(-1) / (rank.norm() * rs.norm())  # (n_draws,)
