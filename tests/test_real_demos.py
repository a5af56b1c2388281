"""The real-weight demos on the shipped all-MiniLM-L6-v2 (conftest's one load per session), a
tiny random GPT-2 saved to a folder (the --model path for the GPT-2 family), and the CLI's
answers when the optional `real` extra is missing or a --model cannot be loaded."""

from __future__ import annotations

import importlib
import json
import math
from pathlib import Path

import pytest

from prep.demos import cli, harness
from prep.demos._torch import torch
from prep.demos.pretrained import extra
from prep.demos.pretrained import pretrained as pt
from prep.demos.registry import DEMOS, check_kinds
from tests.demo_names import REAL_DEMO_NAMES

CPU = torch.device("cpu")


def module(name: str):
    return importlib.import_module(DEMOS[name].module)


@pytest.fixture(scope="module")
def setups(minilm: pt.Real) -> dict[str, object]:
    """Each demo's small-scale measurements, built once (the ablations take the time)."""
    out = {}
    for name in REAL_DEMO_NAMES:
        mod = module(name)
        out[name] = mod.build(mod.SCALES["small"], minilm, harness.make_generator(CPU, 0))
    return out


@pytest.fixture(scope="module")
def reports(minilm: pt.Real, setups: dict[str, object]) -> dict[str, harness.Report]:
    return {
        name: pt.run_real(DEMOS[name].module, "small", "cpu", 0, real=minilm, setup=setups[name])
        for name in REAL_DEMO_NAMES
    }


def decomposition_error(real: pt.Real, texts: list[str]) -> float:
    """max over layers and real tokens of |sum_h z_h W_O^h + b_O - the library's output|, with
    z recomputed from the layer input by our per-head reading of W_Q, W_K, W_V."""
    s = real.sentences(texts)
    _, cap = real.run_with_cache(s)
    mask = s.mask.bool()
    worst = 0.0
    for layer in range(real.n_layers):
        w = real.weights(layer)
        z = pt.head_outputs(real, layer, cap.attn_in[layer], s.mask, w)  # (N, T, h, dh)
        ours = pt.per_head_writes(z, w.W_O).sum(0) + w.b_O  # (N, T, d_model)
        worst = max(worst, float((ours - cap.proj_out[layer])[mask].abs().max()))
    return worst


def test_minilm_is_what_the_issue_says(minilm: pt.Real) -> None:
    assert (minilm.family, minilm.n_layers, minilm.n_heads) == ("bert", 6, 12)
    assert (minilm.d_model, minilm.d_head) == (384, 32)
    assert minilm.model.config._attn_implementation == "eager"


def test_per_head_decomposition_matches_the_library_forward(minilm: pt.Real) -> None:
    texts = pt.paraphrase_pairs(2)
    assert decomposition_error(minilm, texts) <= 1e-5
    assert decomposition_error(pt.in_float64(minilm), texts) <= 1e-10


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory: pytest.TempPathFactory, minilm: pt.Real) -> str:
    """A randomly initialised 2-layer GPT-2, saved with save_pretrained (plus a tokenizer)."""
    import transformers

    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=minilm.tokenizer.vocab_size, n_positions=64, n_embd=48, n_layer=2, n_head=4
    )
    folder = tmp_path_factory.mktemp("tiny-gpt2")
    transformers.GPT2Model(config).save_pretrained(folder)
    minilm.tokenizer.save_pretrained(folder)  # any tokenizer whose ids fit the vocabulary
    return str(folder)


def test_gpt2_family_loads_and_decomposes(tiny_gpt2: str) -> None:
    real = pt.load(tiny_gpt2, CPU)
    assert (real.family, real.n_layers, real.n_heads, real.d_head) == ("gpt2", 2, 4, 12)
    texts = pt.paraphrase_pairs(3)
    assert decomposition_error(real, texts) <= 1e-5
    assert decomposition_error(pt.in_float64(real), texts) <= 1e-10


