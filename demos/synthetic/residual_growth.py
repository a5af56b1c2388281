"""residual-growth: how much the blocks add to the residual stream at init, with GPT-2's scaled init.

GPT-2 (Radford et al. 2019) initialises weights with std 0.02 and scales "the weights of residual
layers at initialization by a factor of 1/sqrt(N) where N is the number of residual layers"; in
code (GPT-2's and nanoGPT's) that is std 0.02/sqrt(2*n_layer) for the projections that write into
the residual stream: the attention's W_O (c_proj) and the MLP's output projection.

In a pre-LN stack every block reads LN(x), whose scale does not depend on depth, so each block
writes about the same variance whatever the depth, and at random init the writes are nearly
uncorrelated: the variance they add grows linearly with the number of blocks. Scaling every
writing projection by 1/sqrt(N) divides each write's variance by N, so the N writes together add
about as much as one unscaled write. Zero-initialised writing projections add exactly nothing.

Measured on random weights at init (no training): a statement about initialisation only.
"""

from __future__ import annotations

from dataclasses import dataclass

from prep.demos import harness
from prep.demos._torch import torch
from prep.demos.harness import IDENTITY, MEASUREMENT, Check, DeviceChoice, Report
from prep.demos.synthetic import attention as attn

NAME = "residual-growth"
DTYPE = torch.float32
CONTRAST_LABEL = "post-LN (LayerNorm after each residual add)"
# The variance-growth bars on random init are measured; zero-init W_O leaving the residual
# unchanged and post-LN's renormalised RMS (the contrast) follow by construction.
CHECK_KINDS = {IDENTITY: 2, MEASUREMENT: 4}
STD = 0.02  # GPT-2's initialiser


@dataclass(frozen=True)
class Config:
    batch: int = 2
    seq_len: int = 24
    d_model: int = 128
    n_heads: int = 4
    n_layers: int = 12  # N = 2 * n_layers residual layers (attention and MLP in each)

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads


SCALES = {
    "small": Config(),
    "large": Config(batch=2, seq_len=256, d_model=1024, n_heads=16, n_layers=24),
}


@dataclass
class Block:
    w: attn.Weights  # W_Q, W_K, W_V: (n_heads, d_model, d_head); W_O: (n_heads, d_head, d_model)
    W_up: torch.Tensor  # (d_model, 4*d_model)
    W_down: torch.Tensor  # (4*d_model, d_model)


@dataclass
class Setup:
    cfg: Config
    x0: torch.Tensor  # (B, T, d_model) the embedding, std 0.02
    raw: list[Block]  # standard-normal draws; each variant rescales the same draws
    out_scale: float  # 1/sqrt(N) for the "scaled" model
    zero_w_o: bool = True  # the zero-init model zeroes W_O
    zero_w_down: bool = True  # ... and the MLP's output projection


def n_residual_layers(cfg: Config) -> int:
    return 2 * cfg.n_layers


def build(cfg: Config, device: torch.device, gen: torch.Generator) -> Setup:
    d, h, dh = cfg.d_model, cfg.n_heads, cfg.d_head
    x0 = STD * attn.randn((cfg.batch, cfg.seq_len, d), gen, DTYPE)  # (B, T, d_model)
    raw = []
    for _ in range(cfg.n_layers):
        w = attn.Weights(
            attn.randn((h, d, dh), gen, DTYPE),  # (n_heads, d_model, d_head)
            attn.randn((h, d, dh), gen, DTYPE),  # (n_heads, d_model, d_head)
            attn.randn((h, d, dh), gen, DTYPE),  # (n_heads, d_model, d_head)
            attn.randn((h, dh, d), gen, DTYPE),  # (n_heads, d_head, d_model)
        )
        up = attn.randn((d, 4 * d), gen, DTYPE)  # (d_model, 4*d_model)
        down = attn.randn((4 * d, d), gen, DTYPE)  # (4*d_model, d_model)
        raw.append(Block(w, up, down))
    return Setup(cfg, x0, raw, 1.0 / n_residual_layers(cfg) ** 0.5)


def counterexample(cfg: Config, device: torch.device, gen: torch.Generator) -> Setup:
    """The scaling forgotten (factor 1), and only W_O zeroed in the zero-init model."""
    s = build(cfg, device, gen)
    s.out_scale = 1.0
    s.zero_w_down = False
    return s


def scaled(raw: Block, out: float, down: float) -> Block:
    w = raw.w
    return Block(
        attn.Weights(STD * w.W_Q, STD * w.W_K, STD * w.W_V, STD * out * w.W_O),
        STD * raw.W_up,
        STD * down * raw.W_down,
    )


