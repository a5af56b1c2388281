"""mha-code: each check of the live-coding demo fails on code that gets it wrong."""

from __future__ import annotations

import pytest

from prep.demos import harness
from prep.demos._torch import torch
from prep.demos.synthetic import mha_code as mod

CPU = torch.device("cpu")
SMALL = mod.SCALES["small"]


def _checks(code: str) -> dict[str, bool]:
    gen = harness.make_generator(CPU, 0)
    x = torch.randn(SMALL.batch, SMALL.seq_len, SMALL.d_model, generator=gen)
    setup = mod.Setup(SMALL, x, mod._module(code, SMALL, CPU, gen))
    return {c.name: c.passed for c in mod.check(setup)}


def test_the_card_code_passes_every_check() -> None:
    assert all(_checks(mod.CARD_CODE).values())


@pytest.mark.parametrize(
    ("variant", "broken"),
    [
        # the classic bug: view before transposing the heads back
        ("z = (att @ v).view(B, T, D)", {"card code", "o_proj.weight.grad"}),
        # forgetting the 1/sqrt(d_head) scale: no longer the same attention
        ("att = (q @ k.transpose(-2, -1)).softmax(dim=-1)", {"card code"}),
        # an extra matmul (o_proj applied twice) costs what the FLOPs checks count
        ("return self.o_proj(self.o_proj(z))", {"o_proj FLOPs (FlopCounterMode)", "forward FLOPs"}),
        # one big head (d_head = d_model): its logits are no longer capped at the narrow d_head
        ("self.h, self.d_head = 1, d_model", {"rank of head 0's logits q kᵀ (T = 32)"}),
    ],
    ids=["view-before-transpose", "no-scale", "o-proj-twice", "one-big-head"],
)
def test_each_check_breaks_on_code_that_gets_it_wrong(variant: str, broken: set[str]) -> None:
    lines = mod.CARD_CODE.splitlines()
    target = variant.split("=")[0].strip() if "=" in variant.split("(")[0] else "return"
    target = target.split(",")[0]
    index = next(i for i, line in enumerate(lines) if line.strip().startswith(target))
    indent = lines[index][: len(lines[index]) - len(lines[index].lstrip())]
    code = "\n".join([*lines[:index], indent + variant, *lines[index + 1 :]])
    results = _checks(code)
    failed = {name.split("  ")[0] for name, ok in results.items() if not ok}
    assert broken <= failed, results


def test_the_contrast_measures_the_bug() -> None:
    gen = harness.make_generator(CPU, 0)
    setup = mod.build(SMALL, CPU, gen)
    (check,) = mod.contrast(setup, gen)
    assert check.passed and check.measured > 0.5