@pytest.mark.parametrize("name", ["real-per-head-sum", "real-importance"])
def test_model_flag_runs_a_gpt2_folder(
    name: str, tiny_gpt2: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli.main([name, "--device", "cpu", "--json", "--model", tiny_gpt2])
    data = json.loads(capsys.readouterr().out)
    assert data["sizes"]["family"] == "gpt2" and data["sizes"]["n_layers"] == 2
    if name == "real-per-head-sum":  # an identity: it holds on any checkpoint
        assert code == 0 and data["passed"] is True
    reparam = [c for c in data["checks"] if c["name"].startswith("float64, layer 1:")]
    assert len(reparam) == 1 or name != "real-importance"
    assert all(c["passed"] for c in reparam)


@pytest.mark.parametrize("name", REAL_DEMO_NAMES)
def test_report_shape_and_declared_kinds(name: str, reports: dict[str, harness.Report]) -> None:
    report = reports[name]
    assert report.claim == DEMOS[name].claim and DEMOS[name].weights == "pretrained"
    assert report.sizes["model"] == extra.DEFAULT_MODEL_NAME
    assert report.kind_counts() == check_kinds(name)
    for c in report.checks + report.contrast:
        assert isinstance(c.measured, int | float) and c.measured == c.measured  # not NaN
    json.loads(report.to_json())


@pytest.mark.parametrize("name", ["real-per-head-sum", "real-ov-rank", "real-importance"])
def test_claim_holds_on_minilm(name: str, reports: dict[str, harness.Report]) -> None:
    report = reports[name]
    assert report.passed, [c for c in report.checks + report.contrast if not c.passed]


GOLDEN = Path(__file__).parent / "golden" / "real-importance-seed0.json"


def same_numbers(got: object, want: object, where: str = "") -> list[str]:
    """Where two JSON values differ: strings and flags exactly; numbers to 1e-9 relative, or
    1e-12 absolute for the float64 identities' rounding-level values (bar 1e-10). On the
    machine the golden file came from they are equal bit for bit."""
    if isinstance(want, dict) and isinstance(got, dict):
        if set(got) != set(want):
            return [f"{where}: keys {sorted(set(got) ^ set(want))}"]
        return [d for k in want for d in same_numbers(got[k], want[k], f"{where}.{k}")]
    if isinstance(want, list) and isinstance(got, list):
        if len(got) != len(want):
            return [f"{where}: {len(got)} items, not {len(want)}"]
        return [
            d
            for i, (g, w) in enumerate(zip(got, want, strict=True))
            for d in same_numbers(g, w, f"{where}[{i}]")
        ]
    if isinstance(want, float) and isinstance(got, int | float) and not isinstance(got, bool):
        ok = math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12)
        return [] if ok else [f"{where}: {got!r}, not {want!r}"]
    return [] if got == want else [f"{where}: {got!r}, not {want!r}"]


def test_importance_report_is_the_one_before_the_speedups(reports) -> None:
    """Issue 26 made real-importance faster (no padding in its replays, the float64 copy made
    once): the same statistic, null, checks and labels, so every number and printed digit of
    the seed-0 report is the one the direct code printed (tests/golden, from `prep demo
    real-importance --json --seed 0` before the change; the timing note left out)."""
    want = json.loads(GOLDEN.read_text())
    del want["_about"]
    report = reports["real-importance"].to_dict()
    got = {key: report[key] for key in want} | {"notes": report["notes"][1:]}
    assert same_numbers(got, want) == []


def test_block_structure_holds_on_minilm(reports: dict[str, harness.Report]) -> None:
    """On a default run every check holds: six shares and one overlap check over the layers,
    against redraws that keep each layer's Gram exactly (audit13; the covariance null retired)."""
    report = reports["real-block-structure"]
    assert report.passed, [c.name for c in report.checks + report.contrast if not c.passed]
    overlaps = [c for c in report.checks if "keeping W_O's Gram exactly" in c.name]
    assert len(overlaps) == 1 and not any("row covariance" in c.name for c in report.checks)


