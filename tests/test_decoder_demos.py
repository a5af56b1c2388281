"""The shipped decoder, its training script, and the demos measured on it or redone with it:
every check of these demos fails on a counterexample (a setup where its claim is false)."""

from __future__ import annotations

import dataclasses
import importlib
import json
import math

import pytest

from prep.demos import harness, hooks
from prep.demos._torch import torch
from prep.demos.decoder import decoder, train_decoder
from prep.demos.registry import DEMOS, check_kinds
from prep.demos.synthetic import attention as attn

CPU = torch.device("cpu")


def module(name: str):
    return importlib.import_module(DEMOS[name].module)


def failing(checks: list[harness.Check]) -> list[str]:
    return [c.name for c in checks if not c.passed]


# --------------------------------------------------------------------------- the decoder


def test_shipped_weights_are_small_and_described() -> None:
    assert decoder.SHIPPED.stat().st_size < 2_000_000
    meta = json.loads(decoder.SHIPPED.with_suffix(".json").read_text())
    for key in ("config", "seed", "steps", "final_train_loss", "heldout_loss",
                "in_context_accuracy", "seconds"):  # fmt: skip
        assert key in meta, key
    cfg, params, _ = decoder.load()
    assert dataclasses.asdict(cfg) == meta["config"]
    assert params["blocks.1.W_O"].shape == (cfg.n_heads, cfg.d_head, cfg.d_model)


def test_shipped_metrics_reproduce_from_the_weights() -> None:
    """The accuracy and loss in decoder.json are what the shipped tensors give on the eval seed."""
    cfg, params, meta = decoder.load()
    got = train_decoder.evaluate(params, cfg, meta["eval_sequences"], meta["eval_seed"])
    assert got["in_context_accuracy"] == pytest.approx(meta["in_context_accuracy"], abs=1e-6)
    assert got["heldout_loss"] == pytest.approx(meta["heldout_loss"], rel=1e-5)


def test_three_training_seeds_ship_with_their_json() -> None:
    """Uncertainty comes from seeds: seed 0 (the shipped model) and seeds 1, 2 beside it, each
    small, each with the JSON its training wrote, whose metrics the tensors reproduce."""
    from prep.demos.decoder import circuit

    files = circuit.seed_files()
    assert files[0] == decoder.SHIPPED and len(set(files)) == 3
    for seed, path in enumerate(files):
        assert path.stat().st_size < 200_000, path
        cfg, params, meta = decoder.load(path)
        assert meta["seed"] == seed and meta["steps"] == 5000 and cfg == decoder.DecoderConfig()
        got = train_decoder.evaluate(params, cfg, meta["eval_sequences"], meta["eval_seed"])
        assert got["in_context_accuracy"] == pytest.approx(meta["in_context_accuracy"], abs=1e-6)


def test_training_script_runs_end_to_end(tmp_path, capsys) -> None:
    """A short run of the real script: it trains, saves, and the file loads back."""
    out = tmp_path / "d.safetensors"
    assert train_decoder.main(["--steps", "30", "--seed", "1", "--out", str(out)]) == 0
    cfg, params, meta = decoder.load(out)
    assert meta["steps"] == 30 and meta["seed"] == 1 and cfg == decoder.DecoderConfig()
    assert meta["final_train_loss"] < 4.5  # ln(64) = 4.16 at chance; not diverged
    assert str(out) in capsys.readouterr().out
    start = decoder.init_params(cfg, torch.Generator().manual_seed(1))
    assert not torch.equal(params["blocks.1.W_O"], start["blocks.1.W_O"])  # it trained


def test_training_script_rejects_bad_steps(tmp_path, capsys) -> None:
    assert train_decoder.main(["--steps", "0", "--out", str(tmp_path / "x.safetensors")]) == 2
    assert "--steps 0" in capsys.readouterr().err
    assert not (tmp_path / "x.safetensors").exists()


def test_large_scale_never_overwrites_the_shipped_model() -> None:
    assert train_decoder.LARGE_OUT != decoder.SHIPPED
    assert train_decoder.LARGE_OUT.parent == decoder.SHIPPED.parent


def test_load_names_a_missing_file(tmp_path) -> None:
    with pytest.raises(decoder.WeightsError, match="not found"):
        decoder.load(tmp_path / "none.safetensors")


