"""sequence-parallel: each check fails on the setup that gets it wrong (two gloo processes,
a few seconds per run)."""

from __future__ import annotations

from prep.demos import harness
from prep.demos._torch import torch
from prep.demos.synthetic import sequence_parallel as mod

CPU = torch.device("cpu")


def _failed(**change: bool) -> set[str]:
    setup = mod.build(mod.SCALES["small"], CPU, harness.make_generator(CPU, 0))
    for key, value in change.items():
        setattr(setup, key, value)
    return {c.name.split(":")[-1].split("  ")[0].strip() for c in mod.check(setup) if not c.passed}


def test_bias_on_every_rank_breaks_the_output_checks() -> None:
    assert _failed(bias_on_every_rank=True) == {
        "reduce-scattered tokens",
        "all-gathered LayerNorm(x + attn)",
    }


def test_plain_tensor_parallelism_breaks_only_the_activation_check() -> None:
    assert _failed(plain_tp=True) == {"norm-region activations held per rank (elements)"}
