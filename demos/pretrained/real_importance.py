"""real-importance: how well do head-importance scores rank a real model's heads?

For every layer of a real checkpoint, each head h gets three scores and two measured effects, on
the fixed paraphrase pairs in demos/pretrained/data/sentences.tsv:

- W_O-norm: ||W_O^h||_F, the deck's `head_importance` heuristic (weights only).
- activation-aware: the mean over real tokens of ||z_h W_O^h||, the size of what the head writes.
- gradient (Michel et al., 2019, "Are Sixteen Heads Really Better than One?"): a gate xi_h = 1
  multiplies head h's output; the score is E_x |dL/dxi_h| over sequences x. L is the model's
  own training objective for all-MiniLM-L6-v2 (multiple-negatives ranking over the paraphrase
  pairs, cosine similarity of mean-pooled embeddings scaled by 20); on other checkpoints the
  same objective serves as a proxy.
- zero-ablation effect: the mean over real tokens of ||H' - H|| / ||H|| of the last hidden state
  H when head h's z is set to 0 in that layer (the later layers rerun).
- mean-ablation effect: the same with z_h replaced by its mean over the sentences' tokens.

Checks, with pass bars argued before running:

1. Per layer, Spearman rho(activation-aware, zero-ablation effect) with a one-sided permutation
   p-value (all pairings of the 12 heads' scores, sampled). Pass at p <= 0.05, the conventional
   level for "ranks heads better than chance": zero ablation removes exactly z_h W_O^h at that
   layer, so if the later layers pass differences in size on in order, the ranking follows.
2. Per layer, rho(activation-aware) - rho(W_O-norm), both against the zero-ablation effect.
   Pass when > 0: the claim is comparative (the weight-only score ranks worse), so the bar is
   the comparison itself.
3. One layer (the middle one) reparameterised in float64: W_V^h, b_V^h times c_h and W_O^h
   divided by c_h, with c_h chosen so the new W_O norms are the old ones in reversed order.
   Identities: the last hidden state moves by <= 1e-10 (float64 rounding through 6 layers of
   O(10) activations is ~1e-13), the W_O-norm ranking's Spearman rho against the old one is -1,
   and the activation-aware scores move by <= 1e-10 relative.

The rho values for mean ablation and for the gradient score, each with its p-value, are reported
per layer in the notes (no pass bar: they are context for the cards, not part of the claim).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from prep.demos import harness
from prep.demos._torch import torch
from prep.demos.harness import IDENTITY, MEASUREMENT, Check
from prep.demos.pretrained import pretrained as pt

NAME = "real-importance"
DTYPE = torch.float32
CONTRAST_LABEL = "the W_O-norm score after the reparameterisation (same function)"
P_BAR = 0.05
REPARAM_BAR = 1e-10
MNRL_SCALE = 20.0  # sentence-transformers' MultipleNegativesRankingLoss default
# The shipped all-MiniLM-L6-v2 (6 layers): two measurements per layer, three identities for
# the reparameterisation and one for its effect on the W_O-norm score (the contrast).
CHECK_KINDS = {IDENTITY: 4, MEASUREMENT: 12}


@dataclass(frozen=True)
class Config:
    n_pairs: int  # paraphrase pairs from demos/pretrained/data/sentences.tsv
    permutations: int  # draws for each permutation p-value


SCALES = {
    "small": Config(n_pairs=4, permutations=2000),
    "large": Config(n_pairs=32, permutations=20000),
}


@dataclass
class Setup:
    cfg: Config
    real: pt.Real
    wo_norm: torch.Tensor  # (n_layers, n_heads) ||W_O^h||_F
    act: torch.Tensor  # (n_layers, n_heads) mean ||z_h W_O^h||
    grad: torch.Tensor  # (n_layers, n_heads) E |dL/dxi_h|
    zero: torch.Tensor  # (n_layers, n_heads) zero-ablation effect
    mean: torch.Tensor  # (n_layers, n_heads) mean-ablation effect
    reparam_layer: int
    out_before: torch.Tensor  # (N, T, d_model) float64 last hidden state (real tokens)
    out_after: torch.Tensor  # (N, T, d_model) the same after the reparameterisation
    wo_after: torch.Tensor  # (n_heads,) W_O norms of reparam_layer after
    act_before: torch.Tensor  # (n_heads,) float64 activation-aware scores of reparam_layer
    act_after: torch.Tensor  # (n_heads,)
    seed: int  # for the permutation p-values


def act_scores(z: torch.Tensor, w_o: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    writes = pt.per_head_writes(z, w_o)  # (n_heads, N, T, d_model)
    return pt.masked_mean(writes.norm(dim=-1), mask)  # (n_heads,)


def ablation_effects(
    real: pt.Real, cap: pt.Capture, mask: torch.Tensor, layer: int, means: torch.Tensor | None
) -> torch.Tensor:
    """Effect of ablating each head of `layer` (zero, or its mean when `means` is given)."""
    h, dh = real.n_heads, real.d_head
    n = cap.final.shape[0]

    def edit(concat: torch.Tensor) -> torch.Tensor:
        z = concat.unflatten(-1, (h, dh)).unflatten(0, (h, n)).clone()  # (h, N, T, h, dh)
        for k in range(h):  # copy k of the batch ablates head k
            z[k, :, :, k] = 0.0 if means is None else means[k]
        return z.flatten(0, 1).flatten(-2)  # (h*N, T, h*dh)

    with torch.no_grad():
        out = real.replay_from(layer, cap, edit, repeat=h).unflatten(0, (h, n))  # (h,N,T,d)
    rel = (out - cap.final).norm(dim=-1) / cap.final.norm(dim=-1)  # (h, N, T)
    return pt.masked_mean(rel, mask)  # (n_heads,)


def mnrl_loss(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """MultipleNegativesRankingLoss on mean-pooled embeddings: rows 2i, 2i+1 are a pair."""
    m = mask.to(hidden.dtype)[..., None]  # (N, T, 1)
    emb = (hidden * m).sum(1) / m.sum(1)  # (N, d_model)
    emb = torch.nn.functional.normalize(emb, dim=-1)
    logits = MNRL_SCALE * emb[0::2] @ emb[1::2].T  # (pairs, pairs)
    labels = torch.arange(logits.shape[0], device=logits.device)
    return torch.nn.functional.cross_entropy(logits, labels)


def gradient_scores(real: pt.Real, s: pt.Sentences) -> torch.Tensor:
    """Michel et al.'s E_x |dL/dxi_h|: per-sequence gates on every head, one backward pass."""
    n = s.input_ids.shape[0]
    gates = torch.ones(n, real.n_layers, real.n_heads, device=real.device, requires_grad=True)
    handles = []
    for layer in range(real.n_layers):

        def gate(mod: torch.nn.Module, inputs: tuple, layer: int = layer) -> tuple:
            concat = inputs[0]  # (N, T, h*dh)
            z = concat.unflatten(-1, (real.n_heads, real.d_head))  # (N, T, h, dh)
            return ((z * gates[:, layer, None, :, None]).flatten(-2), *inputs[1:])

        handles.append(real.out_proj(layer).register_forward_pre_hook(gate))
    try:
        with torch.enable_grad():
            loss = mnrl_loss(real.forward(s), s.mask)
            (grad,) = torch.autograd.grad(loss, gates)  # (N, n_layers, n_heads)
    finally:
        for handle in handles:
            handle.remove()
    return grad.abs().mean(0)  # (n_layers, n_heads)


