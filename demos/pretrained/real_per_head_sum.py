"""real-per-head-sum: on a real checkpoint, concat(z) @ W_O + b_O is the sum of per-head writes.

For every layer, z is recomputed from the layer's input with the checkpoint's own W_Q, W_K, W_V
and biases read per head (TransformerLens layout), then sum_h z_h W_O^h + b_O is held against the
library's output projection (the tensor it adds to the residual). Float64 throughout.

Pass bar, argued before running: both sides are the same sums in float64 over at most a few
hundred terms of O(1) size; float64 rounding is ~1e-16 relative per operation, so even 1e4
roundings of O(10) values stay below 1e-11. A bar of 1e-10 leaves that margin while a
layout slip (a head's block taken from the wrong rows or columns) is O(1) wrong.
These checks are identities: they verify that our per-head reading of the weights is the
model, which is what every other real-* demo relies on.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from prep.demos import harness
from prep.demos._torch import torch
from prep.demos.harness import IDENTITY, SANITY, Check
from prep.demos.pretrained import pretrained as pt
from prep.demos.pretrained import twin64

NAME = "real-per-head-sum"
DTYPE = torch.float64
CONTRAST_LABEL = "W_O flattened as (d_head, n_heads), the common layout bug, on layer 0"
BAR = 1e-10
# The shipped all-MiniLM-L6-v2 (6 layers): one identity check per layer, one measured contrast.
CHECK_KINDS = {IDENTITY: 6, SANITY: 1}


@dataclass(frozen=True)
class Config:
    n_pairs: int  # sentence pairs from demos/pretrained/data/sentences.tsv


SCALES = {"small": Config(n_pairs=4), "large": Config(n_pairs=32)}


@dataclass
class Setup:
    real: pt.Real  # the float64 copy
    s: pt.Sentences
    cap: pt.Capture
    W_O: list[torch.Tensor]  # per layer (n_heads, d_head, d_model), as the sum reads it


def build(cfg: Config, real: pt.Real, gen: torch.Generator) -> Setup:
    r64 = twin64.of(real)  # converted once per loaded model, only read here
    s = r64.sentences(pt.paraphrase_pairs(cfg.n_pairs))
    _, cap = r64.run_with_cache(s)
    return Setup(r64, s, cap, [r64.weights(i).W_O for i in range(r64.n_layers)])


def layout_bug(w_o: torch.Tensor) -> torch.Tensor:
    """Rows of the flat (n_heads*d_head, d_model) W_O read as (d_head, n_heads)."""
    h, dh, d = w_o.shape
    return w_o.reshape(h * dh, d).reshape(dh, h, d).transpose(0, 1)  # (h, dh, d) mixed


def counterexample(cfg: Config, real: pt.Real, gen: torch.Generator) -> Setup:
    return break_claim(build(cfg, real, gen))


def break_claim(setup: Setup) -> Setup:
    """A copy whose per-head W_O blocks are read with the layout bug."""
    return dataclasses.replace(setup, W_O=[layout_bug(w) for w in setup.W_O])


def layer_sum(setup: Setup, layer: int, w_o: torch.Tensor) -> torch.Tensor:
    w = setup.real.weights(layer)
    z = pt.head_outputs(setup.real, layer, setup.cap.attn_in[layer], setup.s.mask, w)
    return pt.per_head_writes(z, w_o).sum(0) + w.b_O  # (N, T, d_model)


def check(setup: Setup) -> list[Check]:
    real, mask = setup.real, setup.s.mask.bool()
    out = []
    for layer in range(real.n_layers):
        diff = (layer_sum(setup, layer, setup.W_O[layer]) - setup.cap.proj_out[layer])[mask]
        out.append(
            harness.at_most(
                f"layer {layer}: sum_h z_h W_O^h + b_O (z from W_Q, W_K, W_V) vs the library's "
                "attention output, max |diff|",
                diff.abs().max(),
                BAR,
                "is W_O read head-major? BERT's nn.Linear stores (out, in): W_O^h is "
                "weight[:, h*d_head:(h+1)*d_head].T; GPT-2's Conv1D stores (in, out): rows "
                "h*d_head:(h+1)*d_head",
            )
        )
    return out


def contrast(setup: Setup, gen: torch.Generator) -> list[Check]:
    mask = setup.s.mask.bool()
    b_o = setup.real.weights(0).b_O  # (d_model,) compared without it: only the writes differ
    right = setup.cap.proj_out[0][mask] - b_o
    wrong = layer_sum(setup, 0, layout_bug(setup.W_O[0]))[mask] - b_o
    return [
        harness.at_least(
            "layout bug on layer 0: ||bugged writes - library writes|| / ||library writes||",
            harness.relative_error(wrong, right),
            0.5,
            "two sums of 12 unrelated head writes should differ by about their own size "
            "(~sqrt(2)); a bar of 0.5 is the synthetic per-head-sum demo's",
            kind=SANITY,
        )
    ]


def notes(setup: Setup) -> list[str]:
    return [
        f"Float64 copy of the model; {setup.s.input_ids.shape[0]} sentences, "
        f"{int(setup.s.mask.sum())} real tokens; bar {BAR:g} (argued in the module docstring).",
    ]


run = pt.runner(__name__)
