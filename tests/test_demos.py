"""Every demo holds at small scale on CPU, and every demo's check can fail."""

from __future__ import annotations

import dataclasses
import importlib
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prep.demos import harness
from prep.demos._torch import torch
from prep.demos.registry import DEMOS, check_kinds, names
from prep.demos.synthetic import attention as attn
from tests.demo_names import DEMO_NAMES, SYNTHETIC_DEMO_NAMES

CPU = torch.device("cpu")

EXPECTED_NAMES = list(SYNTHETIC_DEMO_NAMES)  # the real-weight demos: tests/test_real_demos.py


def module(name: str):
    return importlib.import_module(DEMOS[name].module)


class LazyReports(dict):
    """Each demo's small CPU report, run the first time a test asks for it, so that each test
    pays for the demos it reads within its own timeout (all of them in one fixture set-up ran
    past the 300 s limit on a busy 2-core machine)."""

    def __missing__(self, name: str) -> harness.Report:
        self[name] = module(name).run(scale="small", device="cpu", seed=0)
        return self[name]

    def values(self):  # type: ignore[override] - every demo's report, in registry order
        return [self[name] for name in EXPECTED_NAMES]


@pytest.fixture(scope="module")
def small_reports() -> dict[str, harness.Report]:
    return LazyReports()


def test_registry_names_are_the_contract() -> None:
    assert names() == list(DEMO_NAMES)
    for name, info in DEMOS.items():
        assert info.name == name
        room = {"pretrained": "pretrained"}.get(info.weights, info.module.split(".")[2])
        assert room in ("synthetic", "decoder", "pretrained"), info.module
        assert info.module == f"prep.demos.{room}." + name.replace("-", "_")
        assert info.claim.endswith(".") and "\n" not in info.claim


@pytest.mark.parametrize("name", EXPECTED_NAMES)
def test_module_shape(name: str) -> None:
    mod = module(name)
    for attr in ("SCALES", "build", "check", "contrast", "counterexample", "run"):
        assert hasattr(mod, attr), f"{name} lacks {attr}"
    assert set(mod.SCALES) == {"small", "large"}
    assert name == mod.NAME


@pytest.mark.parametrize("name", EXPECTED_NAMES)
def test_demo_passes_at_small_scale_on_cpu(
    name: str, small_reports: dict[str, harness.Report]
) -> None:
    report = small_reports[name]
    failed = [c for c in report.checks + report.contrast if not c.passed]
    assert report.passed, f"{name}: failed checks {failed}"
    assert report.checks and report.contrast
    assert report.device == "cpu" and report.scale == "small" and report.seed == 0
    assert report.claim == DEMOS[name].claim


@pytest.mark.parametrize("name", EXPECTED_NAMES)
def test_json_report_shape(name: str, small_reports: dict[str, harness.Report]) -> None:
    data = json.loads(small_reports[name].to_json())
    required = {"name", "claim", "device", "dtype", "scale", "seed", "seconds", "passed"}
    assert required | {"checks", "contrast"} <= set(data)
    assert data["passed"] is True
    for c in data["checks"] + data["contrast"]:
        assert {"name", "measured", "expected", "passed"} <= set(c)
        assert isinstance(c["measured"], int | float) and math.isfinite(c["measured"])


@pytest.mark.parametrize("name", EXPECTED_NAMES)
def test_check_fails_on_counterexample(name: str) -> None:
    """Each demo can fail: its own check rejects a setup where the claim is false."""
    mod = module(name)
    cfg = mod.SCALES["small"]
    gen = harness.make_generator(CPU, 0)
    checks = mod.check(mod.counterexample(cfg, CPU, gen))
    failed = [c for c in checks if not c.passed]
    assert failed, f"{name}: every check passed on the counterexample"
    assert all(c.detail for c in failed), "a failing check should carry a hint"