def reversing_factors(norms: torch.Tensor) -> torch.Tensor:
    """c_h such that norms / c are the same values in reversed rank order."""
    order = norms.argsort()
    target = torch.empty_like(norms)
    target[order] = norms[order.flip(0)]
    return norms / target  # (n_heads,)


def build(cfg: Config, real: pt.Real, gen: torch.Generator) -> Setup:
    s = real.sentences(pt.paraphrase_pairs(cfg.n_pairs))
    cap = real.capture(s)
    rows = {key: [] for key in ("wo", "act", "zero", "mean")}
    for layer in range(real.n_layers):
        harness.progress(f"ablating the heads of layer {layer}")
        w_o = real.weights(layer).W_O.detach()  # (h, dh, d)
        z = cap.z[layer]  # (N, T, h, dh)
        means = (z * s.mask[..., None, None]).sum((0, 1)) / s.mask.sum()  # (h, dh)
        rows["wo"].append(w_o.norm(dim=(1, 2)))
        rows["act"].append(act_scores(z, w_o, s.mask))
        rows["zero"].append(ablation_effects(real, cap, s.mask, layer, None))
        rows["mean"].append(ablation_effects(real, cap, s.mask, layer, means))
    grad = gradient_scores(real, s)
    harness.progress("reparameterising one layer in float64")
    layer = real.n_layers // 2
    r64 = pt.in_float64(real)
    s64 = r64.sentences(pt.paraphrase_pairs(cfg.n_pairs))
    before = r64.capture(s64)
    norms = r64.weights(layer).W_O.norm(dim=(1, 2))
    act_before = act_scores(before.z[layer], r64.weights(layer).W_O, s64.mask)
    pt.reparameterise(r64, layer, reversing_factors(norms))
    after = r64.capture(s64)
    act_after = act_scores(after.z[layer], r64.weights(layer).W_O, s64.mask)
    seed = int(torch.randint(2**31, (1,), generator=gen, device=gen.device))
    stack = {k: torch.stack(v).cpu().double() for k, v in rows.items()}
    return Setup(
        cfg,
        real,
        stack["wo"],
        stack["act"],
        grad.detach().cpu().double(),
        stack["zero"],
        stack["mean"],
        layer,
        before.final,
        after.final,
        r64.weights(layer).W_O.norm(dim=(1, 2)).detach().cpu(),
        act_before.detach().cpu(),
        act_after.detach().cpu(),
        seed,
    )


