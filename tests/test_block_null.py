"""real-block-structure's overlap null, drawn the cheap way, is the null it was (issue 26).

- Equal in law: rows drawn as z * sqrt(eigenvalues of C) instead of z @ C^(1/2) give the same
  statistic exactly on the same z rotated (the identity), and the same distribution (a
  two-sample Kolmogorov-Smirnov test at a level stated here, on seed 0).
- (Besag & Clifford's sequential stopping went with the covariance-null check, audit13: an
  exact-Gram null is drawn a fixed 50 times a layer.)
- The chunked draws do not depend on the pool: any worker count, stopped or not, gives the same
  values, and a stopped null is a prefix of the unstopped one.
"""

from __future__ import annotations

import importlib
import math

import pytest

from prep.demos._torch import torch
from prep.demos.pretrained import chunked
from prep.demos.registry import DEMOS

mod = importlib.import_module(DEMOS["real-block-structure"].module)


def anisotropic_w_o(seed: int) -> torch.Tensor:
    """A W_O-shaped matrix (12 heads x 32 x 384) with a decaying spectrum, in a random basis
    (so that C is not diagonal and the rotation the fast null skips is a real one)."""
    gen = torch.Generator().manual_seed(seed)
    scale = torch.logspace(0, -2, 384, dtype=torch.float64)  # (d_model,) column scales
    basis = torch.linalg.qr(torch.randn(384, 384, generator=gen, dtype=torch.float64)).Q
    return (torch.randn(12, 32, 384, generator=gen, dtype=torch.float64) * scale) @ basis