def test_block_diagonal_counterexample_fails_every_check() -> None:
    mod = module("block-diagonal")
    checks = mod.check(mod.counterexample(mod.SCALES["small"], CPU, harness.make_generator(CPU, 1)))
    # the four identities and the untrained dense student; the block-diagonal student's check
    # has its own counterexample in test_decoder_demos.py
    assert [c.passed for c in checks[:5]] == [False] * 5
    assert checks[0].measured > 0.1  # a dense W_O writes clearly outside the slice


def test_block_diagonal_one_off_diagonal_entry_cannot_be_absorbed() -> None:
    """A single nonzero outside head 0's diagonal block already breaks W_V^h B_h absorption."""
    mod = module("block-diagonal")
    no_training = dataclasses.replace(mod.TRAIN, steps=0, seeds=1)
    setup = mod.build(mod.SCALES["small"], CPU, harness.make_generator(CPU, 0), no_training)
    dh = setup.cfg.d_head
    setup.W_O[0, 0, dh] = 0.5  # head 0 now writes into head 1's slice
    absorbed = mod.check(setup)[3]
    assert absorbed.name.startswith("W_V^h B_h with identity W_O")
    assert not absorbed.passed and absorbed.detail and absorbed.measured > 1e-3


@pytest.mark.parametrize("bias", ["zero", "other-head-block"])
def test_head_weighting_mean_ablation_fails_with_the_wrong_bias(bias: str) -> None:
    """Zero-ablation (no bias) or the mean pushed through the wrong block is not mean-ablation."""
    mod = module("head-weighting")
    setup = mod.build(mod.SCALES["small"], CPU, harness.make_generator(CPU, 0))
    if bias == "zero":
        setup.mean_bias = torch.zeros_like(setup.mean_bias)  # (d_model,)
    else:
        z = attn.head_outputs(setup.x, setup.w.W_Q, setup.w.W_K, setup.w.W_V)  # (B,T,h,dh)
        setup.mean_bias = mod.mean_head_output(z, mod.HEAD) @ setup.w.W_O[mod.HEAD + 1]
    checks = mod.check(setup)
    failed = [c.name for c in checks if not c.passed]
    assert len(failed) == 1 and "mean" in failed[0], failed
    assert all(c.detail for c in checks if not c.passed)


def test_param_share_counterexample_fails_exactly_the_w_o_checks() -> None:
    """Shrinking only the GQA module's W_O breaks its count, its width and its share."""
    mod = module("param-share")
    checks = mod.check(mod.counterexample(mod.SCALES["small"], CPU, harness.make_generator(CPU, 0)))
    failed = [c.name for c in checks if not c.passed]
    assert len(failed) == 3 and all(n.startswith("GQA: W_O") for n in failed), failed
    share = next(c for c in checks if c.name.startswith("GQA: W_O share"))
    # W_O shrunk to d^2/4 out of W_Q d^2 + W_K, W_V d^2/4 each + W_O d^2/4 = 7 d^2/4: 1/7, not 2/5
    assert share.measured == pytest.approx(1 / 7)


def test_param_share_states_the_card_numbers(small_reports: dict[str, harness.Report]) -> None:
    names = " | ".join(c.name + " " + c.expected for c in small_reports["param-share"].checks)
    for shown in ("1/4", "16/33", "2/5", "1/12", "n_heads = 32", "n_heads/2 = 16"):
        assert shown in names, shown


def test_learned_suppression_is_deterministic_for_a_seed() -> None:
    mod = module("learned-suppression")
    cfg = dataclasses.replace(mod.SCALES["small"], steps=20)
    a = mod.train(cfg, harness.make_generator(CPU, 3))
    b = mod.train(cfg, harness.make_generator(CPU, 3))
    assert torch.equal(a.ov_final, b.ov_final) and a.loss_final == b.loss_final


def test_exact_zeros_are_reported_exactly(small_reports: dict[str, harness.Report]) -> None:
    zero_checks = [c for r in small_reports.values() for c in r.checks if c.expected == "== 0.0"]
    assert len(zero_checks) >= 7  # per-head-sum's copy-vs-source zero check went (issue 11)
    assert all(c.measured == 0.0 for c in zero_checks)


