"""dla: direct logit attribution on the shipped decoder, and what it misses.

The shipped decoder has no LayerNorm and no MLP, so the final residual stream is a plain sum:

    x_L = W_E[tok] + W_pos[t] + sum_{l,h} z_{l,h} W_O^{l,h} + sum_l b_O^l

and logits = x_L W_U + b_U split exactly into one term per component: the direct path
(embedding and positional), each head's z_{l,h} W_O^{l,h} W_U, each layer's b_O^l W_U, and b_U.
(With a final LayerNorm the split needs the LayerNorm's scale frozen per position; it is not exact.)
That is an identity. A head's direct logit attribution (DLA) on the copying task is its term's
value on the correct next token minus its mean over the vocabulary (a constant shift of every
logit changes nothing), averaged over the copyable positions.

What DLA leaves out is measured against mean-ablation (the head's output replaced by its mean,
everything downstream recomputed): the drop in the same logit difference. A head that works
through another head (the layer-0 previous-token head feeds the layer-1 induction head's keys) has
a large ablation effect and a small DLA.

How much the layer-1 checks can tell: a layer-1 head writes straight into the final residual, so
(with no LayerNorm) its mean-ablation effect is exactly its DLA minus the DLA of its mean write.
On random-token targets that mean write favours no token, so agreement for layer-1 heads is
nearly automatic (measured: ratio 1.000 for the induction head). The informative measurement is
layer 0, whose heads act through layer 1: measured DLA ~0.00 against ablation effects up to 3.6
(the largest of all heads), so ranking heads by DLA would rank the most important head last.

Pass bars (argued before the first run on the shipped weights):
- the sum of the parts equals the logits to float64 assert_close tolerances (identity);
- the layer-1 head with the largest DLA is the layer-1 head whose ablation costs the most
  (layer-1 heads write straight into the residual the unembedding reads, so direct and total
  effect should rank them the same);
- the induction head's DLA is at least half of its ablation effect ("mostly direct");
- the previous-token head's (the layer-0 head with the most attention on t-1) |DLA| is at most a
  quarter of its ablation effect ("mostly indirect").
"""

from __future__ import annotations

from dataclasses import dataclass

from prep.demos import harness
from prep.demos._torch import torch
from prep.demos.decoder import decoder
from prep.demos.harness import IDENTITY, MEASUREMENT, Check, DeviceChoice, Report

NAME = "dla"
DTYPE = torch.float64  # 13 terms summed: keep the identity's rounding at 1e-12, not 1e-5
CONTRAST_LABEL = "the same decoder with a final LayerNorm, and untrained"
# The sum of parts is exact without LayerNorm; the attribution-vs-ablation comparisons and
# both contrasts are measured on the shipped (and untrained) decoder.
CHECK_KINDS = {IDENTITY: 1, MEASUREMENT: 5}
DIRECT_BAR = 0.5
INDIRECT_BAR = 0.25


@dataclass(frozen=True)
class Config:
    n_sequences: int


SCALES = {"small": Config(n_sequences=256), "large": Config(n_sequences=8192)}


@dataclass
class Setup:
    cfg: Config
    obs: decoder.Observed
    parts: dict[str, torch.Tensor]  # component name -> its logits (B, T, vocab)
    logits: torch.Tensor  # (B, T, vocab) the model's logits the parts must sum to
    dla: dict[tuple[int, int], float]  # (layer, head) -> mean direct attribution
    ablation: dict[tuple[int, int], float]  # (layer, head) -> mean drop of the same quantity
    prev: int  # layer-0 previous-token head
    ind: int  # layer-1 induction head


def components(params: dict[str, torch.Tensor], obs: decoder.Observed) -> dict[str, torch.Tensor]:
    """Every additive term of the logits, each (B, T, vocab)."""
    w_u = params["W_U"]  # (d_model, vocab)
    seq = obs.data.tokens.shape[1]
    parts = {
        "embed": params["W_E"][obs.data.tokens] @ w_u,  # (B, T, vocab)
        "pos": (params["W_pos"][:seq] @ w_u).expand_as(obs.logits),  # (B, T, vocab)
        "b_U": params["b_U"].expand_as(obs.logits),  # (B, T, vocab)
    }
    for layer, z in enumerate(obs.cache.z):  # z: (B, T, n_heads, d_head)
        w = decoder.layer_params(params, layer)
        writes = torch.einsum("bthd,hdm->hbtm", z, w["W_O"])  # (n_heads, B, T, d_model)
        for h in range(z.shape[2]):
            parts[f"L{layer}H{h}"] = writes[h] @ w_u  # (B, T, vocab)
        parts[f"b_O{layer}"] = (w["b_O"] @ w_u).expand_as(obs.logits)  # (B, T, vocab)
    return parts


def correct_minus_mean(logits: torch.Tensor, data: decoder.Batch) -> torch.Tensor:
    """logit of the correct next token minus the mean logit, at copyable positions: (N,)."""
    b, t = data.predictable[:, :-1].nonzero(as_tuple=True)  # (N,), (N,)
    target = data.tokens[b, t + 1]  # (N,)
    return logits[b, t, target] - logits[b, t].mean(-1)  # (N,)