def counterexample(cfg: Config, real: pt.Real, gen: torch.Generator) -> Setup:
    return break_claim(build(cfg, real, gen))


def break_claim(setup: Setup) -> Setup:
    """A copy reparameterised so W_O norms follow the zero-ablation ranking (same function),
    with activation-aware scores that rank the heads backwards (largest and smallest swapped)."""
    setup = dataclasses.replace(setup)
    twin = pt.in_float64(setup.real)
    norms = []
    for layer in range(twin.n_layers):
        old = twin.weights(layer).W_O.norm(dim=(1, 2))  # (n_heads,)
        rank = setup.zero[layer].argsort().argsort().to(old) + 1.0  # effect ranks 1..h
        pt.reparameterise(twin, layer, old / rank)  # now ||W_O^h|| = rank of h's effect
        norms.append(twin.weights(layer).W_O.norm(dim=(1, 2)).detach().cpu())
    setup.wo_norm = torch.stack(norms)  # (n_layers, n_heads), same function as the model
    # a score that ranks every layer's heads backwards: the same values, largest <-> smallest
    top, bottom = setup.act.amax(-1, keepdim=True), setup.act.amin(-1, keepdim=True)
    setup.act = top + bottom - setup.act
    setup.wo_after = setup.wo_norm[setup.reparam_layer]
    return setup


def rho_p(a: torch.Tensor, b: torch.Tensor, setup: Setup, gen: torch.Generator):
    return pt.permutation_p(a, b, gen, setup.cfg.permutations)