def root_and_basis(w_o: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(C^(1/2), V, eigenvalues) of W_O's row covariance C = V diag(values) V^T, float64."""
    h, dh, d = w_o.shape
    flat = w_o.reshape(h * dh, d)
    values, vectors = torch.linalg.eigh(flat.T @ flat / (h * dh))
    values = values.clamp(min=0)
    return (vectors * values.sqrt()) @ vectors.T, vectors, values


def test_scaled_draws_are_the_direct_draws_rotated() -> None:
    """The identity behind the fast null: for any z, (z V) diag(sqrt(values)) is z C^(1/2)
    rotated by V (C^(1/2) = V diag(sqrt values) V^T), and principal angles do not see a
    rotation, so the statistic is the same number."""
    w_o = anisotropic_w_o(0)
    root, vectors, values = root_and_basis(w_o)
    assert torch.allclose(mod.row_variances(w_o), values, rtol=1e-12, atol=1e-15)
    z = torch.randn(3, 384, 384, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    direct = mod.mean_max_cosine((z @ root).view(3, 12, 32, 384))  # (3,)
    scaled = mod.mean_max_cosine(((z @ vectors) * values.sqrt()).view(3, 12, 32, 384))
    torch.testing.assert_close(scaled, direct, rtol=1e-10, atol=0)
    # without the rotation it is only equal in law: each z gives another number
    unrotated = mod.mean_max_cosine((z * values.sqrt()).view(3, 12, 32, 384))
    assert float((unrotated - direct).abs().min()) > 1e-5  # another draw, not the same one


def ks_statistic(a: torch.Tensor, b: torch.Tensor) -> float:
    """sup |F_a - F_b| of the two empirical distribution functions."""
    both = torch.cat([a, b]).sort().values
    fa = torch.searchsorted(a.sort().values, both, right=True) / len(a)
    fb = torch.searchsorted(b.sort().values, both, right=True) / len(b)
    return float((fa - fb).abs().max())


N_KS = 150  # draws of each null
ALPHA = 0.01  # a correct fast null fails this test with probability <= 1% on a seed not chosen
# Asymptotic two-sample critical value: c(alpha) sqrt((n + m) / (n m)), c = sqrt(-ln(alpha/2)/2)
CRITICAL = math.sqrt(-math.log(ALPHA / 2) / 2) * math.sqrt(2 / N_KS)


def direct_null(w_o: torch.Tensor, n: int, seed: int) -> torch.Tensor:
    """The null as the demo drew it until issue 26: rows z @ C^(1/2), z ~ N(0, I)."""
    root = root_and_basis(w_o)[0].float()
    gen = torch.Generator().manual_seed(seed)
    out = []
    for k in chunked.chunk_sizes(n):
        z = torch.randn(k, 384, 384, generator=gen)  # (k, rows, d_model)
        out.append(mod.mean_max_cosine((z @ root).view(k, 12, 32, 384)))
    return torch.cat(out)  # (n,)


def test_fast_null_has_the_direct_nulls_distribution() -> None:
    """Two-sample KS at level 0.01 (seed 0, fixed before running): the fast covariance null
    and the direct one are not told apart; a null with the wrong scale (variances, not their
    square roots) is, so the test can see a difference of the kind a slip would make."""
    w_o = anisotropic_w_o(2)
    direct = direct_null(w_o, N_KS, 0)
    fast = mod.covariance_null(w_o, N_KS, torch.Generator().manual_seed(0))
    assert ks_statistic(direct, fast) < CRITICAL, (ks_statistic(direct, fast), CRITICAL)
    wrong = mod.covariance_sampler(mod.row_variances(w_o) ** 2, 12, 32)
    slipped = chunked.draw_nulls([chunked.Null(wrong, 50, 0)])[0]
    assert ks_statistic(direct[:50], slipped) > CRITICAL * math.sqrt(N_KS / 50)  # 50 vs 50


def test_the_shipped_sampler_is_the_direct_draw_rotated() -> None:
    """The sampler the demo draws with, on the very z its generator gives, returns the
    statistic of those z rotated back and taken through C^(1/2) (the old route): a slip in the
    sampler (a wrong power of the variances, a dropped direction) fails here on any seed."""
    w_o = anisotropic_w_o(3)
    root, vectors, values = root_and_basis(w_o)
    sample = mod.covariance_sampler(mod.row_variances(w_o), 12, 32)
    got = sample(4, torch.Generator().manual_seed(11))  # (4,)
    z = torch.randn(4, 384, 384, generator=torch.Generator().manual_seed(11)).double()
    direct = mod.mean_max_cosine((z @ vectors.T @ root).view(4, 12, 32, 384))
    torch.testing.assert_close(got.double(), direct, rtol=0, atol=1e-5)
    wrong = mod.covariance_sampler(mod.row_variances(w_o) ** 2, 12, 32)
    assert float((wrong(4, torch.Generator().manual_seed(11)).double() - direct).abs().max()) > 1e-3


def counting_null(n: int, seed: int, done=chunked.never) -> chunked.Null:
    def sample(k: int, gen: torch.Generator) -> torch.Tensor:
        return torch.randn(k, 64, generator=gen).sum(-1)  # (k,)

    return chunked.Null(sample, n, seed, done)


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_draws_do_not_depend_on_the_pool(workers: int) -> None:
    """Several nulls, some stopping: equal bit for bit to one thread's loop for any worker
    count; a stopped null is a prefix of the same null unstopped."""
    before = torch.get_num_threads()

    def nulls() -> list[chunked.Null]:
        return [
            counting_null(173, 1),  # 50, 50, 50, 23
            counting_null(199, 2, lambda v: len(v) >= 100),
            counting_null(30, 3),
            counting_null(199, 4, lambda v: True),
        ]

    want = chunked.draw_nulls(nulls(), workers=1)
    got = chunked.draw_nulls(nulls(), workers=workers)
    assert [len(v) for v in got] == [173, 100, 30, 50]
    for g, w in zip(got, want, strict=True):
        assert torch.equal(g, w)
    full = chunked.draw_nulls([counting_null(199, 2)], workers=workers)[0]
    assert torch.equal(full[:100], got[1])
    assert torch.get_num_threads() == before  # the pool gave the caller's thread count back


def test_demo_nulls_on_workers_equal_the_sequential_loop() -> None:
    """The covariance null itself (a last chunk shorter than 50): the same for 1 and 2 workers."""
    w_o = anisotropic_w_o(3).float()
    sample = mod.covariance_sampler(mod.row_variances(w_o), 12, 32)
    one = chunked.draw_nulls([chunked.Null(sample, 73, 5)], workers=1)[0]
    two = chunked.draw_nulls([chunked.Null(sample, 73, 5)], workers=2)[0]
    assert one.shape == (73,) and torch.equal(one, two)


def test_leaving_a_drawing_stops_it_and_restores_threads() -> None:
    """An exception in the block (the learner left the demo) stops handing out chunks and
    gives the caller its thread count back; the exception is the one raised."""
    before = torch.get_num_threads()
    calls = []

    def sample(k: int, gen: torch.Generator) -> torch.Tensor:
        calls.append(k)
        return torch.randn(k, generator=gen)

    with pytest.raises(KeyboardInterrupt), chunked.Drawing([chunked.Null(sample, 5000, 0)], 2):
        raise KeyboardInterrupt
    assert len(calls) < 100 and torch.get_num_threads() == before


def test_a_batch_that_stops_at_first_looks_computes_no_chunk_in_vain() -> None:
    """Seven nulls that each stop after their first chunk (the demo's layers): 7 chunks are
    computed on two workers, not 8; a null drawn alone may compute one chunk ahead."""
    calls: list[int] = []

    def sample(k: int, gen: torch.Generator) -> torch.Tensor:
        calls.append(k)
        return torch.randn(k, 20000, generator=gen).sum(-1)  # (k,) some work a chunk

    def batch(n: int) -> list[chunked.Null]:
        return [chunked.Null(sample, 199, s, lambda v: True) for s in range(n)]

    for _ in range(3):
        calls.clear()
        assert [len(v) for v in chunked.draw_nulls(batch(7), workers=2)] == [50] * 7
        assert len(calls) == 7
        calls.clear()
        assert [len(v) for v in chunked.draw_nulls(batch(1), workers=2)] == [50]
        assert len(calls) <= 2