def test_every_demo_declares_check_kinds() -> None:
    """`prep demo --list` shows each demo's kinds; a demo without CHECK_KINDS shows none."""
    missing = [name for name in DEMOS if check_kinds(name) is None]
    assert not missing, f"declare CHECK_KINDS in: {missing}"


@pytest.mark.parametrize("name", EXPECTED_NAMES)
def test_declared_check_kinds_match_a_small_run(
    name: str, small_reports: dict[str, harness.Report]
) -> None:
    """--list reads CHECK_KINDS without running anything; it must be the truth (the real-weight
    demos' declarations are held to their runs in tests/test_real_demos.py)."""
    assert check_kinds(name) == small_reports[name].kind_counts()


# --------------------------------------------------------------------------- harness


# Checks made on a random draw (a dense W_O, a Gaussian matrix, a random update) state a generic
# fact any weights of that shape show: DESIGN.md calls these sanity checks ("a random matrix has
# full rank, a random W_O writes off-slice"), not identities (audit11).
RANDOM_DRAW_CHECKS = {
    "block-diagonal": ("dense W_O:",),
    "no-wo": ("dense W_O:",),
    "ov-rank": ("random ", "sum over all heads"),
    "lora-wo": ("dense update:",),
    "tensor-parallel": ("rank 0's partial write",),
    "sequence-parallel": ("rank 0's tokens from its own heads only",),
    # contrasts that break an identity on a random draw: how far it misses is no algebra (audit12)
    "fold-bias-ln": ("sigmoid attention:", "gate after attention:"),
    "mla-absorb": ("RoPE on keys:",),
    "scale-migration": ("FFN: GELU",),
    "cross-head-mixing": ("sharing W_O forced block-diagonal",),
}


@pytest.mark.parametrize("name", sorted(RANDOM_DRAW_CHECKS))
def test_facts_of_a_random_draw_are_sanity_checks(
    name: str, small_reports: dict[str, harness.Report]
) -> None:
    report = small_reports[name]
    drawn = [
        c for c in report.checks + report.contrast if c.name.startswith(RANDOM_DRAW_CHECKS[name])
    ]
    assert drawn, name
    assert all(c.kind == harness.SANITY and c.bar for c in drawn), [(c.name, c.kind) for c in drawn]


def test_exactly_zero_is_exact() -> None:
    assert harness.exactly_zero("z", torch.tensor([0.0, -0.0])).passed
    assert not harness.exactly_zero("z", torch.tensor([0.0, 1e-30])).passed
    assert not harness.exactly_zero("z", torch.tensor([float("nan")])).passed


def test_close_follows_assert_close_rule() -> None:
    ref = torch.ones(4)
    assert harness.close("c", ref + 1e-6, ref, rtol=1.3e-6, atol=1e-5).passed
    assert not harness.close("c", ref + 1e-3, ref, rtol=1.3e-6, atol=1e-5).passed
    assert not harness.close("c", ref * float("nan"), ref, rtol=1.0, atol=1.0).passed


def test_tolerance_defaults_and_widening() -> None:
    assert harness.tolerance(torch.float32, 64) == (1.3e-6, 1e-5)
    rtol, atol = harness.tolerance(torch.float32, 4096)
    assert rtol == pytest.approx(8 * 1.3e-6) and atol == pytest.approx(8e-5)


def test_select_device_cpu_and_auto_reason() -> None:
    choice = harness.select_device("cpu")
    assert choice.device.type == "cpu"
    auto = harness.select_device("auto")
    if not torch.cuda.is_available() and auto.device.type == "cpu":
        assert auto.reason == "no cuda or mps available, using cpu"
    if auto.device.type == "cuda":
        assert auto.reason.startswith("cuda: ")


def test_render_lists_every_check_with_its_verdict(small_reports) -> None:
    report = small_reports["per-head-sum"]
    text = harness.render(report)
    assert report.claim.split()[0] in text
    for c in report.checks + report.contrast:
        assert f"PASS  [{c.kind}] {c.name}" in text
    assert "result: all" in text


