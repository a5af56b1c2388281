"""Each score ranked once (demos/pretrained/rankstats.py, issue 26): the permutation nulls and the
bootstrap rhos are the ones Spearman's rho of the re-ranked pairs gives, bit for bit, with ties
and without, at both scales' sizes."""

from __future__ import annotations

import pytest

from prep.demos._torch import torch
from prep.demos.pretrained import pretrained as pt
from prep.demos.pretrained import rankstats
from prep.demos.pretrained import task_metric as tm


def reference_spearman(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Spearman's rho as the demos computed it before: both sides ranked for every row."""
    ra = a.argsort(-1).argsort(-1).to(torch.float64)
    rb = b.argsort(-1).argsort(-1).to(torch.float64)
    ra = ra - ra.mean(-1, keepdim=True)
    rb = rb - rb.mean(-1, keepdim=True)
    return (ra * rb).sum(-1) / (ra.norm(dim=-1) * rb.norm(dim=-1))


def draw(gen: torch.Generator, n: int, ties: bool) -> torch.Tensor:
    x = torch.randn(n, generator=gen, dtype=torch.float64)
    if ties:
        x = (x * 2).round()  # a handful of distinct values: many ties
    return x


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize(("n", "draws"), [(12, 2000), (12, 20000), (5, 300), (2, 10)])
def test_permuted_rho_is_spearman_of_the_permuted_scores(n: int, draws: int, ties: bool) -> None:
    gen = torch.Generator().manual_seed(n * draws + ties)
    for _ in range(5):
        a, b = draw(gen, n, ties), draw(gen, n, ties=False)
        perms = torch.rand(draws, n, generator=gen).argsort(-1)  # (draws, n)
        want = reference_spearman(a[perms], b.expand(draws, -1))
        assert torch.equal(rankstats.permuted_rho(a, b, perms), want)


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize(("h", "pairs", "draws"), [(12, 8, 2000), (12, 32, 2000), (3, 2, 50)])
def test_rho_against_rows_is_spearman_row_by_row(h: int, pairs: int, draws: int, ties) -> None:
    """Rows as the bootstrap makes them (a transposed view of resampled means); rows with ties
    (two heads with the same effect) too."""
    gen = torch.Generator().manual_seed(h * pairs + ties)
    for _ in range(5):
        score = draw(gen, h, ties)
        effect = torch.randn(h, pairs, generator=gen, dtype=torch.float64)
        if ties:
            effect[1] = effect[0]  # two heads alike: their resampled means tie in every row
        idx = torch.randint(pairs, (draws, pairs), generator=gen)  # (draws, P)
        rows = effect[:, idx].mean(-1).T  # (draws, h), not contiguous
        want = reference_spearman(score.expand(draws, -1), rows)
        got = rankstats.rho_against_rows(score, rows)
        assert torch.equal(torch.nan_to_num(got, 9.0), torch.nan_to_num(want, 9.0))


def test_the_demos_statistics_are_the_direct_ones() -> None:
    """permutation_p and bootstrap_rho return the numbers of the direct computation."""
    gen = torch.Generator().manual_seed(3)
    a, b = torch.randn(12, generator=gen), torch.randn(12, generator=gen)
    effect = torch.randn(12, 8, generator=gen, dtype=torch.float64)

    rho, p = pt.permutation_p(a, b, torch.Generator().manual_seed(1), 2000)
    seed = int(torch.randint(2**31, (1,), generator=torch.Generator().manual_seed(1)))
    perms = torch.rand(2000, 12, generator=torch.Generator().manual_seed(seed)).argsort(-1)
    null = reference_spearman(a.double()[perms], b.double().expand(2000, -1))
    assert rho == float(reference_spearman(a.double(), b.double()))
    assert p == float((1 + (null >= rho - 1e-12).sum()) / 2001)

    got = tm.bootstrap_rho(a, effect, 500, torch.Generator().manual_seed(2))
    idx = torch.randint(8, (500, 8), generator=torch.Generator().manual_seed(2))
    rhos = reference_spearman(a.double().expand(500, -1), effect[:, idx].mean(-1).T)
    lo, hi = torch.quantile(rhos, torch.tensor([0.05, 0.95], dtype=torch.float64))
    assert got[1:] == (float(lo), float(hi))
