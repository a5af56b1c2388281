"""What every demo shares: device choice, seeding, timing, checks, the report and the runner.

A demo module provides `build(cfg, device, generator) -> setup`, `check(setup) -> list[Check]`
(measures only, so a test can hand it a counterexample), `contrast(setup, generator)` (the same
measurement on a variant where the claim would be false), `counterexample(cfg, device, generator)`
and the constants `NAME`, `SCALES` ({"small": cfg, "large": cfg}), `DTYPE` and `CONTRAST_LABEL`,
with its notes either as a list `NOTES` or as a function `notes(cfg) -> list[str]` when they
quote the sizes. Its `run(scale, device, seed) -> Report` is `run_module(__name__, ...)` below.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import math
import os
import platform
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from prep.demos._torch import torch
from prep.demos.registry import DEMOS
from prep.demos.report import (
    IDENTITY,
    MEASUREMENT,
    SANITY,
    Check,
    Report,
    glossary_for,
    observing_checks,
    render,
)

# Check, Report and render live in the torch-free report module; demos import them from here.
__all__ = ["IDENTITY", "MEASUREMENT", "SANITY", "Check", "Report", "render"]

# the bar text of a `sanity` check on a random draw (a contrast's dense or generic matrix):
# DESIGN.md counts such generic facts as sanity, not identity (they are not algebra)
RANDOM_DRAW = "a fact of a random draw (any weights of this shape show it), not algebra"

DEVICES = ("auto", "cpu", "cuda", "mps")
SCALES = ("small", "large")


class DeviceError(Exception):
    """The requested device is not available; the message is one line for the user."""


# --------------------------------------------------------------------------- devices


@dataclass(frozen=True)
class DeviceChoice:
    device: torch.device
    name: str  # "NVIDIA H200", "Apple MPS", or the CPU's name
    reason: str  # "cuda: NVIDIA H200" / "no cuda or mps available, using cpu"


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def _cpu_name() -> str:
    return platform.processor() or platform.machine() or "cpu"


def select_device(requested: str | DeviceChoice = "auto") -> DeviceChoice:
    """auto = cuda, then mps, then cpu. Raises DeviceError when an explicit device is missing."""
    if isinstance(requested, DeviceChoice):
        return requested
    if requested not in DEVICES:
        raise DeviceError(f"unknown device {requested!r}; choose one of {', '.join(DEVICES)}")
    if requested in ("auto", "cuda") and torch.cuda.is_available():
        name = torch.cuda.get_device_name(0)
        suffix = "" if requested == "auto" else " (requested)"
        return DeviceChoice(torch.device("cuda"), name, f"cuda: {name}{suffix}")
    if requested == "cuda":
        build = f"cuda {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
        raise DeviceError(
            f"--device cuda: torch.cuda.is_available() is False (torch {torch.__version__}, "
            f"{build}); use --device auto or --device cpu"
        )
    if requested in ("auto", "mps") and _mps_available():
        suffix = "" if requested == "auto" else " (requested)"
        return DeviceChoice(torch.device("mps"), "Apple MPS", f"mps: Apple GPU{suffix}")
    if requested == "mps":
        raise DeviceError(
            "--device mps: torch.backends.mps.is_available() is False; "
            "use --device auto or --device cpu"
        )
    reason = "cpu (requested)" if requested == "cpu" else "no cuda or mps available, using cpu"
    return DeviceChoice(torch.device("cpu"), _cpu_name(), reason)


@contextlib.contextmanager
def exact_fp32(device: torch.device) -> Iterator[None]:
    """Disable TF32 on CUDA for the duration: the checks need true fp32 matmuls.

    TF32 keeps 10 mantissa bits, so an fp32 allclose at rtol 1.3e-6 would fail for the wrong
    reason. Elsewhere this is a no-op.
    """
    if device.type != "cuda":
        yield
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # newer torch nudges towards the fp32_precision API
        old = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


def make_generator(device: torch.device, seed: int) -> torch.Generator:
    """A generator on `device` seeded with `seed`; also seeds the global RNGs."""
    torch.manual_seed(seed)
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    return gen


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()
    elif device.type == "mps":
        torch.mps.synchronize()


# --------------------------------------------------------------------------- checks

# torch.testing.assert_close's default (rtol, atol) per dtype.
_ASSERT_CLOSE_DEFAULTS: dict[torch.dtype, tuple[float, float]] = {
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
}


def tolerance(dtype: torch.dtype, inner_dim: int = 64) -> tuple[float, float]:
    """(rtol, atol): assert_close's defaults for `dtype`, widened by sqrt(inner_dim / 64).

    Two ways of summing the same inner_dim products differ by rounding error that grows like
    sqrt(inner_dim) (a random walk of roundings), so a d_model-4096 reduction gets 8x the
    assert_close default; up to inner_dim 64 the defaults apply unchanged.
    """
    rtol, atol = _ASSERT_CLOSE_DEFAULTS[dtype]
    widen = max(1.0, math.sqrt(inner_dim / 64))
    return rtol * widen, atol * widen


def _number(value: torch.Tensor | float | int) -> float:
    if isinstance(value, torch.Tensor):
        return float(value.detach().to("cpu", torch.float64).item())
    return float(value)


def exactly_zero(
    name: str, values: torch.Tensor, detail: str = "", *, kind: str = IDENTITY, bar: str = ""
) -> Check:
    """max |values| == 0.0, compared exactly (no tolerance: the claim is a structural zero)."""
    measured = _number(values.abs().max()) if values.numel() else 0.0
    bar = bar or "a structural zero: no rounding can produce a nonzero entry"
    return Check(name, measured, "== 0.0", measured == 0.0, detail, kind, bar)


def equals(
    name: str,
    measured: int,
    expected: int,
    detail: str = "",
    *,
    kind: str = IDENTITY,
    bar: str = "",
) -> Check:
    ok = int(measured) == expected
    return Check(name, int(measured), f"== {expected}", ok, detail, kind, bar)


def at_most(
    name: str,
    measured: torch.Tensor | float,
    bound: float,
    detail: str = "",
    *,
    kind: str = IDENTITY,
    bar: str = "",
) -> Check:
    value = _number(measured)
    return Check(name, value, f"<= {bound:g}", value <= bound, detail, kind, bar)


def at_least(
    name: str,
    measured: torch.Tensor | float,
    bound: float,
    detail: str = "",
    *,
    kind: str = IDENTITY,
    bar: str = "",
) -> Check:
    value = _number(measured)
    return Check(name, value, f">= {bound:g}", value >= bound, detail, kind, bar)


def close(
    name: str,
    actual: torch.Tensor,
    expected: torch.Tensor,
    *,
    rtol: float,
    atol: float,
    detail: str = "",
    kind: str = IDENTITY,
) -> Check:
    """assert_close's rule elementwise: |actual - expected| <= atol + rtol * |expected|.

    `measured` is the largest |actual - expected|; NaN or inf anywhere fails.
    """
    actual = actual.detach().to(expected.dtype)
    diff = (actual - expected.detach()).abs()
    ok = bool(torch.isclose(actual, expected.detach(), rtol=rtol, atol=atol).all())
    measured = _number(diff.max()) if diff.numel() else 0.0
    rule = f"max |diff| within allclose(rtol={rtol:.2g}, atol={atol:.2g})"
    return Check(name, measured, rule, ok, detail, kind)


def approx(
    name: str,
    measured: torch.Tensor | float,
    target: float,
    *,
    rtol: float,
    detail: str = "",
    kind: str = IDENTITY,
) -> Check:
    """A scalar within rtol of target (relative: |measured - target| <= rtol * |target|)."""
    value = _number(measured)
    ok = math.isfinite(value) and abs(value - target) <= rtol * abs(target)
    return Check(name, value, f"== {target:g} (rtol={rtol:g})", ok, detail, kind)


def relative_error(actual: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """||actual - reference||_F / ||reference||_F, a scalar tensor."""
    return (actual - reference).norm() / reference.norm()


# --------------------------------------------------------------------------- running

PROGRESS_PREFIX = "progress: "


# Where progress and checks go while a demo runs inside the demo worker (prep.demos.worker):
# called as listener(event, payload) with ("progress", message), ("check", (section, check)) for
# each check the moment it is made, and ("checks", (section, checks)) once a section is done (the
# section's checks as the report holds them: what a front end shows in the end).
# It may raise (the worker's way to stop a demo the learner left) at any of these points.
Listener = Callable[[str, Any], None]
_listener: Listener | None = None


@contextlib.contextmanager
def listening(listener: Listener) -> Iterator[None]:
    """Send demo progress and checks to `listener` instead of stderr (the worker runs one demo
    at a time, on one thread)."""
    global _listener
    old, _listener = _listener, listener
    try:
        yield
    finally:
        _listener = old


@contextlib.contextmanager
def measuring(section: str) -> Iterator[None]:
    """Inside the demo worker: send each Check made in the block to the listener as it is made,
    tagged with `section` ("claim" or "contrast"). Elsewhere it does nothing."""
    listener = _listener
    if listener is None:
        yield
        return

    def made(check: Check) -> None:
        listener("check", (section, check))

    with observing_checks(made):
        yield


def not_streamed() -> contextlib.AbstractContextManager[None]:
    """Checks made inside are a demo's intermediates (it reports others made from them): not
    streamed one by one."""
    return observing_checks(None)


def emit_checks(section: str, checks: list[Check]) -> None:
    """The checks of one section ("claim" or "contrast") the moment they are measured."""
    if _listener is not None:
        _listener("checks", (section, checks))


def progress(message: str) -> None:
    """One line on stderr saying what the demo is doing now ("loading all-MiniLM-L6-v2").

    Printed when stderr is a terminal (a person waits on `prep demo`) or when PREP_DEMO_PROGRESS=1:
    front ends that run a demo in a subprocess (the TUI's demo screen) set it, read stderr line by
    line and show the latest `progress: ...` line while the demo runs. stdout stays the report.
    Inside the demo worker it goes to the worker's listener instead.
    """
    if _listener is not None:
        _listener("progress", message)
        return
    wanted = os.environ.get("PREP_DEMO_PROGRESS") == "1" or sys.stderr.isatty()
    if wanted:
        from prep.demos.safetext import one_line_safe  # (a --model name is in some)

        print(PROGRESS_PREFIX + one_line_safe(message), file=sys.stderr, flush=True)


def _device_for_dtype(choice: DeviceChoice, dtype: torch.dtype) -> DeviceChoice:
    """mps has no float64: a float64 demo runs on the CPU there instead."""
    if dtype != torch.float64 or choice.device.type != "mps":
        return choice
    return DeviceChoice(
        torch.device("cpu"), _cpu_name(), "cpu: mps has no float64, which this demo needs"
    )


def run_demo(
    name: str,
    cfg: Any,
    *,
    scale: str,
    device: str | DeviceChoice,
    seed: int,
    build: Callable[[Any, torch.device, torch.Generator], Any],
    check: Callable[[Any], list[Check]],
    contrast: Callable[[Any, torch.Generator], list[Check]],
    contrast_label: str,
    dtype: torch.dtype = torch.float32,
    notes: list[str] | None = None,
    figures: Callable[[Any], dict[str, Any]] | None = None,
) -> Report:
    """Build, check and contrast one demo on one device, timed, with TF32 off on CUDA."""
    choice = _device_for_dtype(select_device(device), dtype)
    dev = choice.device
    sizes = dataclasses.asdict(cfg)
    if hasattr(cfg, "d_head"):
        sizes["d_head"] = cfg.d_head
    with exact_fp32(dev):
        synchronize(dev)
        start = time.perf_counter()
        gen = make_generator(dev, seed)
        progress(f"building {name} on {dev.type}")
        setup = build(cfg, dev, gen)
        progress("measuring the claim")
        with measuring("claim"):
            checks = check(setup)
        emit_checks("claim", checks)
        progress("measuring the contrast")
        with measuring("contrast"):
            contrast_checks = contrast(setup, gen)
        emit_checks("contrast", contrast_checks)
        synchronize(dev)
        seconds = time.perf_counter() - start
    drawn = figures(setup) if figures is not None else {}
    every = checks + contrast_checks
    texts = [c.name for c in every] + [c.detail for c in every] + list(notes or [])
    return Report(
        glossary=glossary_for(texts),
        name=name,
        claim=DEMOS[name].claim,
        device=dev.type,
        device_name=choice.name,
        device_reason=choice.reason,
        dtype=str(dtype).removeprefix("torch."),
        scale=scale,
        seed=seed,
        sizes=sizes,
        seconds=seconds,
        checks=checks,
        contrast=contrast_checks,
        contrast_label=contrast_label,
        notes=list(notes or []),
        figures=drawn,
    )


def scale_config(configs: dict[str, Any], scale: str) -> Any:
    if scale not in configs:
        raise ValueError(f"unknown scale {scale!r}; choose one of {', '.join(configs)}")
    return configs[scale]


def run_module(
    module: ModuleType | str, scale: str, device: str | DeviceChoice, seed: int
) -> Report:
    """`run_demo` for a demo module (or its dotted name), from the names it defines.

    Everything is looked up when the demo runs, so a test may patch a module's `check` or `SCALES`.
    """
    mod = importlib.import_module(module) if isinstance(module, str) else module
    cfg = scale_config(mod.SCALES, scale)
    notes = mod.notes(cfg) if hasattr(mod, "notes") else mod.NOTES
    return run_demo(
        mod.NAME,
        cfg,
        scale=scale,
        device=device,
        seed=seed,
        build=mod.build,
        check=mod.check,
        contrast=mod.contrast,
        contrast_label=mod.CONTRAST_LABEL,
        dtype=mod.DTYPE,
        notes=notes,
        figures=getattr(mod, "figures", None),
    )
