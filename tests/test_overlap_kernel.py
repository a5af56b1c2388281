"""real-block-structure's null kernel (demos/pretrained/overlap.py) is the direct statistic.

- the whitened cross blocks are the direct route's M_ij = L_i^-1 (A_i A_j^T) L_j^-T, pair by pair
  in triu_indices order, for any head count;
- the certified top eigenvalue: its bounds are bounds (float64, where rounding is negligible),
  and the value is eigvalsh's within the stated TOL, also where the top two eigenvalues nearly
  coincide (the certificate fails there and eigvalsh answers), which a loose tolerance gets
  wrong;
- the statistic equals `mean_max_cosine` (float64, the direct route) within 2e-6 on fixed
  anisotropic draws, and the sampler draws the numbers one randn would.
"""

from __future__ import annotations

import importlib

import pytest

from prep.demos._torch import torch
from prep.demos.pretrained import overlap
from prep.demos.registry import DEMOS

mod = importlib.import_module(DEMOS["real-block-structure"].module)

STAT_TOL = 2e-6  # the statistic: each cosine within TOL / 2 = 1e-6, plus float32 rounding


def scaled_draws(k: int, h: int, dh: int, d: int, seed: int) -> torch.Tensor:
    """k W_O (h, dh, d) drawn as the demo's covariance null draws them, with a decaying spectrum."""
    gen = torch.Generator().manual_seed(seed)
    scale = torch.logspace(0, -1.5, d)  # (d,) column scales, MiniLM-like anisotropy
    return (torch.randn(k, h * dh, d, generator=gen) * scale).view(k, h, dh, d)


def direct_cross(w_o: torch.Tensor) -> torch.Tensor:
    """M_ij for i < j the way mean_max_cosine builds them: (k, pairs, dh, dh), float64."""
    w = w_o.double()
    k, h, dh, d = w.shape
    gram = torch.einsum("kiad,kjbd->kijab", w, w)  # (k, h, h, dh, dh) A_i A_j^T
    idx = torch.arange(h)
    inv = torch.linalg.inv(torch.linalg.cholesky(gram[:, idx, idx]))  # (k, h, dh, dh) L_i^-1
    i, j = torch.triu_indices(h, h, 1)
    return inv[:, i] @ gram[:, i, j] @ inv[:, j].transpose(-1, -2)


@pytest.mark.parametrize("h", [2, 3, 5, 12])
def test_cross_blocks_are_the_direct_ones(h: int) -> None:
    w_o = scaled_draws(3, h, 8, 64, seed=h)
    got = overlap.cross_blocks(w_o.double())  # (3, pairs, 8, 8)
    torch.testing.assert_close(got, direct_cross(w_o), rtol=0, atol=1e-10)


def psd_with_spectrum(values: torch.Tensor, seed: int) -> torch.Tensor:
    """V diag(values) V^T for a random orthogonal V: (n, n) float64."""
    n = len(values)
    gen = torch.Generator().manual_seed(seed)
    v = torch.linalg.qr(torch.randn(n, n, generator=gen, dtype=torch.float64)).Q
    return (v * values) @ v.T


def test_the_bounds_bracket_the_top_eigenvalue() -> None:
    """lower <= l_1 <= upper on PSD matrices of every kind of spectrum, in float64: spread
    out, a near tie at the top, an exact tie, rank one; and they meet where the gap is wide."""
    base = torch.linspace(0.0, 0.5, 32, dtype=torch.float64)
    spectra = [
        base.clone(),
        torch.cat([base[:-2], torch.tensor([0.9, 0.95], dtype=torch.float64)]),
        torch.cat([base[:-2], torch.tensor([0.8, 0.8], dtype=torch.float64)]),
        torch.cat([torch.zeros(31, dtype=torch.float64), torch.ones(1, dtype=torch.float64)]),
    ]
    b = torch.stack([psd_with_spectrum(s, seed) for seed, s in enumerate(spectra)])
    true = torch.linalg.eigvalsh(b)[:, -1]  # (4,)
    lower, upper = overlap.bounds(b)
    assert bool((lower <= true * (1 + 1e-12)).all()) and bool((upper >= true * (1 - 1e-12)).all())
    assert float(((upper - lower) / true)[[0, 1, 3]].max()) < 1e-9  # wide gaps: certified
    assert float((upper - lower)[2] / true[2]) > 1e-3  # a tie: the bound cannot certify it


