"""The demo report: torch-free, so every front end can read, render and record it.

`prep demo`, `python -m prep.demos` and the TUI's demo screen all speak this type: a demo returns
a `Report`, `to_json()` is the `--json` contract, `Report.from_dict` reads it back (the TUI reads
the subprocess's line this way), `render` is the human text. Nothing here imports torch.

Every `Check` says what kind of evidence it is:
- `identity`: true by construction, a unit test of the algebra. Worth showing, never evidence
  about trained models.
- `sanity`: a generic fact any weights show ("a random matrix has full rank", a large error on
  random weights): it checks the set-up, not a claim about what training did.
- `measurement`: trained weights (or their behaviour) against a stated null or alternative that
  could have won; its bar is argued from the claim before the run (`bar` says how) and the number
  carries its uncertainty (seeds or bootstrap) where it has one.
The default is `identity`, the modest label: a check claims to be evidence only when its demo
says so.

`render` writes each check in words: what was compared, the number, the rule in words and where
the bar comes from; names a run uses (L1H2, copyable positions) are explained once, before the
checks (`glossary`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import re
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

IDENTITY = "identity"
SANITY = "sanity"
MEASUREMENT = "measurement"
KINDS = (IDENTITY, SANITY, MEASUREMENT)


# Called with every Check as it is made, while a demo runs in the demo worker
# (demos/harness.measuring sets it around a section's measurement); None everywhere else.
_observer: Callable[[Check], None] | None = None


@contextlib.contextmanager
def observing_checks(observer: Callable[[Check], None] | None) -> Iterator[None]:
    """Call `observer(check)` for each Check made inside the block (one demo at a time); None:
    nobody (a demo's intermediate checks, which it turns into others)."""
    global _observer
    old, _observer = _observer, observer
    try:
        yield
    finally:
        _observer = old


@dataclass(frozen=True)
class Check:
    """One measurement against what the claim says it must be."""

    name: str  # what was measured
    measured: float | int
    expected: str  # the rule it is held to, e.g. "== 0.0" or "allclose(rtol=1.3e-06, atol=1e-05)"
    passed: bool
    detail: str = ""  # shown on failure: the misconception that would make it fail
    kind: str = IDENTITY  # IDENTITY (true by construction), SANITY (generic) or MEASUREMENT
    bar: str = ""  # where the bar comes from, argued from the claim before the run

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"check {self.name!r}: kind must be one of {KINDS}, not {self.kind!r}")
        if _observer is not None:  # the demo worker streams each check the moment it is made
            _observer(self)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Check:
        measured = data["measured"]
        return cls(
            name=str(data["name"]),
            measured=measured if isinstance(measured, int | float) else float("nan"),
            expected=str(data.get("expected", "")),
            passed=bool(data["passed"]),
            detail=str(data.get("detail", "")),
            kind=data.get("kind", IDENTITY) if data.get("kind") in KINDS else IDENTITY,
            bar=str(data.get("bar", "")),
        )


@dataclass
class Report:
    name: str
    claim: str
    device: str  # "cuda", "mps" or "cpu"
    device_name: str
    device_reason: str
    dtype: str  # "float32"
    scale: str
    seed: int
    sizes: dict[str, Any]
    seconds: float
    checks: list[Check]
    contrast: list[Check]
    contrast_label: str = ""  # what the contrast changes, e.g. "a dense W_O"
    notes: list[str] = field(default_factory=list)
    cards: list[str] = field(default_factory=list)
    glossary: list[str] = field(default_factory=list)  # names used, explained once per run
    figures: dict[str, Any] = field(default_factory=dict)  # the arrays behind each figure

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks) and all(c.passed for c in self.contrast)

    def kind_counts(self) -> dict[str, int]:
        """How many checks (contrast included) are of each kind (identity, sanity, measurement)."""
        every = self.checks + self.contrast
        return {kind: sum(c.kind == kind for c in every) for kind in KINDS}

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "claim": self.claim,
            "device": self.device,
            "device_name": self.device_name,
            "device_reason": self.device_reason,
            "dtype": self.dtype,
            "scale": self.scale,
            "seed": self.seed,
            "sizes": dict(self.sizes),
            "seconds": round(self.seconds, 4),
            "passed": self.passed,
            "checks": [c.to_dict() for c in self.checks],
            "contrast_label": self.contrast_label,
            "contrast": [c.to_dict() for c in self.contrast],
            "notes": list(self.notes),
            "cards": list(self.cards),
            "glossary": list(self.glossary),
            "figures": dict(self.figures),
        }

    def summary_dict(self) -> dict[str, Any]:
        """to_dict without the arrays behind the figures: what the progress database keeps."""
        data = self.to_dict()
        data.pop("figures")
        return data

    def to_json(self) -> str:
        """One JSON object (one line); the shape `prep demo NAME --json` prints (strict JSON)."""
        return json.dumps(self.to_dict(), allow_nan=False, default=_no_nan)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Report:
        """Read back what `to_dict` wrote (KeyError/TypeError/ValueError on another shape)."""
        return cls(
            name=str(data["name"]),
            claim=str(data.get("claim", "")),
            device=str(data.get("device", "")),
            device_name=str(data.get("device_name", "")),
            device_reason=str(data.get("device_reason", "")),
            dtype=str(data.get("dtype", "")),
            scale=str(data.get("scale", "")),
            seed=int(data.get("seed", 0)),
            sizes=dict(data.get("sizes", {})),
            seconds=float(data.get("seconds", 0.0)),
            checks=[Check.from_dict(c) for c in data.get("checks", [])],
            contrast=[Check.from_dict(c) for c in data.get("contrast", [])],
            contrast_label=str(data.get("contrast_label", "")),
            notes=[str(n) for n in data.get("notes", [])],
            cards=[str(c) for c in data.get("cards", [])],
            glossary=[str(g) for g in data.get("glossary", [])],
            figures=dict(data.get("figures", {})),
        )


