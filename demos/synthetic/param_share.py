"""param-share: how many weights W_O holds, counted on real modules, against the closed forms.

Every count below is `numel()` of the weights of real `torch.nn.Linear` layers (bias=False, so
"parameters" means weights, as in the cards' "ignoring biases") built on the device: an attention
layer with n_heads query heads sharing n_kv_heads key/value heads (n_kv_heads = n_heads is MHA,
1 is MQA, anything between that divides n_heads is GQA) and a 4*d_model FFN. With d = d_model and
d = n_heads*d_head:

    W_Q: d^2   W_K, W_V: d^2*n_kv_heads/n_heads each   W_O: d^2 (whatever n_kv_heads is)

because W_O maps the concat of all n_heads query heads' outputs, and sharing keys and values does
not remove query heads. So W_O's share of the attention weights is 1/(2 + 2*n_kv_heads/n_heads):
1/4 for MHA, 16/33 for MQA with 32 heads, 2/5 for 8 KV heads of 32. Shares are compared as exact
Fractions of the integer counts, so every check here is exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from prep.demos import harness
from prep.demos._torch import torch
from prep.demos.harness import IDENTITY, MEASUREMENT, Check, DeviceChoice, Report
from prep.demos.synthetic import attention as attn

NAME = "param-share"
DTYPE = torch.float32
CONTRAST_LABEL = "the common wrong counts, measured on the same modules"
FFN_MULT = 4  # the FFN's hidden width is FFN_MULT * d_model
PROBE_TOKENS = 8  # tokens in the forward pass that measures the concat width
# Every check here is an identity: numel() of modules built from the very shapes the closed
# forms describe. They show the counts exactly; they are no evidence about trained models.
CHECK_KINDS = {IDENTITY: 19, MEASUREMENT: 0}


@dataclass(frozen=True)
class Config:
    d_model: int
    n_heads: int
    n_kv_heads: int  # GQA's key/value heads; the MQA layer always has 1, the MHA layer n_heads

    @property
    def d_head(self) -> int:
        assert self.d_model % self.n_heads == 0, "d_model must be divisible by n_heads"
        assert self.n_heads % self.n_kv_heads == 0, "n_kv_heads must divide n_heads"
        return self.d_model // self.n_heads


SCALES = {
    "small": Config(d_model=256, n_heads=32, n_kv_heads=8),
    "large": Config(d_model=4096, n_heads=32, n_kv_heads=8),
}


class Attention(torch.nn.Module):
    """Bias-free causal attention: n_heads query heads, n_kv_heads shared key/value heads."""

    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int, device: torch.device) -> None:
        super().__init__()
        d_head = d_model // n_heads
        self.n_heads, self.n_kv_heads, self.d_head = n_heads, n_kv_heads, d_head
        kw = {"bias": False, "device": device, "dtype": DTYPE}
        self.W_Q = torch.nn.Linear(d_model, n_heads * d_head, **kw)  # weight (h*d_head, d_model)
        self.W_K = torch.nn.Linear(d_model, n_kv_heads * d_head, **kw)  # weight (g*d_head, d)
        self.W_V = torch.nn.Linear(d_model, n_kv_heads * d_head, **kw)  # weight (g*d_head, d)
        self.W_O = torch.nn.Linear(n_heads * d_head, d_model, **kw)  # weight (d_model, h*d_head)

    def heads(self, x: torch.Tensor) -> torch.Tensor:
        """The concat that W_O reads: every query head's output, head-major."""
        b, t, _ = x.shape
        h, g, dh = self.n_heads, self.n_kv_heads, self.d_head
        q = self.W_Q(x).view(b, t, h, dh).transpose(1, 2)  # (B, n_heads, T, d_head)
        k = self.W_K(x).view(b, t, g, dh).transpose(1, 2)  # (B, n_kv_heads, T, d_head)
        v = self.W_V(x).view(b, t, g, dh).transpose(1, 2)  # (B, n_kv_heads, T, d_head)
        k = k.repeat_interleave(h // g, dim=1)  # (B, n_heads, T, d_head) a group shares its K
        v = v.repeat_interleave(h // g, dim=1)  # (B, n_heads, T, d_head) ... and its V
        z = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B,h,T,dh)
        return z.transpose(1, 2).flatten(-2)  # (B, T, n_heads*d_head)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.W_O(self.heads(x))  # (B, T, d_model)


def ffn(d_model: int, device: torch.device) -> torch.nn.Sequential:
    """Up d_model -> 4*d_model, GELU, down 4*d_model -> d_model; no biases."""
    kw = {"bias": False, "device": device, "dtype": DTYPE}
    return torch.nn.Sequential(
        torch.nn.Linear(d_model, FFN_MULT * d_model, **kw),  # weight (4*d_model, d_model)
        torch.nn.GELU(),
        torch.nn.Linear(FFN_MULT * d_model, d_model, **kw),  # weight (d_model, 4*d_model)
    )


def count(module: torch.nn.Module) -> int:
    """The module's parameters, counted: sum of numel() over module.parameters()."""
    return sum(p.numel() for p in module.parameters())


@dataclass
class Setup:
    cfg: Config
    mha: Attention  # n_kv_heads = n_heads
    mqa: Attention  # n_kv_heads = 1
    gqa: Attention  # n_kv_heads = cfg.n_kv_heads
    ffn: torch.nn.Sequential  # the MHA layer's FFN
    concat_width: int  # width of the GQA layer's concat, measured in a forward pass
    block_diag_w_o: torch.Tensor  # (n_heads, d_head, d_model) a block-diagonal W_O
    folded: torch.Tensor  # (n_heads, d_model, d_model) the MHA layer's W_V^h W_O^h


def fold(layer: Attention) -> torch.Tensor:
    """W_V^h W_O^h per head, from nn.Linear's (out, in) weights (needs n_kv_heads = n_heads)."""
    h, dh = layer.n_heads, layer.d_head
    d = layer.W_O.weight.shape[0]
    w_v = layer.W_V.weight.view(h, dh, d).transpose(1, 2)  # (n_heads, d_model, d_head)
    w_o = layer.W_O.weight.T.reshape(h, dh, d)  # (n_heads, d_head, d_model)
    return torch.einsum("hmk,hkn->hmn", w_v, w_o)  # (n_heads, d_model, d_model)


def build(cfg: Config, device: torch.device, gen: torch.Generator) -> Setup:
    d, h = cfg.d_model, cfg.n_heads
    with torch.no_grad():
        mha = Attention(d, h, h, device)
        mqa = Attention(d, h, 1, device)
        gqa = Attention(d, h, cfg.n_kv_heads, device)
        x = torch.randn(1, PROBE_TOKENS, d, generator=gen, device=device, dtype=DTYPE)  # (1,T,d)
        for layer in (mha, mqa, gqa):
            assert layer(x).shape == x.shape  # each layer really runs: (1, T, d_model) out
        concat_width = gqa.heads(x).shape[-1]  # n_heads*d_head, whatever n_kv_heads is
        sizes = attn.Sizes(batch=1, seq_len=PROBE_TOKENS, d_model=d, n_heads=h)
        block_diag = attn.block_diagonal_w_o(sizes, gen, DTYPE)  # (n_heads, d_head, d_model)
        folded = fold(mha)  # (n_heads, d_model, d_model)
    return Setup(cfg, mha, mqa, gqa, ffn(d, device), concat_width, block_diag, folded)


def counterexample(cfg: Config, device: torch.device, gen: torch.Generator) -> Setup:
    """The wrong belief built into the GQA module: W_O shrunk along with the KV heads."""
    setup = build(cfg, device, gen)
    shrunk_in = cfg.n_kv_heads * cfg.d_head
    setup.gqa.W_O = torch.nn.Linear(shrunk_in, cfg.d_model, bias=False, device=device, dtype=DTYPE)
    return setup


def fraction_equals(name: str, value: Fraction, expected: Fraction, detail: str = "") -> Check:
    """An exact comparison of two Fractions of integer counts; `measured` shows it as a float."""
    ok = value == expected
    return Check(name, float(value), f"== {expected} (exact Fraction)", ok, detail, IDENTITY)


def fraction_differs(name: str, value: Fraction, wrong: Fraction, detail: str = "") -> Check:
    return Check(
        name, float(value), f"!= {wrong} (exact Fraction)", value != wrong, detail, IDENTITY
    )


def kv_share(cfg: Config, n_kv_heads: int) -> Fraction:
    """Closed form: W_O's share of the attention weights is 1 / (2 + 2*n_kv_heads/n_heads)."""
    return 1 / (2 + 2 * Fraction(n_kv_heads, cfg.n_heads))


def check(setup: Setup) -> list[Check]:
    cfg = setup.cfg
    d, h, g = cfg.d_model, cfg.n_heads, cfg.n_kv_heads
    d2 = d * d
    mha, mqa, gqa = setup.mha, setup.mqa, setup.gqa
    mha_total, mqa_total, gqa_total = count(mha), count(mqa), count(gqa)
    mha_wo, mqa_wo, gqa_wo = count(mha.W_O), count(mqa.W_O), count(gqa.W_O)
    layer_total = mha_total + count(setup.ffn)
    block_nonzero = int(torch.count_nonzero(setup.block_diag_w_o))
    folded, factored = setup.folded.numel(), count(mha.W_V) + mha_wo
    kv_hint = (
        "W_O maps the concat of ALL n_heads query heads' outputs (n_heads*d_head wide) to "
        "d_model; MQA/GQA share keys and values, not query heads, so only W_K and W_V shrink "
        "(to d_model x n_kv_heads*d_head) and W_O stays d_model^2"
    )
    share_hint = (
        "with d_model = n_heads*d_head, W_Q and W_O are d_model^2 each and W_K, W_V are "
        "d_model^2*n_kv_heads/n_heads each, so W_O's share is 1/(2 + 2*n_kv_heads/n_heads); "
        "it is 1/4 only when n_kv_heads = n_heads"
    )
    return [
        harness.equals(f"MHA: W_O parameters == d_model^2 = {d2}", mha_wo, d2, kv_hint),
        harness.equals(
            f"MHA: W_Q + W_K + W_V + W_O parameters == 4*d_model^2 = {4 * d2}",
            mha_total,
            4 * d2,
            "standard multi-head attention has four d_model x d_model projections",
        ),
        fraction_equals(
            "MHA: W_O share of the attention weights == 1/4",
            Fraction(mha_wo, mha_total),
            Fraction(1, 4),
            share_hint,
        ),
        harness.equals(
            f"MQA (1 KV head): W_K + W_V parameters == 2*d_model^2/n_heads = {2 * d2 // h}",
            count(mqa.W_K) + count(mqa.W_V),
            2 * d2 // h,
            "one shared key head and one shared value head: d_model x d_head each",
        ),
        harness.equals(f"MQA: W_O parameters == d_model^2 = {d2}", mqa_wo, d2, kv_hint),
        fraction_equals(
            f"MQA: W_O share of the attention weights == 1/(2 + 2/n_heads) = {kv_share(cfg, 1)}",
            Fraction(mqa_wo, mqa_total),
            kv_share(cfg, 1),
            share_hint,
        ),
        harness.equals(
            f"GQA ({g} KV heads): W_K + W_V parameters == 2*d_model^2*n_kv_heads/n_heads = "
            f"{2 * d2 * g // h}",
            count(gqa.W_K) + count(gqa.W_V),
            2 * d2 * g // h,
            "each of the n_kv_heads key and value heads is d_model x d_head",
        ),
        harness.equals(
            f"GQA: W_O parameters == d_model^2 = {d2} (unchanged from MHA)", gqa_wo, d2, kv_hint
        ),
        harness.equals(
            f"GQA: W_O input width == the concat width a forward pass produces "
            f"({setup.concat_width})",
            gqa.W_O.weight.shape[1],
            setup.concat_width,
            "every query head still has its own attention pattern and its own d_head-wide "
            "output, so the concat W_O reads is n_heads*d_head wide; a W_O sized for "
            "n_kv_heads*d_head inputs cannot even be applied to it",
        ),
        fraction_equals(
            f"GQA: W_O share of the attention weights == 1/(2 + 2*n_kv_heads/n_heads) = "
            f"{kv_share(cfg, g)}",
            Fraction(gqa_wo, gqa_total),
            kv_share(cfg, g),
            share_hint,
        ),
        fraction_equals(
            f"MHA + {FFN_MULT}*d_model FFN: W_O share of the layer's weights == 1/12",
            Fraction(mha_wo, layer_total),
            Fraction(1, 12),
            "a layer is 4*d_model^2 of attention plus 8*d_model^2 of FFN (d_model x "
            "4*d_model up, 4*d_model x d_model down) = 12*d_model^2; W_O is d_model^2 of it",
        ),
        harness.equals(
            f"block-diagonal W_O: nonzero parameters == d_model^2/n_heads = {d2 // h}",
            block_nonzero,
            d2 // h,
            "n_heads diagonal blocks of d_head x d_head: n_heads*(d_model/n_heads)^2 = "
            "d_model^2/n_heads",
        ),
        fraction_equals(
            f"dense W_O parameters / block-diagonal nonzeros == n_heads = {h}",
            Fraction(mha_wo, block_nonzero),
            Fraction(h),
            "a dense W_O has n_heads row blocks of d_head x d_model; the block-diagonal one "
            "keeps only the d_head x d_head diagonal part of each",
        ),
        harness.equals(
            f"folded W_V^h W_O^h: parameters == n_heads*d_model^2 = {h * d2}",
            folded,
            h * d2,
            "each head's folded matrix is d_model x d_model, one per head",
        ),
        fraction_equals(
            f"folded / (W_V + W_O) parameters == n_heads/2 = {Fraction(h, 2)}",
            Fraction(folded, factored),
            Fraction(h, 2),
            "factored, V and O are d_model^2 each (2*d_model^2); folded, every head carries a "
            "full d_model x d_model matrix (n_heads*d_model^2)",
        ),
    ]


def shrunk_w_o_runs(setup: Setup) -> bool:
    """Apply a W_O shrunk to n_kv_heads*d_head inputs to the GQA layer's real concat."""
    cfg = setup.cfg
    shrunk = torch.nn.Linear(
        cfg.n_kv_heads * cfg.d_head, cfg.d_model, bias=False, device=setup.folded.device
    )  # weight (d_model, n_kv_heads*d_head)
    x = torch.zeros(1, PROBE_TOKENS, cfg.d_model, device=setup.folded.device)  # (1, T, d_model)
    with torch.no_grad():
        try:
            shrunk(setup.gqa.heads(x))  # (1, T, n_heads*d_head) in: a shape error
        except RuntimeError:
            return False
    return True


def contrast(setup: Setup, gen: torch.Generator) -> list[Check]:
    """The common wrong counts, measured on the same modules: each one is false."""
    cfg = setup.cfg
    d2, h, g = cfg.d_model**2, cfg.n_heads, cfg.n_kv_heads
    shrunk_count = d2 * g // h
    shrunk_runs = shrunk_w_o_runs(setup)
    return [
        harness.Check(
            f"'W_O shrinks with GQA': GQA W_O parameters vs d_model^2*g/h = {shrunk_count}",
            count(setup.gqa.W_O),
            f"!= {shrunk_count}",
            count(setup.gqa.W_O) != shrunk_count,
        ),
        harness.Check(
            f"'W_O shrunk to n_kv_heads*d_head = {g * cfg.d_head} inputs': runs (1) or not (0) "
            f"on the {setup.concat_width}-wide GQA concat",
            int(shrunk_runs),
            "== 0",
            not shrunk_runs,
        ),
        fraction_differs(
            "'W_O stays 1/4 under MQA': the MQA module's W_O share",
            Fraction(count(setup.mqa.W_O), count(setup.mqa)),
            Fraction(1, 4),
        ),
        fraction_differs(
            "'W_O is 1/4 of a layer': its share of MHA + FFN weights",
            Fraction(count(setup.mha.W_O), count(setup.mha) + count(setup.ffn)),
            Fraction(1, 4),
        ),
    ]


def notes(cfg: Config) -> list[str]:
    folded_gb = cfg.n_heads * cfg.d_model**2 * 4 / 1e9
    return [
        "Counts are numel() of real nn.Linear weights (bias=False) built on the device; "
        "shares are exact Fractions of those integer counts, so nothing here is rounded. "
        f"The MHA, MQA and GQA layers each run a forward pass on {PROBE_TOKENS} tokens first.",
        f"The folded W_V^h W_O^h tensor is built for real: {folded_gb:.2g} GB of float32 "
        "at these sizes.",
    ]


def run(scale: str = "small", device: str | DeviceChoice = "cpu", seed: int = 0) -> Report:
    return harness.run_module(__name__, scale, device, seed)