def test_a_near_tie_goes_to_eigvalsh_and_a_loose_tolerance_would_be_wrong() -> None:
    """l_2 / l_1 = 0.9999: after p = 512 the power iterate still mixes the two eigenvectors,
    so the Rayleigh quotient is off by ~1e-5; the kernel must not take it (the certificate
    fails and eigvalsh answers). With the tolerance loosened to 1 it would take it."""
    values = torch.cat([torch.linspace(0, 0.5, 30), torch.tensor([0.99990, 1.0])]).double()
    b = torch.stack([psd_with_spectrum(values, seed) for seed in range(8)]).float()
    true = torch.linalg.eigvalsh(b.double())[:, -1]  # (8,)
    got = overlap.top_eigenvalue(b)
    torch.testing.assert_close(got.double(), true, rtol=overlap.TOL, atol=0)
    loose = overlap.top_eigenvalue(b, tol=1.0)  # every Rayleigh quotient taken as it is
    assert float(((loose.double() - true) / true).abs().max()) > 10 * overlap.TOL


def test_float32_matrices_of_the_demo_agree_with_eigvalsh() -> None:
    """The cross products of the demo's own kind of draws: the certified value within TOL of
    float64 eigvalsh on every pair (most certified, some by the fallback)."""
    cross = overlap.cross_blocks(scaled_draws(10, 12, 32, 384, seed=0))  # (10, 66, 32, 32)
    b = cross.transpose(-1, -2) @ cross  # (10, 66, 32, 32)
    true = torch.linalg.eigvalsh(b.double())[..., -1]  # (10, 66)
    lower, upper = overlap.bounds(b.reshape(-1, 32, 32))
    certified = (upper - lower <= overlap.TOL * lower).double().mean()
    assert 0.8 < float(certified) < 1.0  # the fast path does the work, the fallback is used
    got = overlap.top_eigenvalue(b).double()
    assert float(((got - true) / true).abs().max()) < overlap.TOL


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_statistic_is_the_direct_one(seed: int) -> None:
    w_o = scaled_draws(23, 12, 32, 384, seed)  # 23: sub-batches of 10, 10 and 3
    got = overlap.mean_max_cosine(w_o)  # (23,) float32
    want = mod.mean_max_cosine(w_o.double())  # (23,) the direct route in float64
    torch.testing.assert_close(got.double(), want, rtol=0, atol=STAT_TOL)
    assert float((got.double() - want).abs().max()) > 0  # float32: not the same computation


def test_the_sampler_draws_what_one_randn_draws() -> None:
    """Sub-batches of SUB take the generator's numbers in order: the statistic of the z that
    one randn of k gives, scaled column by column (a wrong scale power is caught)."""
    scale = torch.logspace(0, -1.5, 384)  # (d,)
    got = overlap.sample_mean_max_cosine(23, (12, 32, 384), torch.Generator().manual_seed(4), scale)
    z = torch.randn(23, 384, 384, generator=torch.Generator().manual_seed(4))  # (k, rows, d)
    want = mod.mean_max_cosine((z.double() * scale.double()).view(23, 12, 32, 384))
    torch.testing.assert_close(got.double(), want, rtol=0, atol=STAT_TOL)
    wrong = mod.mean_max_cosine((z.double() * scale.double() ** 2).view(23, 12, 32, 384))
    assert float((got.double() - wrong).abs().max()) > 1e-3


def test_the_exact_gram_sampler_draws_the_same_whatever_the_statistic() -> None:
    """One sampler serves both exact-Gram statistics (the overlap and the mass-weighted one):
    each is its statistic of the same redraws W' = Q diag(s), here 13 of them (sub-batches of 10
    and 3), and W' keeps the Gram diag(s^2) exactly."""
    singular = torch.linspace(2.0, 0.5, 48)  # (r,) < rows: a Gram of rank 48
    draws = [
        overlap.sample_gram(13, (4, 16), singular, torch.Generator().manual_seed(5), statistic)
        for statistic in (lambda w: w, overlap.mean_max_cosine, overlap.gram_mass)
    ]
    w = draws[0]  # (13, 4, 16, 48) the redraws themselves
    gram = w.reshape(13, 64, 48).transpose(-1, -2) @ w.reshape(13, 64, 48)  # (13, r, r)
    torch.testing.assert_close(gram, torch.diag(singular**2).expand_as(gram), atol=1e-5, rtol=0)
    torch.testing.assert_close(draws[1], overlap.mean_max_cosine(w), rtol=0, atol=1e-6)
    torch.testing.assert_close(draws[2], overlap.gram_mass(w), rtol=0, atol=1e-6)
    assert draws[1].shape == (13,) and draws[2].shape == (13, 2)