def test_importance_task_metric_is_unsaturated_and_bootstrapped(setups) -> None:
    """The task effect is a margin far from any floor (the training loss is not), and the
    hidden-vs-task check passes on MiniLM with its interval above 0 in every layer."""
    from prep.demos.pretrained import task_metric as tm

    setup = setups["real-importance"]
    s = setup.real.sentences(pt.paraphrase_pairs(setup.cfg.n_pairs))
    _, cap = setup.real.run_with_cache(s)
    margins = tm.margins(cap.final, s.mask)
    assert bool((margins > 0.2).all()) and bool((margins < 0.9).all())  # not saturated
    assert setup.task.shape == (6, 12, setup.cfg.n_pairs)
    assert float(setup.task.abs().max()) > 1e-3  # single heads move it
    rho, lo, hi = tm.bootstrap_rho(setup.act[5], setup.task[5], 500, torch.Generator())
    assert lo <= hi and lo >= -1 and hi <= 1


def test_covariance_null_keeps_anisotropy_that_a_gaussian_null_lacks(minilm: pt.Real) -> None:
    """The issue's numbers: blocks drawn from each layer's own covariance overlap as much as the
    trained heads or more, while the isotropic null sits far below them (so the old 'more than
    chance' was anisotropy)."""
    mod = module("real-block-structure")
    gen = torch.Generator().manual_seed(0)
    for layer in (0, 4, 5):
        w_o = minilm.weights(layer).W_O.detach()
        trained = float(mod.mean_max_cosine(w_o.double()))
        cov = mod.covariance_null(w_o, 20, gen)
        iso = mod.gaussian_null(w_o, 20, gen)
        assert float(iso.max()) < 0.55 and float(cov.mean()) > 0.65, layer
        assert trained <= float(cov.max()), layer
        assert 100 < mod.directions_for(w_o) < 0.6 * minilm.d_model


def test_block_structure_shares_are_dense(reports: dict[str, harness.Report]) -> None:
    """The density half of the claim: every layer's diagonal share sits inside its null."""
    shares = [c for c in reports["real-block-structure"].checks if "diagonal" in c.name]
    assert len(shares) == 6 and all(c.passed for c in shares)


# --------------------------------------------------------------------------- counterexamples


def test_counterexample_is_break_claim_of_a_fresh_build(minilm: pt.Real) -> None:
    mod = module("real-ov-rank")
    checks = mod.check(
        mod.counterexample(mod.SCALES["small"], minilm, harness.make_generator(CPU, 0))
    )
    assert not any(c.passed for c in checks)


@pytest.mark.parametrize("name", REAL_DEMO_NAMES)
def test_counterexample_fails_every_per_layer_check(
    name: str, minilm: pt.Real, setups: dict[str, object]
) -> None:
    """Each demo can fail: on shuffled or reparameterised weights its checks reject the claim."""
    mod = module(name)
    checks = mod.check(mod.break_claim(setups[name]))  # counterexample() on the shared setup
    failed = [c for c in checks if not c.passed]
    assert failed and all(c.detail for c in failed)
    if name == "real-importance":
        # W_O norms reparameterised to follow the effect ranking: the comparison fails in
        # every layer; activation scores ranking the heads backwards fail the rank test.
        versus = [c for c in checks if "- rho(W_O norm)" in c.name]
        ranked = [c for c in checks if "rho(activation-aware score" in c.name]
        # and a job that is exactly the hidden-state change: write size predicts it as well
        task = [c for c in checks if "paraphrase-retrieval margin" in c.name]
        assert len(versus) == len(ranked) == len(task) == minilm.n_layers
        assert not any(c.passed for c in versus + ranked + task)
    else:
        per_layer = [c for c in checks if c.name.startswith("layer ")]
        assert len(per_layer) >= minilm.n_layers and not any(c.passed for c in per_layer)


def test_reparameterisation_checks_catch_a_forgotten_bias(minilm: pt.Real) -> None:
    """W_V^h scaled but b_V^h not: the function changes, and the float64 check sees it."""
    twin = pt.in_float64(minilm)
    s = twin.sentences(pt.paraphrase_pairs(1))
    before = twin.run_with_cache(s)[0]
    c = torch.linspace(0.5, 2.0, twin.n_heads, dtype=torch.float64)
    pt.reparameterise(twin, 3, c, bias=False)
    assert float((twin.run_with_cache(s)[0] - before).abs().max()) > 1e-6
    pt.reparameterise(twin, 3, 1 / c, bias=False)  # undone
    pt.reparameterise(twin, 3, c)  # done right
    assert float((twin.run_with_cache(s)[0] - before).abs().max()) <= 1e-10