def test_report_round_trips_through_its_dict(small_reports) -> None:
    """The TUI reads the subprocess's JSON back into the same type the demo returned."""
    from prep.demos.report import Report

    for report in small_reports.values():
        again = Report.from_dict(json.loads(report.to_json()))
        assert again.to_dict() == report.to_dict()


def test_check_kind_is_identity_or_measurement() -> None:
    with pytest.raises(ValueError, match="kind"):
        harness.Check("x", 0.0, "== 0.0", True, kind="evidence")


def test_render_shows_hint_on_failure() -> None:
    bad = harness.Check("thing", 1.0, "== 0.0", False, "did you forget the mask?")
    report = harness.Report(
        "block-diagonal",
        "claim.",
        "cpu",
        "x",
        "cpu",
        "float32",
        "small",
        0,
        {},
        0.1,
        checks=[bad],
        contrast=[],
    )
    text = harness.render(report)
    assert "FAIL  [identity] thing" in text and "hint: did you forget the mask?" in text
    assert not report.passed and "FAILED" in text


# --------------------------------------------------------------------------- properties

sizes = st.tuples(
    st.integers(1, 6),  # n_heads
    st.integers(1, 6),  # d_head
    st.integers(0, 2**31 - 1),  # seed
)


@settings(max_examples=20, deadline=None)
@given(sizes)
def test_property_block_diagonal_writes_exactly_zero_outside_slice(s) -> None:
    n_heads, d_head, seed = s
    mod = module("block-diagonal")
    cfg = attn.Sizes(batch=1, seq_len=5, d_model=n_heads * d_head, n_heads=n_heads)
    no_training = dataclasses.replace(mod.TRAIN, steps=0, seeds=1)  # the identities only
    checks = mod.check(mod.build(cfg, CPU, harness.make_generator(CPU, seed), no_training))
    identities = [c for c in checks if c.kind == harness.IDENTITY]
    assert len(identities) == 4 and all(c.passed for c in identities), checks


@settings(max_examples=20, deadline=None)
@given(sizes)
def test_property_per_head_sum(s) -> None:
    n_heads, d_head, seed = s
    mod = module("per-head-sum")
    cfg = attn.Sizes(batch=2, seq_len=5, d_model=n_heads * d_head, n_heads=n_heads)
    setup = mod.build(cfg, CPU, harness.make_generator(CPU, seed))
    assert all(c.passed for c in mod.check(setup))
    if n_heads > 1 and d_head > 1:  # the layout bug is a no-op when either is 1
        setup.W_flat = mod.layout_bug(setup.W_O)
        assert not all(c.passed for c in mod.check(setup))


@settings(max_examples=20, deadline=None)
@given(sizes)
def test_property_ov_rank_at_most_d_head(s) -> None:
    n_heads, d_head, seed = s
    mod = module("ov-rank")
    cfg = mod.Config(d_model=n_heads * d_head, n_heads=n_heads, heads_checked=n_heads)
    checks = mod.check(mod.build(cfg, CPU, harness.make_generator(CPU, seed)))
    assert all(c.passed for c in checks), checks


kv_sizes = st.integers(1, 6).flatmap(
    lambda h: st.tuples(
        st.just(h),  # n_heads
        st.sampled_from([g for g in range(1, h + 1) if h % g == 0]),  # n_kv_heads
        st.integers(1, 6),  # d_head
        st.integers(0, 2**31 - 1),  # seed
    )
)


@settings(max_examples=20, deadline=None)
@given(kv_sizes)
def test_property_param_share_counts_match_closed_forms(s) -> None:
    n_heads, n_kv_heads, d_head, seed = s
    mod = module("param-share")
    cfg = mod.Config(d_model=n_heads * d_head, n_heads=n_heads, n_kv_heads=n_kv_heads)
    checks = mod.check(mod.build(cfg, CPU, harness.make_generator(CPU, seed)))
    assert all(c.passed for c in checks), [c for c in checks if not c.passed]
    if n_kv_heads < n_heads:  # otherwise the "shrunk" W_O is the real one
        bad = mod.check(mod.counterexample(cfg, CPU, harness.make_generator(CPU, seed)))
        assert not all(c.passed for c in bad)