def check(setup: Setup) -> list[Check]:
    gen = torch.Generator().manual_seed(setup.seed)
    first, second = [], []
    for layer in range(setup.zero.shape[0]):
        rho_act, p_act = rho_p(setup.act[layer], setup.zero[layer], setup, gen)
        rho_wo = float(pt.spearman(setup.wo_norm[layer], setup.zero[layer]))
        first.append(
            pt.measurement(
                f"layer {layer}: Spearman rho(activation-aware score, zero-ablation effect)",
                rho_act,
                f"one-sided permutation p <= {P_BAR:g} (p = {p_act:.3g})",
                p_act <= P_BAR,
                "the size of what a head writes should track what removing it changes; "
                "a chance-level rho means the score does not rank this layer's heads",
            )
        )
        second.append(
            pt.measurement(
                f"layer {layer}: rho(activation-aware) - rho(W_O norm) = {rho_act:.3f} - "
                f"{rho_wo:.3f}, both vs zero-ablation",
                rho_act - rho_wo,
                "> 0",
                rho_act - rho_wo > 0,
                "W_O's norm is set by the parameterisation (W_V^h c, W_O^h / c is the same "
                "model), so it should not rank heads better than what they actually write",
            )
        )
    return first + second + reparam_checks(setup)


def reparam_checks(setup: Setup) -> list[Check]:
    layer = setup.reparam_layer
    wo_before = setup.wo_norm[layer]
    rel_act = ((setup.act_after - setup.act_before).abs() / setup.act_before).max()
    return [
        harness.at_most(
            f"float64, layer {layer}: W_V^h, b_V^h * c_h and W_O^h / c_h: last hidden state "
            "max |after - before|",
            (setup.out_after - setup.out_before).abs().max(),
            REPARAM_BAR,
            "c_h must multiply the value weights AND the value bias of head h, and divide the "
            "same head's W_O block",
            kind=IDENTITY,
        ),
        Check(
            f"layer {layer}: Spearman rho(W_O norms after, W_O norms before)",
            float(pt.spearman(setup.wo_after.double(), wo_before.double())),
            "== -1 (the ranking reversed)",
            float(pt.spearman(setup.wo_after.double(), wo_before.double())) == -1.0,
            "c_h = ||W_O^h|| / (the norm of the head at the mirrored rank) reverses the order",
            IDENTITY,
        ),
        harness.at_most(
            f"layer {layer}: activation-aware scores after vs before, max relative change",
            rel_act,
            REPARAM_BAR,
            "z_h W_O^h is what the head writes; the reparameterisation must not change it",
            kind=IDENTITY,
        ),
    ]


def contrast(setup: Setup, gen: torch.Generator) -> list[Check]:
    """The same model after the reparameterisation: W_O norm now ranks heads the other way."""
    layer = setup.reparam_layer
    before = float(pt.spearman(setup.wo_norm[layer], setup.zero[layer]))
    after = float(pt.spearman(setup.wo_after.double(), setup.zero[layer]))
    return [
        Check(
            f"layer {layer}: rho(W_O norm, zero-ablation) after the reparameterisation "
            f"(before: {before:.3f})",
            after,
            f"== {-before:.3f} (same model, the score's sign flips)",
            abs(after + before) < 1e-9,
            "ablation effects do not change (same function) while the W_O ranking reverses",
            IDENTITY,
        )
    ]


def notes(setup: Setup) -> list[str]:
    gen = torch.Generator().manual_seed(setup.seed + 1)
    lines = [
        "Per layer: Spearman rho (one-sided permutation p) of each score against the "
        "zero-ablation and the mean-ablation effect; "
        f"{setup.cfg.n_pairs * 2} sentences, {setup.cfg.permutations} permutations."
    ]
    for layer in range(setup.zero.shape[0]):
        parts = []
        for label, score in (("W_O-norm", setup.wo_norm), ("act", setup.act), ("grad", setup.grad)):
            for target_label, target in (("zero", setup.zero), ("mean", setup.mean)):
                rho, p = rho_p(score[layer], target[layer], setup, gen)
                parts.append(f"{label}~{target_label} {rho:+.2f} (p {p:.2g})")
        lines.append(f"layer {layer}: " + "; ".join(parts))
    return lines


run = pt.runner(__name__)