def forward(x0: torch.Tensor, blocks: list[Block], post_ln: bool = False) -> list[torch.Tensor]:
    """The residual stream after each layer (index 0 = the embedding)."""

    def ln(t: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.layer_norm(t, t.shape[-1:])  # (B, T, d_model) no affine

    xs, x = [x0], x0
    for b in blocks:
        a_in = x if post_ln else ln(x)  # (B, T, d_model)
        z = attn.head_outputs(a_in, b.w.W_Q, b.w.W_K, b.w.W_V)  # (B, T, n_heads, d_head)
        x = x + attn.project(z, b.w.W_O)  # (B, T, d_model)
        x = ln(x) if post_ln else x
        m_in = x if post_ln else ln(x)  # (B, T, d_model)
        x = x + torch.nn.functional.gelu(m_in @ b.W_up) @ b.W_down  # (B, T, d_model)
        x = ln(x) if post_ln else x
        xs.append(x)
    return xs


def added_variance(xs: list[torch.Tensor], layer: int) -> float:
    """Mean square of what the blocks up to `layer` added to the embedding."""
    return float((xs[layer] - xs[0]).pow(2).mean())


def check(s: Setup) -> list[Check]:
    cfg = s.cfg
    n = n_residual_layers(cfg)
    standard = forward(s.x0, [scaled(b, 1.0, 1.0) for b in s.raw])
    gpt2 = forward(s.x0, [scaled(b, s.out_scale, s.out_scale) for b in s.raw])
    zero = forward(
        s.x0,
        [scaled(b, 0.0 if s.zero_w_o else 1.0, 0.0 if s.zero_w_down else 1.0) for b in s.raw],
    )
    last, half = cfg.n_layers, cfg.n_layers // 2
    growth = added_variance(standard, last) / added_variance(standard, half)
    ratio = added_variance(standard, last) / added_variance(gpt2, last)
    # Bars, argued before the run. Linear growth: twice the blocks add twice the variance, 2.0;
    # [1.5, 2.7] leaves room for correlated writes and the finite sample. Scaled init: each write's
    # variance is divided by N, so the ratio is N in expectation; [N/2, 2N] for the same reasons.
    return [
        harness.at_least(
            f"standard init: added variance after {last} layers / after {half} (>= 1.5)",
            growth,
            1.5,
            "pre-LN blocks write a depth-independent variance each, so it should add up",
            kind=harness.MEASUREMENT,
        ),
        harness.at_most(
            f"standard init: added variance after {last} layers / after {half} (<= 2.7)",
            growth,
            2.7,
            "more than linear growth would mean strongly correlated writes",
            kind=harness.MEASUREMENT,
        ),
        harness.at_least(
            f"added variance after {last} layers: standard / scaled 1/sqrt(N) (>= N/2 = {n / 2:g})",
            ratio,
            n / 2,
            f"scaling W_O and the MLP output by 1/sqrt(N) = {1 / n**0.5:.3g} divides each "
            "write's variance by N; a ratio near 1 means the scaling was not applied",
            kind=harness.MEASUREMENT,
        ),
        harness.at_most(
            f"added variance after {last} layers: standard / scaled 1/sqrt(N) (<= 2N = {2 * n})",
            ratio,
            2 * n,
            kind=harness.MEASUREMENT,
        ),
        harness.exactly_zero(
            "zero-init W_O and MLP output: residual after the last layer - embedding",
            zero[-1] - zero[0],
            "with every writing projection zero, no block writes anything at init",
        ),
    ]


def contrast(s: Setup, gen: torch.Generator) -> list[Check]:
    """Post-LN renormalises after every add: the stream's size cannot grow with depth."""
    standard = forward(s.x0, [scaled(b, 1.0, 1.0) for b in s.raw], post_ln=True)
    gpt2 = forward(s.x0, [scaled(b, s.out_scale, s.out_scale) for b in s.raw], post_ln=True)
    rms = [float(xs[-1].pow(2).mean().sqrt()) for xs in (standard, gpt2)]
    return [
        harness.approx(
            "post-LN: final residual RMS, standard / scaled init",
            rms[0] / rms[1],
            1.0,
            rtol=0.01,
        )
    ]


def notes(cfg: Config) -> list[str]:
    n = n_residual_layers(cfg)
    return [
        f"N = 2*n_layers = {n} residual layers; scaled init uses std 0.02/sqrt({n}) = "
        f"{STD / n**0.5:.4f} for W_O and the MLP's output projection, 0.02 elsewhere.",
        "Pre-LN with LayerNorm without affine parameters; weights at init, no training.",
    ]


def run(scale: str = "small", device: str | DeviceChoice = "cpu", seed: int = 0) -> Report:
    return harness.run_module(__name__, scale, device, seed)
