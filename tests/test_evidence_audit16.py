"""Audit16's evidence fixes, each held by a test that fails on the code before it:

- induction's ablation checks remove the layer-1 heads whose own twin-excess lower bound clears
  ATTENTION_BAR (demos/BARS.md, audit16), not every head with raw attention >= 0.5: a head that
  attends there by position (the same attention on its twins) is left out, and printed as such.
"""

from __future__ import annotations

import dataclasses
import importlib

import pytest
import torch

from prep.demos import harness
from prep.demos.decoder import circuit, decoder
from prep.demos.registry import DEMOS

CPU = torch.device("cpu")
ind = importlib.import_module(DEMOS["induction"].module)


def positional(t: circuit.TwinAttention, head: int) -> circuit.TwinAttention:
    """`t` with `head`'s attention on its twins made equal to its raw attention: a head that
    attends there whether or not the tokens repeat (excess 0, se 0)."""
    twin, excess, se = t.twin.clone(), t.excess.clone(), t.se.clone()
    twin[head], excess[head], se[head] = t.raw[head], 0.0, 0.0
    return dataclasses.replace(t, twin=twin, excess=excess, se=se)


@pytest.fixture(scope="module")
def seed0() -> tuple:
    """The shipped decoder trained at seed 0, as the demo loads it, and its circuit measured
    with twins (the demo's own generators)."""
    model_cfg, params, meta = decoder.load(circuit.seed_files()[0], device=CPU)
    gen = harness.make_generator(CPU, 0)
    twin_gen = torch.Generator().manual_seed(gen.initial_seed() + ind.TWIN_SEED + int(meta["seed"]))
    cfg = ind.SCALES["small"]
    c = circuit.measure(params, model_cfg, cfg.n_sequences, cfg.n_shuffles, gen, twin_gen)
    return model_cfg, params, c


def test_every_shipped_induction_head_clears_its_own_twin_bound(seed0) -> None:
    """Outcome (a) of the BARS entry at seed 0: all four heads selected, none raw-only."""
    model_cfg, _, c = seed0
    chosen, raw_only = ind.select(c)
    assert chosen == list(range(model_cfg.n_heads)) and raw_only == []
    assert bool((c.twins[1].bound(ind.Z_TWIN) >= ind.ATTENTION_BAR).all())


@pytest.mark.parametrize("head", [0, 1, 2, 3])
def test_a_head_whose_excess_is_broken_leaves_the_selection(seed0, head) -> None:
    """The same circuit with one head made positional: its raw attention still clears the old
    rule (>= 0.5), but it is not selected; restoring its excess puts it back."""
    _, _, c = seed0
    broken = dataclasses.replace(c, twins=[c.twins[0], positional(c.twins[1], head)])
    assert float(broken.induction[head]) >= ind.ATTENTION_BAR  # the old rule keeps it
    chosen, raw_only = ind.select(broken)
    assert head not in chosen and raw_only == [head]
    assert chosen == [h for h in range(4) if h != head]
    assert ind.select(c)[0] == list(range(4))


def test_the_ablation_removes_only_the_selected_heads(seed0, monkeypatch) -> None:
    """measure_one wires the selection into the ablation: with head 2 made positional the
    all-heads ablation removes three heads, the singles are three, and the check prints the
    head left out with its bound."""
    model_cfg, params, _ = seed0
    real_measure = circuit.measure

    def measure_breaking_head_2(*args, **kwargs):
        c = real_measure(*args, **kwargs)
        return dataclasses.replace(c, twins=[c.twins[0], positional(c.twins[1], 2)])

    monkeypatch.setattr(circuit, "measure", measure_breaking_head_2)
    cfg = ind.SCALES["small"]
    s = ind.measure_one(0, cfg, params, model_cfg, harness.make_generator(CPU, 0))
    assert s.inductors == [0, 1, 3] and s.raw_only == [2] and len(s.drop_singles) == 3
    assert "L1H0, L1H1, L1H3 induction" in ind.head_list(s)
    assert "raw >= 0.5 but bound below it: L1H2 0.00" in ind.head_list(s)


def test_the_shipped_checks_print_each_heads_bound_and_count() -> None:
    setup = ind.build(ind.SCALES["small"], CPU, harness.make_generator(CPU, 0))
    names = [c.name for c in ind.check(setup)]
    (together,) = [n for n in names if n.startswith("in-context accuracy drop with all induction")]
    assert "heads per seed 4, 4, 4, each attending because of the repeat" in together
    (layer1,) = [n for n in names if n.startswith("layer 1: largest attention")]
    assert layer1.count("induction (bounds ") == 3 and "bound below it" not in layer1