def measure(cfg: Config, model_cfg, params: dict, gen: torch.Generator, final_ln: bool) -> Setup:
    obs = decoder.observe(model_cfg, params, cfg.n_sequences, gen)
    logits = obs.logits
    if (
        final_ln
    ):  # a model with a final LayerNorm (no affine) before W_U: the split is no longer exact
        resid = torch.nn.functional.layer_norm(obs.cache.resid[-1], (model_cfg.d_model,))
        logits = resid @ params["W_U"] + params["b_U"]  # (B, T, vocab)
    parts = components(params, obs)
    heads = [(ly, h) for ly in range(model_cfg.n_layers) for h in range(model_cfg.n_heads)]
    dla = {
        (ly, h): float(correct_minus_mean(parts[f"L{ly}H{h}"], obs.data).mean()) for ly, h in heads
    }
    base = correct_minus_mean(obs.logits, obs.data).mean()
    harness.progress("ablating each head")
    ablation = {
        (ly, h): float(
            base
            - correct_minus_mean(
                decoder.ablated_logits(params, obs.data, obs.cache, [(ly, h)]), obs.data
            ).mean()
        )
        for ly, h in heads
    }
    prev = int(decoder.prev_token_scores(obs.cache.pattern[0]).argmax())
    ind = int(decoder.induction_scores(obs.cache.pattern[1], obs.data).argmax())
    return Setup(cfg, obs, parts, logits, dla, ablation, prev, ind)


def build(cfg: Config, device: torch.device, gen: torch.Generator) -> Setup:
    harness.progress("loading the shipped decoder")
    model_cfg, params, _ = decoder.load(device=device)
    return measure(cfg, model_cfg, {k: v.to(DTYPE) for k, v in params.items()}, gen, False)


def counterexample(cfg: Config, device: torch.device, gen: torch.Generator) -> Setup:
    """The untrained decoder with a final LayerNorm: the split is inexact and nothing copies."""
    model_cfg, _, _ = decoder.load(device=device)
    return measure(cfg, model_cfg, decoder.untrained(model_cfg, gen, DTYPE), gen, True)


def _ranked(values: dict[tuple[int, int], float]) -> str:
    order = sorted(values, key=values.get, reverse=True)
    return ", ".join(f"L{ly}H{h} {values[(ly, h)]:.2f}" for ly, h in order)


def check(setup: Setup) -> list[Check]:
    total = sum(setup.parts.values())  # (B, T, vocab)
    rtol, atol = harness.tolerance(DTYPE, setup.obs.cfg.d_model)
    layer1 = [k for k in setup.dla if k[0] == 1]
    top_dla = max(layer1, key=setup.dla.get)
    top_abl = max(layer1, key=setup.ablation.get)
    ind, prev = (1, setup.ind), (0, setup.prev)
    return [
        harness.close(
            f"sum of the {len(setup.parts)} parts (direct path, each head's z W_O W_U, biases)  "
            "vs  the logits",
            total,
            setup.logits,
            rtol=rtol,
            atol=atol,
            detail="the logits are linear in the final residual only without a final LayerNorm; "
            "with one, each position's scale must be frozen and the split is approximate",
        ),
        Check(
            f"layer 1: head with the largest DLA == head whose ablation costs most (DLA: "
            f"{_ranked(setup.dla)}; ablation: {_ranked(setup.ablation)})",
            int(top_dla == top_abl),
            "== 1",
            top_dla == top_abl,
            "direct attribution and ablation rank the layer-1 heads differently",
            MEASUREMENT,
        ),
        harness.at_least(
            f"induction head L1H{setup.ind}: DLA / ablation effect",
            setup.dla[ind] / setup.ablation[ind] if setup.ablation[ind] > 0 else float("nan"),
            DIRECT_BAR,
            "the induction head should raise the copied token's logit directly",
            kind=MEASUREMENT,
        ),
        harness.at_most(
            f"L0H{setup.prev} (most attention on t-1 in layer 0): |DLA| / ablation effect",
            abs(setup.dla[prev]) / setup.ablation[prev]
            if setup.ablation[prev] > 0
            else float("nan"),
            INDIRECT_BAR,
            "the previous-token head should matter through the induction head's keys, not by "
            "writing the answer itself; DLA would then miss it",
            kind=MEASUREMENT,
        ),
    ]


def contrast(setup: Setup, gen: torch.Generator) -> list[Check]:
    """The split with a final LayerNorm, and the attributions of the untrained decoder."""
    model_cfg = setup.obs.cfg
    with_ln = measure(setup.cfg, model_cfg, setup.obs.params, gen, True)
    total = sum(with_ln.parts.values())  # (B, T, vocab)
    fresh = measure(setup.cfg, model_cfg, decoder.untrained(model_cfg, gen, DTYPE), gen, False)
    return [
        harness.at_least(
            "with a final LayerNorm: relative error of the sum of parts",
            harness.relative_error(total, with_ln.logits),
            0.1,
            kind=MEASUREMENT,
        ),
        harness.at_most(
            "untrained: largest head DLA to the correct token",
            max(fresh.dla.values()),
            0.5 * setup.dla[(1, setup.ind)],
            kind=MEASUREMENT,
        ),
    ]


def notes(cfg: Config) -> list[str]:
    return [
        "DLA of a head = its term z W_O W_U at the correct next token minus that term's mean "
        f"over the vocabulary, averaged over the copyable positions of {cfg.n_sequences} fresh "
        "sequences; ablation effect = drop of the same quantity when the head is mean-ablated.",
        "float64: the identity's residual is rounding only.",
        "For a last-layer head, mean-ablation's effect = its DLA minus the DLA of its mean "
        "write, so layer-1 agreement is nearly automatic; layer 0's heads are where DLA and "
        "ablation part (their effect runs through the layer-1 heads' keys and queries).",
    ]


def run(scale: str = "small", device: str | DeviceChoice = "cpu", seed: int = 0) -> Report:
    return harness.run_module(__name__, scale, device, seed)