def test_demo_without_weights_exits_2_with_one_line(tmp_path, monkeypatch, capsys) -> None:
    from prep.demos import cli

    monkeypatch.setattr(decoder, "SHIPPED", tmp_path / "missing.safetensors")
    monkeypatch.setattr(decoder.load, "__defaults__", (tmp_path / "missing.safetensors", "cpu"))
    assert cli.main(["induction", "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "missing.safetensors" in err[0] and "not found" in err[0]


def test_copy_batch_repeats_the_chunk() -> None:
    cfg = decoder.DecoderConfig()
    data = decoder.copy_batch(cfg, 64, torch.Generator().manual_seed(0))
    b, t = data.predictable.nonzero(as_tuple=True)
    earlier = t - data.chunk[b]
    assert torch.equal(data.tokens[b, t], data.tokens[b, earlier])
    assert torch.equal(data.tokens[b, t + 1], data.tokens[b, earlier + 1])


# --------------------------------------------------------------------------- dla


def dla_setup():
    mod = module("dla")
    return mod, mod.build(mod.SCALES["small"], CPU, harness.make_generator(CPU, 0))


def test_dla_counterexample_breaks_the_split() -> None:
    mod = module("dla")
    checks = mod.check(mod.counterexample(mod.SCALES["small"], CPU, harness.make_generator(CPU, 0)))
    assert not checks[0].passed and checks[0].measured > 1e-3  # a final LayerNorm
    assert checks[1].passed  # the frozen-sigma split is exact on any weights


def test_dla_layernorm_split_needs_the_frozen_sigma() -> None:
    """The parts summed without dividing by sigma miss the LayerNorm logits (what the old
    contrast measured); divided by it they sum exactly."""
    mod, setup = dla_setup()
    total, logits = mod.ln_split(setup.obs)
    torch.testing.assert_close(total, logits, rtol=1e-10, atol=1e-10)
    x = setup.obs.cache.resid[-1]
    assert harness.relative_error(total * mod.sigma(x), logits) > 0.1


def test_dla_measurements_fail_when_their_claims_do() -> None:
    mod, setup = dla_setup()
    top = max((k for k in setup.dla if k[0] == 1), key=setup.dla.get)
    low = min((k for k in setup.dla if k[0] == 1), key=setup.dla.get)
    setup.ablation[low] = setup.ablation[top] + 1.0  # another head's ablation now costs most
    top0 = (0, setup.top0)
    setup.dla[top0] = setup.ablation[top0]  # the key layer-0 head now acts directly
    setup.dla[(1, setup.ind)] = 0.1 * setup.ablation[(1, setup.ind)]  # and the induction head not
    setup.ln_ratios = [[1.0] * 4]  # LayerNorm's scale changes nothing
    checks = mod.check(setup)
    assert checks[0].passed and checks[1].passed and not any(c.passed for c in checks[2:]), checks


def test_dla_layer0_check_holds_at_every_seed_and_fails_at_any_one() -> None:
    """'Mostly indirect' is measured at each shipped seed (audit11): the other seeds' most costly
    layer-0 head is found the same way as seed 0's, and one seed whose head acts directly fails
    the check although seed 0 still passes."""
    mod, setup = dla_setup()
    first = mod.most_costly_layer0(setup.obs)
    top0 = (0, setup.top0)
    assert first[0] == setup.top0
    assert first[1] == pytest.approx(abs(setup.dla[top0]) / setup.ablation[top0], rel=1e-9)
    assert len(setup.indirect_others) == 2
    layer0 = next(c for c in mod.check(setup) if c.name.startswith("the layer-0 head"))
    assert layer0.passed and "worst of 3 seeds" in layer0.name
    head, _ = setup.indirect_others[-1]
    setup.indirect_others[-1] = (head, 0.9)  # seed 2's head now writes most of its effect
    layer0 = next(c for c in mod.check(setup) if c.name.startswith("the layer-0 head"))
    assert not layer0.passed


def test_dla_overstatement_bar_is_the_t_interval_beyond_the_no_layernorm_null() -> None:
    """The LayerNorm check (demos/BARS.md): the 95% t-interval over seeds of the least overstated
    head's ratio must lie beyond 1 + the largest disagreement without a LayerNorm. Fails for a
    mean above 1 with one low seed, for an overstatement inside the null's own spread, and with
    one seed (no interval)."""
    mod, setup = dla_setup()
    assert mod.check(setup)[-1].passed
    assert mod.lower_bound([1.0, 2.0, 3.0]) == pytest.approx(2.0 - 4.303 * 1.0 / 3**0.5)
    setup.ln_ratios = [[1.6] * 4, [1.6] * 4, [0.95] + [1.6] * 3]  # one seed's head not overstated
    assert not mod.check(setup)[-1].passed
    setup.ln_ratios = [[1.5] * 4] * 3  # a tight 1.5 everywhere ...
    assert mod.check(setup)[-1].passed
    setup.plain_ratios = [[1.6] * 4] * 3  # ... is no overstatement if no LayerNorm disagrees more
    low, bar = mod.overstatement(setup)
    assert bar == pytest.approx(1.6) and not mod.check(setup)[-1].passed
    setup.ln_ratios = [[3.0] * 4]  # one seed: no interval
    assert not mod.check(setup)[-1].passed


def test_dla_layernorm_overstates_at_every_seed() -> None:
    """The issue's numbers: frozen-scale DLA 1.5-1.8x what removal with LayerNorm recomputed
    does, at every seed; the same ratio without LayerNorm is 1."""
    mod, setup = dla_setup()
    ratios = [r for seed in setup.ln_ratios for r in seed]
    assert len(setup.ln_ratios) == 3 and min(ratios) > 1.3 and max(ratios) < 2.2
    assert mod.check(setup)[-1].passed and all(
        c.passed for c in mod.contrast(setup, harness.make_generator(CPU, 1))
    )


# --------------------------------------------------------------------------- induction


def induction_setup():
    mod = module("induction")
    return mod, mod.build(mod.SCALES["small"], CPU, harness.make_generator(CPU, 0))


def test_induction_holds_on_the_three_shipped_seeds() -> None:
    mod, setup = induction_setup()
    checks = mod.check(setup)
    assert [s.seed for s in setup.seeds] == [0, 1, 2]
    assert all(c.passed for c in checks), failing(checks)
    for s in setup.seeds:  # the numbers: Q carries the job, K a little, V nothing
        assert s.circuit.drop["q"] > 0.6 and s.circuit.drop["k"] < 0.3
        assert float(s.circuit.duplicate.max()) > 0.8 and float(s.circuit.previous.max()) < 0.3


def test_induction_counterexample_fails_every_check_but_no_value_path() -> None:
    """At initialisation nothing is copied: every check fails, except 'removing layer 0 from the
    values costs little', which a model that copies nothing satisfies (tested below)."""
    mod = module("induction")
    cfg = mod.SCALES["small"]
    checks = mod.check(mod.counterexample(cfg, CPU, harness.make_generator(CPU, 0)))
    passed = [c.passed for c in checks]
    # 'mainly Q' (checks 4 and 5) compares path drops that are all noise at initialisation:
    # whichever way they fall, the large-drop check on the queries path (3) fails.
    assert passed[:4] == [False] * 4 and passed[6:] == [True, False, False, False], checks


def test_induction_path_checks_fail_when_keys_or_values_carry_the_job() -> None:
    """Swap which path's removal hurts: a K-composition model (keys carry the job) fails 'mainly
    Q', a V-composition one fails 'values need not read layer 0'."""
    mod, setup = induction_setup()
    for swap, check_at in (("k", 4), ("v", 6)):
        for s in setup.seeds:
            d = s.circuit.drop
            d["q"], d[swap] = d[swap], d["q"]
        checks = mod.check(setup)
        assert not checks[check_at].passed, (swap, checks[check_at])
        for s in setup.seeds:
            d = s.circuit.drop
            d["q"], d[swap] = d[swap], d["q"]


def test_mainly_q_fails_when_queries_carry_less_than_keys_and_values_or_half_of_all() -> None:
    """'Mainly Q' (demos/BARS.md): q > k + v and q / all > 1/2 at every seed. A model where the
    queries path costs 0.5, keys 0.3 and values 0.3 (q beats each alone, not both together)
    fails the first; one where removing every path costs 1.2 fails the second."""
    mod, setup = induction_setup()
    assert mod.check(setup)[4].passed and mod.check(setup)[5].passed
    last = setup.seeds[-1].circuit
    last.drop.update(q=0.5, k=0.3, v=0.3)
    checks = mod.check(setup)
    assert not checks[4].passed and checks[5].passed, (checks[4], checks[5])
    last.drop.update(k=0.1, v=0.0)
    last.drop_all_paths = 1.2
    checks = mod.check(setup)
    assert checks[4].passed and not checks[5].passed, (checks[4], checks[5])
    last.drop_all_paths = 0.0  # layer 0 does nothing for layer 1: there is no share to have
    assert not mod.check(setup)[5].passed


def test_induction_q_composition_fails_on_shuffled_weights() -> None:
    mod = module("induction")
    model_cfg, params, _ = decoder.load()
    gen = harness.make_generator(CPU, 0)
    seed = mod.measure_one(0, mod.SCALES["small"], decoder.shuffled(params, gen), model_cfg, gen)
    assert mod.q_ratio(seed) <= 1.0


def test_induction_redundancy_check_fails_with_one_working_induction_head() -> None:
    """Silence every layer-1 head but the strongest (W_O blocks zeroed): one head now carries
    the copying, so ablating it alone costs more than the bar."""
    mod = module("induction")
    model_cfg, params, _ = decoder.load()
    cfg = mod.SCALES["small"]
    first = mod.measure_one(0, cfg, params, model_cfg, harness.make_generator(CPU, 0))
    keep = int(first.circuit.induction.argmax())
    params = dict(params)
    w_o = params["blocks.1.W_O"].clone()
    for h in range(model_cfg.n_heads):
        if h != keep:
            w_o[h] = 0.0
    params["blocks.1.W_O"] = w_o
    seed = mod.measure_one(0, cfg, params, model_cfg, harness.make_generator(CPU, 0))
    single = mod.check(mod.Setup(cfg, [seed]))[8]
    assert single.name.startswith("drop with all induction heads ablated together minus")
    assert not single.passed, single


def test_induction_redundancy_fails_for_independent_heads() -> None:
    """'Redundant' (demos/BARS.md): together more than the single drops added up. Heads whose
    single drops add up to the whole (independent) fail at the one seed where they do."""
    mod, setup = induction_setup()
    assert mod.check(setup)[8].passed
    last = setup.seeds[-1]
    last.drop_singles = [last.drop_all / len(last.drop_singles)] * len(last.drop_singles)
    assert not mod.check(setup)[8].passed
    last.drop_singles = []  # no induction head to remove one at a time
    assert not mod.check(setup)[8].passed


def test_named_path_check_fails_when_the_claim_names_a_head_the_queries_do_not_read() -> None:
    """The claim names one layer-0 head (the duplicate-token head) as what layer 1's queries
    read. Removing only that head from the queries costs a large drop; naming instead the
    layer-0 head with the least duplicate-token attention, removed from the queries alone, costs
    little, and the check fails (audit11)."""
    mod, setup = induction_setup()
    named = mod.check(setup)[-1]
    assert named.name.startswith("the named path alone") and named.passed, named
    model_cfg, params, _ = decoder.load()
    obs = decoder.observe(model_cfg, params, 256, harness.make_generator(CPU, 1))
    first = setup.seeds[0]
    wrong = int(first.circuit.duplicate.argmin())
    assert mod.named_path_drop(obs, first.dup) >= mod.DROP_BAR
    first.dup_q_drop = mod.named_path_drop(obs, wrong)
    assert first.dup_q_drop < mod.DROP_BAR
    assert not mod.check(setup)[-1].passed


def test_path_ablation_of_every_head_by_name_is_the_whole_layer() -> None:
    from prep.demos.decoder import circuit

    cfg, params, _ = decoder.load()
    data = decoder.copy_batch(cfg, 8, torch.Generator().manual_seed(0))
    every = circuit.PathAblation(params, data.tokens).logits(("q",))
    named = circuit.PathAblation(params, data.tokens, heads=list(range(cfg.n_heads)))
    torch.testing.assert_close(named.logits(("q",)), every)
    one = circuit.PathAblation(params, data.tokens, heads=[0]).logits(("q",))
    assert not torch.allclose(one, every)


def test_path_ablation_keeps_the_model_when_no_path_is_removed() -> None:
    from prep.demos.decoder import circuit

    cfg, params, _ = decoder.load()
    data = decoder.copy_batch(cfg, 8, torch.Generator().manual_seed(0))
    logits, _ = decoder.forward(params, data.tokens)
    torch.testing.assert_close(circuit.forward_without(params, data.tokens, ()), logits)
    removed = circuit.forward_without(params, data.tokens, ("q",))
    assert not torch.allclose(removed, logits)


def test_composition_table_is_every_pairs_composition_and_a_cache_changes_nothing() -> None:
    """The batched table (induction's null: 3 paths x 100 shuffles per seed) holds each pair's
    own score, on the trained weights and on shuffled ones; the path ablation given the run's
    cache is the one that computes it."""
    from prep.demos.decoder import circuit

    cfg, params, _ = decoder.load()
    gen = torch.Generator().manual_seed(0)
    for weights in (params, decoder.shuffled(params, gen)):
        for path in circuit.PATHS:
            per_pair = torch.stack(
                [
                    torch.stack([circuit.composition(weights, path, w, r) for r in range(4)])
                    for w in range(4)
                ]
            )
            table = circuit.composition_table(weights, path)
            torch.testing.assert_close(table, per_pair, rtol=1e-6, atol=0)
    data = decoder.copy_batch(cfg, 8, gen)
    _, cache = decoder.forward(params, data.tokens)
    for paths in (("q",), ("k", "v"), circuit.PATHS):
        assert torch.equal(
            circuit.forward_without(params, data.tokens, paths, cache=cache),
            circuit.forward_without(params, data.tokens, paths),
        )


def test_k_path_composition_is_the_existing_k_composition() -> None:
    from prep.demos.decoder import circuit

    _, params, _ = decoder.load()
    for w, r in ((0, 0), (1, 2), (3, 1)):
        torch.testing.assert_close(
            circuit.composition(params, "k", w, r), decoder.k_composition(params, (0, w), (1, r))
        )


def test_k_composition_is_the_frobenius_ratio() -> None:
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(6, 6, generator=gen), torch.randn(6, 6, generator=gen)
    assert float(decoder.composition_score(a, b)) == pytest.approx(
        float(torch.linalg.matrix_norm(a @ b) / (a.norm() * b.norm()))
    )
    q = torch.linalg.qr(torch.randn(6, 6, generator=gen)).Q
    assert float(decoder.composition_score(q, q.T)) == pytest.approx(1 / 6**0.5)  # I / (√6·√6)


# --------------------------------------------------------------------------- ov-copying


def test_ov_copying_counterexample_fails() -> None:
    mod = module("ov-copying")
    checks = mod.check(mod.counterexample(mod.SCALES["small"], CPU, harness.make_generator(CPU, 0)))
    assert all(not c.passed for c in checks[:3]), checks


def test_ov_copying_fails_for_a_head_that_does_not_copy() -> None:
    """Hold the least-copying layer-1 head to the bars instead: the copying check fails."""
    mod = module("ov-copying")
    setup = mod.build(mod.SCALES["small"], CPU, harness.make_generator(CPU, 0))
    setup.heads[(1, setup.ind)] = min(setup.heads.values(), key=lambda ov: ov.copying)
    assert not mod.check(setup)[2].passed


def test_copying_null_relabels_outputs() -> None:
    """The copying score's null (demos/BARS.md): a circuit with its output tokens permuted. Its
    mean is 1/vocab whatever the rows are; a circuit whose every row peaks on the *next* token
    (structured, but not copying) scores 0 and cannot beat it, the identity scores 1 and does."""
    mod = module("ov-copying")
    gen = torch.Generator().manual_seed(0)
    vocab = 64
    own = torch.arange(vocab)
    null = mod.relabelled_copying(own, 4000, gen)
    assert float(null.mean()) == pytest.approx(1 / vocab, rel=0.1) and float(null.max()) < 0.2
    shifted = torch.eye(vocab).roll(1, dims=1)  # row i peaks at column i + 1
    assert float((shifted.argmax(-1) == own).double().mean()) == 0.0
    assert float(mod.relabelled_copying(shifted.argmax(-1), 4000, gen).max()) > 0.0
    same = torch.zeros(vocab, dtype=torch.long)  # every row peaks on token 0
    assert torch.all(mod.relabelled_copying(same, 500, gen) <= 1 / vocab)


def test_ov_copying_check_fails_inside_its_permutation_null() -> None:
    """A head whose copying score is no larger than its relabelled maximum at one seed fails,
    as does one never held against the null (NaN)."""
    mod = module("ov-copying")
    setup = mod.build(mod.SCALES["small"], CPU, harness.make_generator(CPU, 0))
    assert mod.check(setup)[2].passed
    last = setup.others[-1]
    setup.others[-1] = dataclasses.replace(last, null_max=last.copying)
    assert not mod.check(setup)[2].passed
    setup.others[-1] = dataclasses.replace(last, null_max=float("nan"))
    assert not mod.check(setup)[2].passed


def test_ov_eigenvalues_match_the_full_circuit() -> None:
    """The d_head eigenvalues from the cyclic permutation are the vocab x vocab circuit's largest."""
    cfg, params, _ = decoder.load()
    params = {k: v.double() for k, v in params.items()}
    small = decoder.ov_eigenvalues(params, 1, 0)
    full = torch.linalg.eigvals(decoder.ov_circuit(params, 1, 0))
    top = full[full.abs().argsort(descending=True)[: cfg.d_head]]
    assert torch.allclose(small.abs().sort().values, top.abs().sort().values, rtol=1e-6)
    assert torch.allclose(small.sum(), full.sum(), rtol=1e-6)


# --------------------------------------------------------------------------- learned-suppression


def test_learned_suppression_untrained_fails_every_check() -> None:
    mod = module("learned-suppression")
    checks = mod.check(mod.counterexample(mod.SCALES["small"], CPU, harness.make_generator(CPU, 0)))
    assert all(not c.passed for c in checks) and all(c.detail for c in checks)


def test_learned_suppression_noise_check_fails_when_noise_heads_read_the_target() -> None:
    """Heads n_useful.. keep the 'noise' label but attend to t-1: they grow, the check fails."""
    mod = module("learned-suppression")
    cfg = dataclasses.replace(mod.SCALES["small"], n_seeds=1)
    run = mod.train(cfg, harness.make_generator(CPU, 0), noise_heads_useful=True)
    run.useful = torch.arange(cfg.n_heads) < cfg.n_useful
    noise, useful, loss = mod._claim_checks([run], "x")
    assert not noise.passed and useful.passed and loss.passed


def test_learned_suppression_batched_training_is_the_separate_trainings() -> None:
    """Every row's runs trained as one batch are `train`'s runs, bit for bit on the CPU (the
    docstring's argument); a batch that mixed up seeds, rows or optimisers would differ."""
    mod = module("learned-suppression")
    cfg = dataclasses.replace(mod.SCALES["small"], steps=12)
    variants = [mod.MAIN, mod.CONTROL, mod.ADAM, mod.ALL_USEFUL]
    batched = mod.train_batch(cfg, CPU, [3, 4], variants)
    for variant, row in zip(variants, batched, strict=True):
        for seed, got in zip([3, 4], row, strict=True):
            one = mod.train(
                cfg,
                torch.Generator().manual_seed(seed),
                optimizer=variant.optimizer,
                weight_decay=variant.weight_decay,
                noise_heads_useful=variant.noise_heads_useful,
            )
            assert torch.equal(got.ov_final, one.ov_final), (variant, seed)
            assert torch.equal(got.ov_init, one.ov_init) and torch.equal(got.useful, one.useful)
            assert (got.loss_init, got.loss_final) == (one.loss_init, one.loss_final)


def test_learned_suppression_t_bound_matches_scipy() -> None:
    from scipy import stats

    mod = module("learned-suppression")
    growth = [0.82, 0.7, 1.01, 0.9, 0.6]
    logs = [math.log(g) for g in growth]
    upper = stats.t.interval(0.90, len(logs) - 1, loc=sum(logs) / 5, scale=stats.sem(logs))[1]
    assert mod.log_upper_bound(growth) == pytest.approx(upper, abs=2e-3)
    assert mod.log_upper_bound([0.5]) == math.inf  # one seed: no interval


def test_learned_suppression_control_rule_fails_when_shrinkage_is_within_seed_noise() -> None:
    """Counterexample to the control/AdamW rule: a median below 1 (last round's rule passed it)
    whose spread over seeds leaves 'no change' inside the interval."""
    mod = module("learned-suppression")
    cfg = dataclasses.replace(mod.SCALES["small"], n_seeds=1)
    run = mod.train(cfg, harness.make_generator(CPU, 0))
    runs = []
    for worst in (0.5, 0.7, 1.4, 0.8, 1.3):  # median 0.8, but two seeds grew
        r = dataclasses.replace(run, ov_final=run.ov_final.clone())
        noise = ~r.useful
        r.ov_final[noise] = r.ov_init[noise] * worst
        runs.append(r)
    noise_check = mod._claim_checks(runs, "x", every_seed=False)[0]
    assert not noise_check.passed and noise_check.measured > 0
    shrunk = [dataclasses.replace(r, ov_final=r.ov_final * 0 + r.ov_init * 0.7) for r in runs]
    for r in shrunk:
        r.ov_final[r.useful] = r.ov_init[r.useful] * 2
    assert mod._claim_checks(shrunk, "x", every_seed=False)[0].passed


# --------------------------------------------------------------------------- cross-head-mixing


def subspace_cosine_scipy(a: torch.Tensor, b: torch.Tensor) -> float:
    from scipy.linalg import subspace_angles

    angles = subspace_angles(a.T.double().numpy(), b.T.double().numpy())  # column spaces
    return float(torch.tensor(angles).min().cos())


@pytest.mark.parametrize("which", ["dense", "shared", "trained0", "trained1"])
def test_principal_cosines_match_scipy(which: str) -> None:
    mod = module("cross-head-mixing")
    setup = mod.build(mod.SCALES["small"], CPU, harness.make_generator(CPU, 0))
    w_o = {"dense": setup.dense, "shared": setup.shared}.get(which)
    if w_o is None:
        w_o = setup.trained[int(which[-1])]
    ours = mod.principal_cosines(w_o)
    for h in range(w_o.shape[0]):
        for g in range(w_o.shape[0]):
            if h != g:
                assert float(ours[h, g]) == pytest.approx(
                    subspace_cosine_scipy(w_o[h], w_o[g]), abs=1e-5
                )


def test_cross_head_mixing_counterexample_fails_every_write_check() -> None:
    mod = module("cross-head-mixing")
    checks = mod.check(mod.counterexample(mod.SCALES["small"], CPU, harness.make_generator(CPU, 0)))
    failed = failing(checks)
    for c in checks:
        if "cosines of W_O[h]" in c.name or "largest cosine over head pairs" in c.name:
            continue  # need a counterexample of their own, below
        assert c.name in failed, c.name


def test_row_dot_products_fail_the_invariance_check(monkeypatch) -> None:
    """The audit's mutation: raw row dot products instead of principal angles must not pass."""
    mod = module("cross-head-mixing")
    setup = mod.build(mod.SCALES["small"], CPU, harness.make_generator(CPU, 0))

    def row_dots(w_o: torch.Tensor) -> torch.Tensor:
        gram = torch.einsum("hkm,gjm->hgkj", w_o, w_o).abs().amax((-2, -1))  # (h, h)
        return gram.fill_diagonal_(0.0)

    monkeypatch.setattr(mod, "principal_cosines", row_dots)
    invariance = next(c for c in mod.check(setup) if "cosines of W_O[h]" in c.name)
    assert not invariance.passed


def test_partial_overlap_fails_on_a_shared_direction() -> None:
    mod = module("cross-head-mixing")
    setup = mod.build(mod.SCALES["small"], CPU, harness.make_generator(CPU, 0))
    setup.dense = setup.shared  # heads 0 and 1 share a direction: a cosine of 1
    singular = setup.trained[1].clone()
    singular[1, 0] = singular[0, 0]  # the trained layer-1 W_O made singular the same way
    setup.trained[1] = singular
    failed = failing(mod.check(setup))
    assert sum("largest cosine over head pairs" in name for name in failed) == 2, failed


def test_reader_direction_sums_heads_without_w_o() -> None:
    mod = module("cross-head-mixing")
    setup = mod.build(mod.SCALES["small"], CPU, harness.make_generator(CPU, 0))
    reader = next(c for c in mod.check(setup) if "reader direction" in c.name)
    assert reader.passed and reader.kind == harness.IDENTITY


# --------------------------------------------------------------------------- others


def test_head_weighting_best_block_fit_is_exact_when_w_o_is_block_diagonal() -> None:
    """The rival is fair: if the target layer's W_O is block-diagonal, the fit reproduces it."""
    mod = module("head-weighting")
    cfg = mod.SCALES["small"]
    gen = harness.make_generator(CPU, 0)
    x, w, z = attn.random_layer(cfg, gen)
    target = attn.project(z, attn.block_diagonal_w_o(cfg, gen))
    assert float(harness.relative_error(mod.best_block_diagonal_fit(z, target), target)) < 1e-5
    dense = attn.project(z, w.W_O)
    assert float(harness.relative_error(mod.best_block_diagonal_fit(z, dense), dense)) > 0.5


def test_block_diagonal_trained_checks_fail_with_the_students_swapped() -> None:
    mod = module("block-diagonal")
    tr = dataclasses.replace(mod.TRAIN, steps=60)
    block = mod.train_student(tr, torch.Generator().manual_seed(1), block=True)
    dense = mod.train_student(tr, torch.Generator().manual_seed(1), block=False)
    null = mod.train_student(tr, torch.Generator().manual_seed(1), block=True, mixing_teacher=False)
    assert dense < block and null < block
    checks = mod.trained_checks({"dense": [block], "block": [null], "block_null": [block]})
    assert all(not c.passed for c in checks)
    assert [c.kind for c in checks] == [harness.SANITY, harness.MEASUREMENT]


def test_block_diagonal_batched_training_is_the_separate_trainings() -> None:
    """The batched students (one training for every seed and kind) end where the separate
    trainings do, within float32 reassociation (the docstring's argument: <= 1e-5 relative),
    and print the same 3 digits; a batch that mixed up seeds or kinds would be far off."""
    mod = module("block-diagonal")
    tr = dataclasses.replace(mod.TRAIN, steps=40)
    seeds = [5, 6]
    batched = mod.train_batch(tr, seeds, CPU)
    for seed, row in zip(seeds, batched, strict=True):
        for kind, got in zip(mod.KINDS, row, strict=True):
            gen = torch.Generator().manual_seed(seed)
            one = mod.train_student(
                tr, gen, block=kind != "dense", mixing_teacher=kind != "block_null"
            )
            assert got == pytest.approx(one, rel=1e-5), (seed, kind)
            assert f"{got:.3g}" == f"{one:.3g}", (seed, kind)


def test_block_diagonal_null_teacher_in_place_of_the_mixing_one_fails() -> None:
    """Counterexample to the measurement: the block student's 'mixing' teacher does not mix.
    Same seeds, so the two error lists are the same numbers: every paired difference is 0, every
    sign assignment ties, and the sign-flip p is 1."""
    mod = module("block-diagonal")
    tr = dataclasses.replace(mod.TRAIN, steps=40, seeds=2)
    gen = harness.make_generator(CPU, 0)
    trained = mod.train_students(tr, gen)
    assert all(d < b for d, b in zip(trained["dense"], trained["block"], strict=True))
    fake = dict(trained, block=list(trained["block_null"]))
    measurement = mod.trained_checks(fake)[1]
    assert not measurement.passed and measurement.measured == 1.0


def test_no_wo_ov_rank_head_weighting_counterexamples_fail_every_check() -> None:
    for name in ("no-wo", "ov-rank", "head-weighting"):
        mod = module(name)
        setup = mod.counterexample(mod.SCALES["small"], CPU, harness.make_generator(CPU, 0))
        checks = mod.check(setup)
        assert all(not c.passed for c in checks), (name, [c.name for c in checks if c.passed])


def test_every_check_of_these_demos_is_labelled() -> None:
    """The decoder demos measure; their pass/fail is not by construction (dla's split excepted).
    learned-suppression's "the loss fell" rows say only that training worked: sanity (audit11)."""
    for name in ("induction", "ov-copying", "learned-suppression"):
        mod = module(name)
        setup = mod.counterexample(mod.SCALES["small"], CPU, harness.make_generator(CPU, 0))
        for c in mod.check(setup):
            precondition = "held-out loss after / before" in c.name
            want = harness.SANITY if precondition else harness.MEASUREMENT
            assert c.kind == want, (name, c.name, c.kind)
            assert not precondition or name == "learned-suppression"


def test_learned_suppression_loss_rows_are_sanity_and_the_rest_measure() -> None:
    """A check that any trainable layer passes on a learnable task (its loss fell) is not
    evidence about what training does to noise heads: it is labelled sanity, with its bar."""
    mod = module("learned-suppression")
    cfg = dataclasses.replace(mod.SCALES["small"], n_seeds=1, steps=5)
    run = mod.train(cfg, harness.make_generator(CPU, 0))
    noise, useful, loss = mod._claim_checks([run, run], "x")
    assert loss.kind == harness.SANITY and "precondition" in loss.bar
    assert noise.kind == useful.kind == harness.MEASUREMENT
    assert check_kinds("learned-suppression") == {"identity": 0, "sanity": 3, "measurement": 7}


def test_ablation_resumed_from_the_cache_equals_a_full_forward() -> None:
    """ablated_logits reuses the unablated run's layers below the first ablated head; the logits
    must be exactly those of a full forward pass with the same ablation."""
    cfg, params, _ = decoder.load(device=torch.device("cpu"))
    params = {k: v.to(torch.float64) for k, v in params.items()}
    gen = torch.Generator().manual_seed(3)
    obs = decoder.observe(cfg, params, 16, gen)
    means = decoder.head_means(obs.cache)
    heads_sets = [[(ly, h)] for ly in range(cfg.n_layers) for h in range(cfg.n_heads)]
    heads_sets.append([(0, 1), (1, 2)])
    for heads in heads_sets:
        full, _ = decoder.forward(
            params,
            obs.data.tokens,
            edit=hooks.set_heads({(ly, h): means[ly][h] for ly, h in heads}),
        )
        fast = decoder.ablated_logits(params, obs.data, obs.cache, heads)
        assert torch.equal(fast, full), heads
    # and the cache it resumed from is left as it was
    again, _ = decoder.forward(params, obs.data.tokens)
    assert torch.equal(again, obs.logits)
    assert len(obs.cache.z) == cfg.n_layers


def test_each_head_in_one_batch_equals_one_head_at_a_time() -> None:
    """demos/hooks.py's seam on the decoder: ablating every head of a layer in one repeated
    batch gives each copy the logits of ablating that head alone, and the cached run's logits
    come back when there is nothing to set."""
    cfg, params, _ = decoder.load(device=torch.device("cpu"))
    params = {k: v.to(torch.float64) for k, v in params.items()}
    obs = decoder.observe(cfg, params, 8, torch.Generator().manual_seed(5))
    means = decoder.head_means(obs.cache)
    model = decoder.Decoder(params)
    for layer in range(cfg.n_layers):
        batched = hooks.run_with_each_head(model, obs.cache, layer, means[layer])
        assert batched.shape == (cfg.n_heads, *obs.logits.shape)
        for h in range(cfg.n_heads):
            alone = decoder.ablated_logits(params, obs.data, obs.cache, [(layer, h)])
            torch.testing.assert_close(batched[h], alone, rtol=0, atol=1e-12)
    assert torch.equal(hooks.run_with_heads_set(model, obs.cache, {}), obs.logits)
