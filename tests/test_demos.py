"""Every demo holds at small scale on CPU, and every demo's check can fail."""

from __future__ import annotations

import importlib
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prep.demos import attention as attn
from prep.demos import harness
from prep.demos._torch import torch
from prep.demos.registry import DEMOS, names

CPU = torch.device("cpu")

EXPECTED_NAMES = [
    "block-diagonal",
    "no-wo",
    "per-head-sum",
    "cross-head-mixing",
    "head-weighting",
    "importance-reparam",
    "ov-rank",
    "fold-wo",
    "learned-suppression",
]


def module(name: str):
    return importlib.import_module(DEMOS[name].module)


@pytest.fixture(scope="module")
def small_reports() -> dict[str, harness.Report]:
    return {name: module(name).run(scale="small", device="cpu", seed=0) for name in names()}


def test_registry_names_are_the_contract() -> None:
    assert names() == EXPECTED_NAMES
    for name, info in DEMOS.items():
        assert info.name == name
        assert info.module == "prep.demos." + name.replace("-", "_")
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
    assert [c.passed for c in checks] == [False, False, False]
    assert checks[0].measured > 0.1  # a dense W_O writes clearly outside the slice


def test_learned_suppression_is_deterministic_for_a_seed() -> None:
    mod = module("learned-suppression")
    a = mod.run(seed=3)
    b = mod.run(seed=3)
    assert [c.measured for c in a.checks] == [c.measured for c in b.checks]


def test_exact_zeros_are_reported_exactly(small_reports: dict[str, harness.Report]) -> None:
    zero_checks = [c for r in small_reports.values() for c in r.checks if c.expected == "== 0.0"]
    assert len(zero_checks) >= 8
    assert all(c.measured == 0.0 for c in zero_checks)


# --------------------------------------------------------------------------- harness


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
        assert f"PASS  {c.name}" in text
    assert "result: all" in text


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
    assert "FAIL  thing" in text and "hint: did you forget the mask?" in text
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
    checks = mod.check(mod.build(cfg, CPU, harness.make_generator(CPU, seed)))
    assert all(c.passed for c in checks), checks


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
