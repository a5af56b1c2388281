"""mha-code: the interview's live-coding answer (multi-head attention written by hand) runs,
matches PyTorch's own attention, and costs what the FLOPs card says.

`CARD_CODE` is the runnable answer of the card `wo-code-mha`, verbatim (a content test holds
the card's code block equal to it): split the fused q/k/v projection, view each as
(B, T, n_heads, d_head) and transpose the heads forward, attend per head, transpose back,
`.contiguous().view` to the concat and apply o_proj. It is executed here and held against

- `torch.nn.functional.scaled_dot_product_attention` on the same q, k, v, then the same
  out_proj (identity: the same algebra, summed in another order);
- `torch.nn.MultiheadAttention` loaded with the same weights: its `in_proj_weight` is the
  stacked W_q; W_k; W_v and its `out_proj` runs once, after the heads are merged (identity);
- the FLOPs torch's own `FlopCounterMode` counts: o_proj costs 2·B·T·d_model² (one multiply
  and one add per weight per token) and the whole forward B·T·(8·d_model² + 4·T·d_model)
  (q/k/v 6d², o_proj 2d², scores and weighted sum 2·T·d each); the softmax is not a matmul
  and is not counted (identity: a count, the same for any weights);
- the backward pass: o_proj.weight.grad equals δᵀ · concat (nn.Linear's (out, in) layout), so
  the concat must be kept for it (identity);
- a head's attention logits q kᵀ (T × T) have rank at most d_head: the low-rank bottleneck of
  a narrow head (identity; one big head of width d_model would lift it).

The contrast is the classic bug: `.view(B, T, d_model)` on the (B, n_heads, T, d_head) output
without transposing back. The shapes match and nothing raises, yet heads and positions are
scrambled; it is measured against the reference (it could be small only in degenerate sizes).
"""

from __future__ import annotations

from dataclasses import dataclass

from prep.demos import harness
from prep.demos._torch import torch
from prep.demos.harness import IDENTITY, SANITY, Check, DeviceChoice, Report
from prep.demos.synthetic import attention as attn

NAME = "mha-code"
DTYPE = torch.float32
CONTRAST_LABEL = "the same code with .view(B, T, D) before transposing the heads back"
SCALES = attn.standard_scales()
CHECK_KINDS = {IDENTITY: 6, SANITY: 1}

# The card's answer (questions/wo-core.yaml, wo-code-mha), character for character.
CARD_CODE = """\
class MHA(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.h, self.d_head = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)  # W_q; W_k; W_v stacked
        self.o_proj = nn.Linear(d_model, d_model)  # W_O

    def forward(self, x):  # (B, T, D)
        B, T, D = x.shape
        q, k, v = self.qkv(x).split(D, dim=-1)  # 3 x (B, T, D)
        q, k, v = (t.view(B, T, self.h, self.d_head).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1) / self.d_head**0.5).softmax(dim=-1)  # (B, h, T, T)
        z = (att @ v).transpose(1, 2).contiguous().view(B, T, D)  # concat: (B, T, D)
        return self.o_proj(z)"""

# The bug: the heads are never transposed back, so .view interleaves heads and positions.
BUG_CODE = CARD_CODE.replace(
    "z = (att @ v).transpose(1, 2).contiguous().view(B, T, D)",
    "z = (att @ v).view(B, T, D)",
)
assert BUG_CODE != CARD_CODE


def load(code: str) -> type:
    """The MHA class the code defines (executed with torch's nn in scope, nothing else)."""
    scope: dict[str, object] = {"nn": torch.nn, "torch": torch}
    exec(compile(code, "<card wo-code-mha>", "exec"), scope)  # noqa: S102 - our own card text
    return scope["MHA"]  # type: ignore[return-value]


@dataclass
class Setup:
    cfg: attn.Sizes
    x: torch.Tensor  # (B, T, d_model)
    module: torch.nn.Module  # the card's MHA (or the buggy one), weights drawn from gen


