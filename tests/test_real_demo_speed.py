"""The real-* demos' faster paths compute what the direct ones do (issue 26: a demo again in the
app's worker in seconds, with the same measurement and every printed digit kept).

- real-importance: an ablation replay starts at the ablated BERT layer from the captured z
  (Q, K, V and the attention are not recomputed for each of the 12 copies); held against the
  library's own forward with the head zeroed at the output projection's input.
- real-block-structure: the statistic against the textbook principal angles (its null's
  cheaper draws, the sequential p-value and the pool: tests/test_block_null.py).
"""

from __future__ import annotations

import importlib

import pytest

from prep.demos import hooks
from prep.demos._torch import torch
from prep.demos.pretrained import pretrained as pt
from prep.demos.registry import DEMOS


def module(name: str):
    return importlib.import_module(DEMOS[name].module)


def library_with_head_zeroed(real: pt.Real, s: pt.Sentences, layer: int, head: int):
    """The library's whole forward with one head's z zeroed where W_O reads it."""

    def zero(mod, inputs):
        z = inputs[0].unflatten(-1, (real.n_heads, real.d_head)).clone()  # (N, T, h, dh)
        z[:, :, head] = 0.0
        return (z.flatten(-2), *inputs[1:])

    handle = real.out_proj(layer).register_forward_pre_hook(zero)
    try:
        with torch.no_grad():
            return real.forward(s)  # (N, T, d_model)
    finally:
        handle.remove()


@pytest.mark.parametrize("layer", [0, 3, 5])
def test_each_head_replay_matches_the_library_forward(minilm: pt.Real, layer: int) -> None:
    s = minilm.sentences(pt.paraphrase_pairs(3))
    _, cap = minilm.run_with_cache(s)
    finals = hooks.run_with_each_head(minilm, cap, layer, None)  # (h, N, T, d)
    mask = s.mask.bool()
    for head in (0, 7, minilm.n_heads - 1):
        want = library_with_head_zeroed(minilm, s, layer, head)
        got = finals[head]
        # float32 through <= 6 layers of O(1)-normalised activations: a few ulps of 1
        torch.testing.assert_close(got[mask], want[mask], rtol=0, atol=2e-5)
        assert float((got - cap.final)[mask].abs().max()) > 1e-3  # the ablation did something


def test_gradient_replay_from_the_cached_first_layer_matches_the_forward(minilm: pt.Real) -> None:
    """run_with_z_edit from layer 0 with the identity edit is the cached run's output at every
    real token (padding is not computed: zeros there, demos/pretrained/packed.py)."""
    s = minilm.sentences(pt.paraphrase_pairs(2))
    final, cap = minilm.run_with_cache(s)
    with torch.no_grad():
        again = minilm.run_with_z_edit(cap, 0, lambda layer, z: z)
    mask = s.mask.bool()
    assert not mask.all()  # the batch has padding
    torch.testing.assert_close(again[mask], final[mask], rtol=0, atol=1e-5)
    assert not again[~mask].any()


def anisotropic_w_o(seed: int) -> torch.Tensor:
    """A W_O-shaped matrix (12 heads x 32 x 384) with a decaying spectrum, like trained W_O."""
    gen = torch.Generator().manual_seed(seed)
    scale = torch.logspace(0, -2, 384)  # (d_model,) column scales
    return torch.randn(12, 32, 384, generator=gen) * scale  # (h, dh, d)


def test_statistic_equals_principal_cosines_by_qr() -> None:
    """mean_max_cosine (Cholesky whitening of one Gram matrix) against the textbook route:
    QR of each head's rows, the SVD of Q_i^T Q_j, the largest singular value, averaged."""
    mod = module("real-block-structure")
    w_o = anisotropic_w_o(1).double()
    q = torch.linalg.qr(w_o.transpose(-1, -2)).Q  # (h, d, dh) orthonormal bases
    i, j = torch.triu_indices(12, 12, 1)
    sigma = torch.linalg.svdvals(q[i].transpose(-1, -2) @ q[j])[..., 0]  # (pairs,)
    torch.testing.assert_close(mod.mean_max_cosine(w_o), sigma.mean(), rtol=1e-12, atol=0)
    # float32, as the nulls compute it: the same to ~1e-6 (three printed digits need 5e-4)
    torch.testing.assert_close(
        mod.mean_max_cosine(w_o.float()).double(), sigma.mean(), rtol=2e-6, atol=0
    )