def _no_nan(value: Any) -> Any:
    raise TypeError(f"not JSON serialisable: {value!r}")


def fmt_value(value: float | int) -> str:
    if isinstance(value, int):
        return str(value)
    if value == 0.0:
        return "0.0"
    if not math.isfinite(value):
        return str(value)
    return f"{value:.6g}"


def fmt_difference(a: float, b: float, digits: int = 2) -> str:
    """'a - b' as a demo prints a difference of two numbers: a negative b in parentheses
    ('0.88 - (-0.03)', never '0.88 - -0.03'), both at `digits` decimals."""
    right = f"{b:.{digits}f}"
    return f"{a:.{digits}f} - " + (f"({right})" if right.startswith("-") else right)


_RULES = (("==", "must equal"), (">=", "must be at least"), ("<=", "must be at most"),
          (">", "must be above"), ("<", "must be below"))  # fmt: skip


def rule_in_words(expected: str) -> str:
    """The pass rule as a sentence: '>= 0.5' -> 'must be at least 0.5'."""
    text = expected.strip()
    for symbol, words in _RULES:
        if text.startswith(symbol):
            return f"{words} {text[len(symbol) :].strip()}"
    if text.startswith("max |diff| within"):
        return "the largest difference must stay " + text.removeprefix("max |diff| ")
    return f"must be {text}" if text else "no rule stated"


_DEFAULT_BAR = {
    IDENTITY: "true by construction: only float rounding may separate the two sides",
    SANITY: "a generic fact that any weights show: it checks the set-up, not the claim",
    MEASUREMENT: "",
}


def describe(check: Check) -> str:
    """What a check compares, in words, after its name: the number, the rule, where the bar
    comes from. Shared by `render` and the TUI's demo screen."""
    text = f"measured {fmt_value(check.measured)}; {rule_in_words(check.expected)}"
    bar = check.bar or _DEFAULT_BAR.get(check.kind, "")
    return text + (f"\nwhy this bar: {bar}" if bar else "")


def _check_lines(checks: list[Check]) -> list[str]:
    lines = []
    for c in checks:
        mark = "PASS" if c.passed else "FAIL"
        lines.append(f"  {mark}  [{c.kind}] {c.name}")
        for part in describe(c).split("\n"):
            lines += textwrap.wrap(part, 96, initial_indent=" " * 8, subsequent_indent=" " * 10)
        if not c.passed and c.detail:
            lines += textwrap.wrap(
                c.detail, 96, initial_indent="        hint: ", subsequent_indent="              "
            )
    return lines


def kinds_text(counts: dict[str, int]) -> str:
    """'3 measurement(s), 1 sanity check(s), 2 identity check(s)' (zero counts left out but
    measurements, which are always said)."""
    parts = [f"{counts.get(MEASUREMENT, 0)} measurement(s)"]
    parts += [f"{counts[k]} {k} check(s)" for k in (SANITY, IDENTITY) if counts.get(k)]
    return ", ".join(parts)


# Names the checks use, explained once per run (added by the runner when a check uses them).
GLOSSARY = {
    "head": (r"\bL\d+H\d+\b", "LxHy = layer x, head y of the decoder, both counted from 0."),
    "copyable": (
        r"copyable|in-context accuracy",
        "copyable positions = the second copy's positions whose next token can be read off the "
        "first copy (all but its last); in-context accuracy is the share of them predicted right.",
    ),
}


def glossary_for(texts: list[str]) -> list[str]:
    """The GLOSSARY entries whose pattern occurs in any of `texts`, in GLOSSARY order."""
    joined = "\n".join(texts)
    return [text for pattern, text in GLOSSARY.values() if re.search(pattern, joined)]


def render(report: Report) -> str:
    """The human report: claim, sizes and device, checks, contrast, cards, verdict."""
    wrap = textwrap.TextWrapper(96, initial_indent="claim: ", subsequent_indent="       ")
    sizes = " ".join(f"{k}={v}" for k, v in report.sizes.items())
    lines = [
        f"{report.name}: {'PASS' if report.passed else 'FAIL'}",
        *wrap.wrap(report.claim),
        *textwrap.wrap(sizes, 96, initial_indent="sizes: ", subsequent_indent="       "),
        f"run:   {report.device_reason} | {report.dtype} | scale {report.scale} | "
        f"seed {report.seed} | {report.seconds:.2f} s",
        "",
    ]
    if report.glossary:
        for term in report.glossary:
            lines += textwrap.wrap(term, 96, initial_indent="names: ", subsequent_indent="       ")
        lines.append("")
    lines += ["checks:", *_check_lines(report.checks)]
    if report.contrast:
        label = f": {report.contrast_label}" if report.contrast_label else ""
        lines += ["", f"contrast{label}", "(the claim would be false here; measured the same way)"]
        lines += _check_lines(report.contrast)
    if report.notes:
        lines.append("")
        for note in report.notes:
            lines += textwrap.wrap(note, 96, initial_indent="note: ", subsequent_indent="      ")
    if report.cards:
        lines += ["", "backs cards: " + ", ".join(report.cards)]
    total = len(report.checks) + len(report.contrast)
    failed = sum(not c.passed for c in report.checks + report.contrast)
    counts = report.kind_counts()
    kinds = kinds_text(counts)
    verdict = (
        f"all {total} checks hold ({kinds})"
        if not failed
        else f"{failed} of {total} checks FAILED: the claim is not shown"
    )
    lines += ["", f"result: {verdict}"]
    return "\n".join(lines)
