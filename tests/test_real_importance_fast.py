"""real-importance, faster with the same numbers (issue 26, round 9).

- A BERT ablation replay computes the real tokens only (demos/pretrained/packed.py): the
  projections and the feed-forward see no padding rows, and every real token's result is the
  library-layer replay's, bit for bit on this CPU.
- The float64 copy of the model is converted once per loaded model (demos/pretrained/twin64.py),
  not deep-copied each run; the layer a run reparameterises is put back exactly, also when the
  run stops half-way.
The report itself is held to the one printed before these changes in test_real_demos.py.
"""

from __future__ import annotations

import pytest

from prep.demos import harness, hooks
from prep.demos._torch import torch
from prep.demos.pretrained import packed, twin64
from prep.demos.pretrained import pretrained as pt
from prep.demos.pretrained import real_importance as ri

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def batch(minilm: pt.Real) -> tuple[pt.Sentences, pt.Capture]:
    s = minilm.sentences(pt.paraphrase_pairs(ri.SCALES["small"].n_pairs))
    return s, minilm.run_with_cache(s)[1]


def rows_into(module: torch.nn.Module, calls: list[int]) -> torch.utils.hooks.RemovableHandle:
    """Record how many rows (positions) each call of a Linear is given."""

    def count(mod: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> None:
        calls.append(inputs[0].numel() // mod.in_features)

    return module.register_forward_pre_hook(count)


def test_a_replay_gives_the_layers_no_padding_rows(minilm: pt.Real, batch) -> None:
    s, cap = batch
    real_tokens, positions = int(s.mask.sum()), s.mask.numel()
    assert real_tokens < positions  # the batch is padded (44 of 240 positions)
    calls: list[int] = []
    block = minilm.layers[5]
    handles = [rows_into(m, calls) for m in (block.attention.self.query, block.output.dense)]
    try:
        hooks.run_with_each_head(minilm, cap, 3, None)  # 12 copies, layers 3..5
    finally:
        for handle in handles:
            handle.remove()
    assert calls == [minilm.n_heads * real_tokens] * 2  # was n_heads * positions each


@pytest.mark.parametrize("layer", range(6))
def test_the_replay_of_real_tokens_is_the_padded_replay(
    minilm: pt.Real, batch, layer: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every real token's last hidden state with each head of `layer` zeroed, packed vs the
    library's layers on the padded batch: equal bit for bit (MKL: a GEMM row does not depend on
    the rows beside it; a masked key adds exactly 0), hence the unchanged report."""
    s, cap = batch
    fast = hooks.run_with_each_head(minilm, cap, layer, None)  # (h, N, T, d)
    monkeypatch.setattr(packed, "fits", lambda model: False)
    padded = hooks.run_with_each_head(minilm, cap, layer, None)
    mask = s.mask.bool()
    if torch.backends.mkl.is_available():
        assert torch.equal(fast[:, mask], padded[:, mask])
    else:  # another BLAS may round a row by the batch's shape
        torch.testing.assert_close(fast[:, mask], padded[:, mask], rtol=0, atol=2e-5)
    assert not fast[:, ~mask].any()  # padding: not computed


def test_gradient_gates_through_the_packed_replay(minilm: pt.Real, batch, monkeypatch) -> None:
    """Michel et al.'s gate gradients flow through the packing (index_select / index_copy) as
    through the padded layers: same gradients to float32 rounding."""
    s, cap = batch
    fast = ri.gradient_scores(minilm, s, cap)
    monkeypatch.setattr(packed, "fits", lambda model: False)
    padded = ri.gradient_scores(minilm, s, cap)
    assert float(fast.abs().min()) > 0
    torch.testing.assert_close(fast, padded, rtol=1e-4, atol=1e-9)


def test_the_float64_copy_is_made_once_and_left_as_it_was(
    minilm: pt.Real, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[pt.Real] = []
    convert = pt.in_float64

    def counted(real: pt.Real) -> pt.Real:
        made.append(real)
        return convert(real)

    monkeypatch.setattr(pt, "in_float64", counted)
    monkeypatch.setattr(twin64, "_copies", type(twin64._copies)())  # a cold worker
    cfg = ri.Config(n_pairs=2, permutations=10)
    first = ri.build(cfg, minilm, harness.make_generator(CPU, 0))
    again = ri.build(cfg, minilm, harness.make_generator(CPU, 0))
    assert made == [minilm]  # converted once, then reused (was: a deep copy every run)
    # each run measured live on the same weights: the same float64 numbers
    for name in ("out_before", "out_after", "act_before", "act_after", "wo_after"):
        assert torch.equal(getattr(first, name), getattr(again, name)), name
    fresh = convert(minilm).model.state_dict()
    kept = twin64.of(minilm).model.state_dict()
    assert all(torch.equal(kept[k], fresh[k]) for k in fresh)  # the reparameterisation undone


def test_a_run_stopped_mid_reparameterisation_leaves_the_copy_intact(minilm: pt.Real) -> None:
    twin = twin64.of(minilm)
    before = {k: v.clone() for k, v in twin.model.state_dict().items()}
    w_o = twin.weights(3).W_O.clone()  # (h, dh, d)
    c = torch.linspace(0.5, 2.0, twin.n_heads, dtype=torch.float64)
    with pytest.raises(RuntimeError), twin64.restoring(twin, 3):
        pt.reparameterise(twin, 3, c)
        assert not torch.equal(twin.weights(3).W_O, w_o)  # changed in place
        raise RuntimeError("cancelled")  # what the worker's cancel raises at a progress point
    after = twin.model.state_dict()
    assert all(torch.equal(after[k], before[k]) for k in before)


@pytest.mark.parametrize("layer", [0, 3, 5])
def test_the_after_pass_from_the_changed_layer_is_the_full_pass(minilm: pt.Real, layer) -> None:
    """Round 10: after the reparameterisation only `layer` and the layers after it run again
    (Real.rerun_from); the last hidden state, padding positions included, and the layer's z are
    those of a full forward pass on the changed weights, bit for bit."""
    twin = twin64.of(minilm)
    s = minilm.sentences(pt.paraphrase_pairs(ri.SCALES["small"].n_pairs))
    with twin64.restoring(twin, layer):
        _, before = twin.run_with_cache(s)
        norms = twin.weights(layer).W_O.norm(dim=(1, 2))
        pt.reparameterise(twin, layer, ri.reversing_factors(norms))
        final, z = twin.rerun_from(before, layer)
        _, full = twin.run_with_cache(s)
    assert torch.equal(final, full.final) and torch.equal(z, full.z[layer])
    assert not torch.equal(z, before.z[layer])  # the layer did run on the changed weights