def test_reparameterisation_checks_fail_when_nothing_was_reversed(setups) -> None:
    """c_h = 1: W_O norms keep their order, so the reversal check and the contrast fail."""
    import dataclasses

    mod = module("real-importance")
    setup = setups["real-importance"]
    same = dataclasses.replace(setup, wo_after=setup.wo_norm[setup.reparam_layer].clone())
    reversal = next(c for c in mod.check(same) if "W_O norms after" in c.name)
    assert not reversal.passed and reversal.measured == 1.0
    assert not mod.contrast(same, harness.make_generator(CPU, 0))[0].passed
    shifted = dataclasses.replace(
        setup, out_after=setup.out_after + 1e-6, act_after=setup.act_after * (1 + 1e-6)
    )
    broken = [c for c in mod.check(shifted) if not c.passed and c.kind == "identity"]
    assert {c.name.split(": ", 1)[1][:22] for c in broken} == {
        "W_V^h, b_V^h * c_h and",
        "activation-aware score",
    }
    assert all(c.detail for c in broken)


# --------------------------------------------------------------------------- the CLI


def test_missing_extra_is_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(extra, "_installed", lambda m: m != extra.MODEL_PACKAGE)
    for name in REAL_DEMO_NAMES:
        assert cli.main([name, "--device", "cpu"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1
        assert "pip install 'prep[real]'" in err and extra.MODEL_PACKAGE in err
    # with --model only transformers is needed, so the same install is not asked for
    assert extra.missing("some/folder") is None


@pytest.mark.parametrize("model", ["/no/such/folder", "__file__"])
def test_bad_model_is_one_line_and_exit_2(model: str, capsys, tmp_path) -> None:
    target = str(tmp_path) if model == "__file__" else model  # an empty folder: no config
    assert cli.main(["real-ov-rank", "--device", "cpu", "--model", target]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--model" in err and "Traceback" not in err


def test_model_flag_is_for_real_demos_only(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["per-head-sum", "--model", "x"]) == 2
    assert "real-weight demos only" in capsys.readouterr().err


def test_list_json_has_claim_weights_cards_and_kinds(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--list", "--json"], linked_cards=lambda n: [f"card-{n}"]) == 0
    entries = json.loads(capsys.readouterr().out)
    assert [e["name"] for e in entries] == list(DEMOS)
    for e in entries:
        assert e["claim"] == DEMOS[e["name"]].claim and e["weights"] == DEMOS[e["name"]].weights
        assert e["cards"] == [f"card-{e['name']}"]
        assert e["checks"] == check_kinds(e["name"])
    real = [e for e in entries if e["weights"] == "pretrained"]
    assert [e["name"] for e in real] == list(REAL_DEMO_NAMES)
    # the demos that claim something of the trained weights carry measurements; the others are
    # an identity (real-per-head-sum) and a generic rank fact (real-ov-rank): sanity
    measured = {e["name"] for e in real if e["checks"]["measurement"] >= 1}
    assert measured == {"real-block-structure", "real-importance"}
    assert cli.main(["--list"]) == 0
    out = capsys.readouterr().out
    assert "weights: pretrained; 0 measurement(s), 6 sanity check(s), 1 identity check(s)" in out


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("name", REAL_DEMO_NAMES)
def test_real_demos_run_on_cuda(name: str) -> None:
    report = module(name).run(scale="small", device="cuda", seed=0)
    assert report.device == "cuda"
    assert report.kind_counts() == check_kinds(name)


@pytest.mark.parametrize("model", ["", "   "])
def test_an_empty_model_is_refused_not_the_default(
    model: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # `--model "$MODEL"` with MODEL unset ran the shipped model as if --model were absent
    assert cli.main(["real-ov-rank", "--device", "cpu", "--model", model]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--model is empty" in err, err