def _module(code: str, cfg: attn.Sizes, device: torch.device, gen: torch.Generator):
    d = cfg.d_model
    module = load(code)(d, cfg.n_heads).to(device=device, dtype=DTYPE)
    with torch.no_grad():
        module.qkv.weight.copy_(attn.randn((3 * d, d), gen, DTYPE) / d**0.5)  # (3D, D)
        module.qkv.bias.copy_(attn.randn((3 * d,), gen, DTYPE) / 10)  # (3D,)
        module.o_proj.weight.copy_(attn.randn((d, d), gen, DTYPE) / d**0.5)  # (D, D)
        module.o_proj.bias.copy_(attn.randn((d,), gen, DTYPE) / 10)  # (D,)
    return module


def build(cfg: attn.Sizes, device: torch.device, gen: torch.Generator) -> Setup:
    x = attn.random_inputs(cfg, gen, DTYPE)  # (B, T, d_model)
    return Setup(cfg, x, _module(CARD_CODE, cfg, device, gen))


def counterexample(cfg: attn.Sizes, device: torch.device, gen: torch.Generator) -> Setup:
    x = attn.random_inputs(cfg, gen, DTYPE)  # (B, T, d_model)
    return Setup(cfg, x, _module(BUG_CODE, cfg, device, gen))


def reference(setup: Setup) -> tuple[torch.Tensor, torch.Tensor]:
    """(output, concat) from the same weights through scaled_dot_product_attention."""
    m, x = setup.module, setup.x
    B, T, D = x.shape
    h = setup.cfg.n_heads
    q, k, v = torch.nn.functional.linear(x, m.qkv.weight, m.qkv.bias).split(D, dim=-1)
    q, k, v = (t.reshape(B, T, h, D // h).transpose(1, 2) for t in (q, k, v))  # (B,h,T,dh)
    z = torch.nn.functional.scaled_dot_product_attention(q, k, v)  # (B, h, T, d_head)
    concat = z.transpose(1, 2).reshape(B, T, D)  # (B, T, D) head h in dims h*dh:(h+1)*dh
    return torch.nn.functional.linear(concat, m.o_proj.weight, m.o_proj.bias), concat


def torch_mha(setup: Setup) -> torch.Tensor:
    """nn.MultiheadAttention with the module's weights: in_proj = qkv, out_proj = o_proj."""
    m, d = setup.module, setup.cfg.d_model
    ref = torch.nn.MultiheadAttention(d, setup.cfg.n_heads, batch_first=True)
    ref = ref.to(device=setup.x.device, dtype=DTYPE)
    with torch.no_grad():
        ref.in_proj_weight.copy_(m.qkv.weight)  # (3D, D) W_q; W_k; W_v
        ref.in_proj_bias.copy_(m.qkv.bias)  # (3D,)
        ref.out_proj.weight.copy_(m.o_proj.weight)  # (D, D) applied after the heads merge
        ref.out_proj.bias.copy_(m.o_proj.bias)  # (D,)
        out, _ = ref(setup.x, setup.x, setup.x, need_weights=False)  # (B, T, D)
    return out


def flops(setup: Setup) -> tuple[int, int]:
    """(o_proj's FLOPs, the whole forward's) in one forward, counted by torch's
    FlopCounterMode (which also counts per submodule)."""
    from torch.utils.flop_counter import FlopCounterMode

    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        setup.module(setup.x)
    per_module = {k: sum(v.values()) for k, v in counter.get_flop_counts().items()}
    o_proj = sum(n for k, n in per_module.items() if k.endswith(".o_proj"))
    return int(o_proj), int(counter.get_total_flops())


def check(setup: Setup) -> list[Check]:
    cfg = setup.cfg
    B, T, D = cfg.batch, cfg.seq_len, cfg.d_model
    rtol, atol = harness.tolerance(DTYPE, D)
    with torch.no_grad():
        mine = setup.module(setup.x)  # (B, T, D)
        ref, _ = reference(setup)  # (B, T, D)
    o_flops, total = flops(setup)
    # backward: dL/dW_O = concat^T delta; nn.Linear stores (out, in), so weight.grad = delta^T concat
    setup.module.zero_grad()
    out = setup.module(setup.x)  # (B, T, D)
    delta = torch.randn(
        out.shape,
        generator=torch.Generator(out.device).manual_seed(1),
        device=out.device,
        dtype=DTYPE,
    )  # (B, T, D) dL/d(out) for L = <out, delta>
    (out * delta).sum().backward()
    _, concat = reference(setup)  # (B, T, D) the heads' concat, from the reference path
    expected_grad = delta.reshape(-1, D).T @ concat.reshape(-1, D)  # (D, D) summed over tokens
    hint = (
        "did the heads go back to (B, T, n_heads, d_head) before the view? "
        "(att @ v) is (B, n_heads, T, d_head): transpose(1, 2), then .contiguous().view(B, T, D)"
    )
    # a head's attention logits Q_h K_h^T are (T, T) but factor through d_head-wide vectors
    m, h = setup.module, cfg.n_heads
    q, k, _ = torch.nn.functional.linear(setup.x[0], m.qkv.weight, m.qkv.bias).split(D, dim=-1)
    dh = D // m.h  # the module's own head width (d_model // n_heads in the card's code)
    q0, k0 = q[:, :dh], k[:, :dh]  # (T, d_head) head 0's queries and keys
    rank = int(torch.linalg.matrix_rank(q0.double() @ k0.double().T))  # (T, T) head 0 logits
    checks = [
        harness.at_most(
            f"rank of head 0's logits q kᵀ (T = {T})  <=  d_head = {D // h}",
            rank,
            D // h,
            detail="a head's scores factor through d_head-wide q and k: below T, some "
            "attention patterns are out of reach (the low-rank bottleneck)",
            kind=IDENTITY,
        ),
    ]
    return checks + [
        harness.close(
            "card code  vs  scaled_dot_product_attention + out_proj",
            mine,
            ref,
            rtol=rtol,
            atol=atol,
            detail=hint,
            kind=IDENTITY,
        ),
        harness.close(
            "card code  vs  nn.MultiheadAttention (in_proj = qkv, out_proj = o_proj)",
            mine,
            torch_mha(setup),
            rtol=rtol,
            atol=atol,
            detail=hint,
            kind=IDENTITY,
        ),
        harness.equals(
            "o_proj FLOPs (FlopCounterMode)  ==  2·B·T·d_model²",
            o_flops,
            2 * B * T * D * D,
            detail="one multiply and one add per weight per token",
            kind=IDENTITY,
        ),
        harness.equals(
            "forward FLOPs  ==  B·T·(8·d_model² + 4·T·d_model)",
            total,
            B * T * (8 * D * D + 4 * T * D),
            detail="q/k/v 6·d², o_proj 2·d², scores 2·T·d and weighted sum 2·T·d per token; "
            "a recomputed or extra matmul shows up here",
            kind=IDENTITY,
        ),
        harness.close(
            "o_proj.weight.grad  vs  deltaᵀ · concat",
            setup.module.o_proj.weight.grad,
            expected_grad,
            rtol=rtol,
            atol=atol * T,
            detail="the gradient of W_O needs the concat: "
            "store it (or recompute it) for the backward pass; " + hint,
            kind=IDENTITY,
        ),
    ]


def contrast(setup: Setup, gen: torch.Generator) -> list[Check]:
    bug = _module(BUG_CODE, setup.cfg, setup.x.device, gen)
    with torch.no_grad():
        bug.load_state_dict(setup.module.state_dict())
        wrong = bug(setup.x)  # (B, T, D)
        ref, _ = reference(setup)  # (B, T, D)
    return [
        harness.at_least(
            "view before transposing back: ||out - reference|| / ||reference||",
            harness.relative_error(wrong, ref),
            0.5,
            kind=SANITY,  # a generic fact: a wrong reshape errs on any weights
        )
    ]


def notes(cfg: attn.Sizes) -> list[str]:
    d, t = cfg.d_model, cfg.seq_len
    share = 2 * d * d / (8 * d * d + 4 * t * d)
    return [
        f"At these sizes (d_model {d}, T {t}) o_proj is {share:.1%} of the forward FLOPs; its "
        "share falls as T grows past d_model, since the scores and the weighted sum cost 4·T·d "
        "per token and o_proj 2·d².",
        "`.transpose(1, 2).view(...)` without `.contiguous()` raises (the transposed tensor is "
        "not contiguous); `.reshape` copies when it must. A `.view` without the transpose is "
        "the silent bug the contrast measures.",
    ]


def run(scale: str = "small", device: str | DeviceChoice = "cpu", seed: int = 0) -> Report:
    return harness.run_module(__name__, scale, device, seed)
