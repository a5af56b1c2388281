"""induction: the shipped decoder copies in context through Q-composition, at three seeds.

The model (demos/decoder/weights/decoder*.safetensors, trained here by `python -m prep.demos.decoder.train_decoder`
at seeds 0, 1 and 2, each seed's JSON beside its weights) is a 2-layer attention-only decoder
trained on random tokens whose random-length chunk repeats. An induction head (Elhage et al. 2021;
Olsson et al. 2022) in layer 1 attends from a repeated token A to the token after A's earlier
occurrence and copies it. Layer 1 can find that position with layer 0's help in two ways: its
keys read "the token before me was A" from a previous-token head (K-composition, the textbook
circuit), or its queries read "I am a token that occurred before" (and where) from a
duplicate-token head (Q-composition). Which one training built is the question; see
`prep.demos.decoder.circuit` for how each is measured (composition scores against shuffled weights, and
mean-ablating layer 0's writes in layer 1's queries, keys or values only).

Pass bars, argued before the run (they did not move after it):
- "attends": at least half of a head's attention (ATTENTION_BAR = 0.5). Causal attention spread
  evenly over ~16 keys gives ~0.06, so 0.5 cannot come from an unspecialised head.
- composition: the score must beat the largest of every pair's score on every shuffled copy of
  the weights (shuffling keeps each tensor's values, so norms and scale, and removes structure;
  the maximum over 16 pairs x n_shuffles is a strict, multiple-comparison-safe bar).
- a "large" accuracy drop: at least DROP_BAR = 0.2 absolute, a fifth of the copyable positions;
  "no large drop" is below the same bar.
- the named path (added by the audit, 2026-12-02, demos/BARS.md): the claim names one layer-0
  head, so removing only that head's write from layer 1's queries must cost a large drop too
  (DROP_BAR reused; the other path ablations remove every layer-0 head at once). Not blind: a
  probe had measured 0.60, 0.80 and 0.82 before the check was written.
- "redundant" induction heads (argued before the run, demos/BARS.md, 2026-12-01): removing them
  all together costs more than the sum of removing each alone (they cover for each other). It
  replaces "any one alone costs less than DROP_BAR", which reused the large-drop bar.
- "mainly Q" (argued before the run, demos/BARS.md, 2026-12-01): the queries path carries the
  larger part of what layer 0 does for layer 1, in two readings, both at every seed: removing
  layer 0 from the queries only costs more than removing it from the keys only and from the
  values only together (q > k + v; the alternative that could have won is the textbook
  K-composition circuit), and more than half of removing it from all three paths at once
  (q / all > 1/2; all <= 0 fails). 0 and 1/2 are what "more than the others together" and "more
  than half" mean: no number is chosen by hand. This replaces "q - k >= DROP_BAR", which reused
  the large-drop bar. One drop's sampling noise is ~0.01 at 256 sequences (a binomial share of
  ~1800 copyable positions).
- "attends because of the repeat" (audit15, demos/BARS.md, pre-registered before its first run):
  the attention rows are held against the same trained head on twins of each sequence whose
  second copy is redrawn (no query's token equals the token at t - L; same positions, lengths
  and first copy): at every seed some head's excess over its twins, minus Z_TWIN = 2.807 standard
  errors (sequences as units; one-sided 99% for each of the 4 heads), is at least ATTENTION_BAR.
- the heads the ablation checks remove (audit16, demos/BARS.md, pre-registered before its first
  run): each layer-1 head whose own twin-excess lower bound (the row above's test, per head) is at
  least ATTENTION_BAR, not every head with raw attention >= ATTENTION_BAR (a positional head has
  that). A raw-only head left out is printed beside.
Uncertainty: every number is measured on each of the three seeds; a check holds only if it holds
in the worst seed, and it prints every seed's value.

History: the first version claimed K-composition from the layer-0 head with most attention on
t-1. That head puts only 0.13-0.18 of its attention on t-1, its K-composition (0.30 at seed 0)
is not above the shuffled scores at seed 1, and removing layer 0 from the keys costs 0.09-0.18
where removing it from the queries costs ~0.8: the claim now says what the model does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from prep.demos import harness
from prep.demos._torch import torch
from prep.demos.decoder import circuit, decoder
from prep.demos.harness import MEASUREMENT, SANITY, Check, DeviceChoice, Report

NAME = "induction"
DTYPE = torch.float32
CONTRAST_LABEL = "the same decoder untrained (its initial weights, one per seed)"
# Ten measured on the shipped decoder's three seeds, four sanity checks on its initialisation.
CHECK_KINDS = {MEASUREMENT: 10, SANITY: 4}
ATTENTION_BAR = 0.5
Z_TWIN = 2.807  # one-sided 99% for each of 4 heads (Bonferroni, 0.01 / 4): demos/BARS.md, audit15
TWIN_SEED = 5  # the twins' tokens draw from the run's seed + 5 + the decoder's index
DROP_BAR = 0.2


@dataclass(frozen=True)
class Config:
    n_sequences: int  # fresh copying-task sequences the heads are measured on, per seed
    n_shuffles: int  # shuffled-weight copies whose composition scores make the null, per seed


SCALES = {
    "small": Config(n_sequences=256, n_shuffles=100),
    "large": Config(n_sequences=8192, n_shuffles=2000),
}


@dataclass
class Seed:
    """One trained model's circuit and its heads' ablations."""

    seed: int
    circuit: circuit.Circuit
    dup: int  # the layer-0 head with the most attention on the earlier occurrence
    inductors: list[int]  # layer-1 heads whose twin-excess bound is >= ATTENTION_BAR (`select`)
    raw_only: list[int]  # layer-1 heads with raw attention >= ATTENTION_BAR left out by the bound
    drop_all: float  # accuracy drop with every induction head mean-ablated at once
    drop_singles: list[float]  # per induction head: the drop with it alone mean-ablated
    dup_q_drop: float  # the drop with only the duplicate-token head removed from layer 1's queries


@dataclass
class Setup:
    cfg: Config
    seeds: list[Seed]


def measure_one(seed: int, cfg: Config, params: dict, model_cfg, gen: torch.Generator) -> Seed:
    twin_gen = torch.Generator(device=gen.device).manual_seed(gen.initial_seed() + TWIN_SEED + seed)
    c = circuit.measure(params, model_cfg, cfg.n_sequences, cfg.n_shuffles, gen, twin_gen)
    inductors, raw_only = select(c)
    obs = decoder.observe(model_cfg, params, cfg.n_sequences, gen)
    acc = obs.accuracy
    drop_all = acc - obs.accuracy_without([(1, h) for h in inductors]) if inductors else 0.0
    singles = [acc - obs.accuracy_without([(1, h)]) for h in inductors]
    dup = int(c.duplicate.argmax())
    return Seed(seed, c, dup, inductors, raw_only, drop_all, singles, named_path_drop(obs, dup))


def select(c: circuit.Circuit) -> tuple[list[int], list[int]]:
    """The layer-1 heads the ablation checks remove: those whose excess attention on the token
    after the earlier copy over their twins, less Z_TWIN se, is at least ATTENTION_BAR (the
    layer-1 row's test, per head: demos/BARS.md, audit16); and the heads with raw attention
    >= ATTENTION_BAR that this leaves out (the old rule's heads, printed beside)."""
    assert c.twins is not None, "measured without twins"
    bound = c.twins[1].bound(Z_TWIN)  # (h,)
    chosen = [h for h in range(bound.shape[0]) if float(bound[h]) >= ATTENTION_BAR]
    raw = [h for h in range(c.induction.shape[0]) if float(c.induction[h]) >= ATTENTION_BAR]
    return chosen, [h for h in raw if h not in chosen]


def named_path_drop(obs: decoder.Observed, head: int) -> float:
    """In-context accuracy drop when only layer-0 head `head`'s write is mean-ablated in layer
    1's queries (every other head, and the keys, values and direct path, left as they are): the
    one path the claim names, head by head, where drop["q"] removes all of layer 0 at once."""
    ablation = circuit.PathAblation(obs.params, obs.data.tokens, obs.cache, heads=[head])
    logits = ablation.logits(("q",))  # (B, T, vocab)
    edited = decoder.in_context_accuracy(logits, obs.data.tokens, obs.data.predictable)
    return obs.accuracy - float(edited)


def build(cfg: Config, device: torch.device, gen: torch.Generator) -> Setup:
    seeds = []
    for path in circuit.seed_files():
        model_cfg, params, meta = decoder.load(path, device=device)
        harness.progress(f"measuring the decoder trained at seed {meta['seed']}")
        seeds.append(measure_one(int(meta["seed"]), cfg, params, model_cfg, gen))
    return Setup(cfg, seeds)


def counterexample(cfg: Config, device: torch.device, gen: torch.Generator) -> Setup:
    """The decoder at initialisation, three draws: no head has specialised."""
    model_cfg, _, _ = decoder.load(device=device)
    return Setup(
        cfg,
        [
            measure_one(s, cfg, decoder.untrained(model_cfg, gen, DTYPE), model_cfg, gen)
            for s in range(len(circuit.seed_files()))
        ],
    )


def _per_seed(values: list[float], digits: int = 2) -> str:
    return ", ".join(f"{v:.{digits}f}" for v in values)


def q_score(s: Seed) -> float:
    """Mean Q-composition of the strongest duplicate-token head into the induction heads."""
    readers = s.inductors or list(range(s.circuit.comp["q"].shape[1]))
    return float(s.circuit.comp["q"][s.dup, readers].mean())


def q_ratio(s: Seed) -> float:
    """`q_score` over the largest shuffled score (> 1: above every shuffled pair)."""
    return q_score(s) / s.circuit.null_max["q"]


def head_list(s: Seed) -> str:
    """'L0H2 duplicate-token, L1H0, L1H1 induction (bounds 0.68, 0.73)': the heads the ablation
    checks remove, each with its twin-excess lower bound, and any raw-only head left out."""
    assert s.circuit.twins is not None, "measured without twins"
    bound = s.circuit.twins[1].bound(Z_TWIN)  # (h,)
    out = f"L0H{s.dup} duplicate-token, " + (", ".join(f"L1H{h}" for h in s.inductors) or "no")
    out += " induction"
    if s.inductors:
        out += f" (bounds {_per_seed([float(bound[h]) for h in s.inductors])})"
    if s.raw_only:
        left = ", ".join(f"L1H{h} {float(bound[h]):.2f}" for h in s.raw_only)
        out += f", raw >= {ATTENTION_BAR:g} but bound below it: {left}"
    return out


def twin_row(seeds: list[Seed], layer: int) -> tuple[float, str]:
    """The worst seed's largest lower bound on a layer's excess attention over the twins, and
    per seed the head with the largest bound: its raw, twin and excess attention."""
    bounds: list[float] = []
    heads: list[str] = []
    parts: dict[str, list[float]] = {"raw": [], "twin": [], "excess": [], "se": []}
    for s in seeds:
        assert s.circuit.twins is not None, "measured without twins"
        t = s.circuit.twins[layer]
        bound = t.bound(Z_TWIN)  # (h,)
        h = int(bound.argmax())
        bounds.append(float(bound[h]))
        heads.append(f"L{layer}H{h}")
        for key in ("raw", "twin", "excess", "se"):
            parts[key].append(float(getattr(t, key)[h]))
    text = (
        f"per seed {_per_seed(parts['raw'])} ({', '.join(heads)}); on the twins "
        f"{_per_seed(parts['twin'])}; excess {_per_seed(parts['excess'])} (se "
        f"{_per_seed(parts['se'], 3)}); bound {_per_seed(bounds)}"
    )
    return min(bounds), text


def check(setup: Setup) -> list[Check]:
    seeds = setup.seeds
    n = len(seeds)
    prev = [float(s.circuit.previous.max()) for s in seeds]
    ratio = [q_ratio(s) for s in seeds]
    drop = {p: [s.circuit.drop[p] for s in seeds] for p in circuit.PATHS}
    drop_all = [s.circuit.drop_all_paths for s in seeds]
    dup_q = [s.dup_q_drop for s in seeds]
    dup_share = [d / q if q > 0 else math.nan for d, q in zip(dup_q, drop["q"], strict=True)]
    # "mainly Q", two readings (module docstring, demos/BARS.md): q > k + v, and q / all > 1/2
    over_rest = [q - (k + v) for q, k, v in zip(drop["q"], drop["k"], drop["v"], strict=True)]
    share = [q / a if a > 0 else float("nan") for q, a in zip(drop["q"], drop_all, strict=True)]
    worst_share = float("nan") if any(math.isnan(x) for x in share) else min(share)
    # "redundant" (demos/BARS.md): together they cost more than one at a time, summed
    backup = [s.drop_all - sum(s.drop_singles) if s.drop_singles else float("nan") for s in seeds]
    backup = [float("nan")] if any(math.isnan(b) for b in backup) else backup
    heads = "; ".join(f"seed {s.seed}: {head_list(s)}" for s in seeds)
    worst = f"worst of {n} seeds"
    attention_bar = (
        "half the attention, counted only where the repeat puts it: the same head on twins "
        f"whose second copy does not repeat is subtracted, less {Z_TWIN} se (99% for each of "
        f"{len(seeds[0].circuit.duplicate)} heads); argued before the run, demos/BARS.md (audit15)"
    )
    drop_bar = "a fifth of the copyable positions, argued before the first run"
    dup_bound, dup_text = twin_row(seeds, 0)
    ind_bound, ind_text = twin_row(seeds, 1)
    return [
        harness.at_least(
            f"layer 0: largest attention from a repeated token to its earlier occurrence "
            f"(duplicate-token head) beyond the same head on twins without the repeat, lower "
            f"bound, {worst} ({dup_text}; largest on t-1 only {_per_seed(prev)})",
            dup_bound,
            ATTENTION_BAR,
            "no layer-0 head finds the earlier copy of the current token because it repeats",
            kind=MEASUREMENT,
            bar=attention_bar,
        ),
        harness.at_least(
            f"layer 1: largest attention from a repeated token to the token after its earlier "
            f"occurrence (induction head) beyond the same head on twins without the repeat, "
            f"lower bound, {worst} ({ind_text}; {heads})",
            ind_bound,
            ATTENTION_BAR,
            "no layer-1 head attends where an induction head would because of the repeat",
            kind=MEASUREMENT,
            bar=attention_bar,
        ),
        Check(
            f"Q-composition of the duplicate-token head into the induction heads' queries, as a "
            f"multiple of the largest shuffled-weight score, {worst} (per seed "
            f"{_per_seed(ratio)}; score {_per_seed([q_score(s) for s in seeds])}; shuffled "
            f"largest {_per_seed([s.circuit.null_max['q'] for s in seeds])}; shuffled mean "
            f"{_per_seed([s.circuit.null_mean['q'] for s in seeds], 3)})",
            min(ratio),
            "> 1",
            min(ratio) > 1,
            "the induction heads' queries read the duplicate-token head no more than chance "
            "alignment of shuffled weights would",
            MEASUREMENT,
            f"above every pair's score in each of {setup.cfg.n_shuffles} shuffled copies: "
            "same values and norms, no structure",
        ),
        harness.at_least(
            f"in-context accuracy drop with layer 0's writes removed from layer 1's queries "
            f"only, {worst} (per seed {_per_seed(drop['q'])})",
            min(drop["q"]),
            DROP_BAR,
            "layer 1 finds the earlier copy without layer 0 in its queries",
            kind=MEASUREMENT,
            bar=drop_bar,
        ),
        Check(
            f"drop with layer 0 removed from the queries only minus (keys only + values only), "
            f"{worst} (keys only, per seed {_per_seed(drop['k'])}; values only "
            f"{_per_seed(drop['v'])})",
            min(over_rest),
            "> 0",
            min(over_rest) > 0,
            "the keys path (K-composition, the textbook circuit) and the values path together "
            "carry as much as the queries",
            MEASUREMENT,
            "'mainly': the queries path costs more than the other two together; argued before "
            "the run, demos/BARS.md",
        ),
        Check(
            f"drop with layer 0 removed from the queries only / from all three paths at once, "
            f"{worst} (all paths, per seed {_per_seed(drop_all)})",
            worst_share,
            "> 0.5",
            worst_share > 0.5,
            "the queries path carries half or less of what layer 0 does for layer 1",
            MEASUREMENT,
            "'mainly': more than half of the whole path effect; argued before the run, "
            "demos/BARS.md",
        ),
        Check(
            f"drop with layer 0 removed from layer 1's values only, largest of {n} seeds "
            f"(per seed {_per_seed(drop['v'])})",
            max(drop["v"]),
            f"< {DROP_BAR:g}",
            max(drop["v"]) < DROP_BAR,
            "the copied token comes through layer 0 (V-composition), not from the embedding",
            MEASUREMENT,
            "below the large-drop bar: the token an induction head copies is in the embedding "
            "itself, so its values need not read layer 0",
        ),
        harness.at_least(
            f"in-context accuracy drop with all induction heads mean-ablated together, {worst}"
            f" (per seed {_per_seed([s.drop_all for s in seeds])}; heads per seed "
            f"{', '.join(str(len(s.inductors)) for s in seeds)}, each attending because of the "
            f"repeat: twin bound >= {ATTENTION_BAR:g})",
            min(s.drop_all for s in seeds),
            DROP_BAR,
            "removing the induction heads should break copying from the earlier occurrence",
            kind=MEASUREMENT,
            bar=drop_bar,
        ),
        Check(
            f"drop with all induction heads ablated together minus the sum of their drops "
            f"ablated one at a time, {worst} (single drops per seed: "
            + "; ".join(_per_seed(s.drop_singles) or "none" for s in seeds)
            + ")",
            min(backup),
            "> 0",
            min(backup) > 0,
            "removing the heads one at a time costs as much as removing them together: "
            "independent heads (or one head carrying the job), not redundant ones",
            MEASUREMENT,
            "'redundant': the heads cover for each other, so the whole costs more than its "
            "parts; argued before the run, demos/BARS.md",
        ),
        harness.at_least(
            f"the named path alone: drop with only the duplicate-token head's write removed "
            f"from layer 1's queries, {worst} (per seed {_per_seed(dup_q)}; its share of all of "
            f"layer 0's queries drop {_per_seed(dup_share)})",
            min(dup_q),
            DROP_BAR,
            "the duplicate-token head is not the one layer 1's queries need: other layer-0 "
            "heads carry the queries path, and the claim names the wrong head",
            kind=MEASUREMENT,
            bar=drop_bar + " (reused, added by the audit after a probe had seen 0.60-0.82)",
        ),
    ]


def contrast(setup: Setup, gen: torch.Generator) -> list[Check]:
    """The same measurements on the untrained decoder: no head specialises, nothing is copied."""
    init = counterexample(setup.cfg, setup.seeds[0].circuit.comp["q"].device, gen).seeds
    model_cfg = decoder.DecoderConfig()
    why = "the same architecture at initialisation: any weights of this shape before training"
    return [
        harness.at_most(
            "untrained: largest layer-0 attention to the earlier occurrence, over 3 draws",
            max(float(s.circuit.duplicate.max()) for s in init),
            ATTENTION_BAR,
            kind=SANITY,
            bar=why,
        ),
        harness.at_most(
            "untrained: largest layer-1 induction attention, over 3 draws",
            max(float(s.circuit.induction.max()) for s in init),
            ATTENTION_BAR,
            kind=SANITY,
            bar=why,
        ),
        harness.at_most(
            "untrained: Q-composition as a multiple of the largest shuffled score, over 3 draws",
            max(q_ratio(s) for s in init),
            1.0,
            kind=SANITY,
            bar="untrained weights have no structure for shuffling to remove",
        ),
        harness.at_most(
            f"untrained: in-context accuracy, over 3 draws (chance 1/{model_cfg.vocab})",
            max(s.circuit.accuracy for s in init),
            0.1,
            kind=SANITY,
            bar=why,
        ),
    ]


def notes(cfg: Config) -> list[str]:
    metas = [decoder.load(p)[2] for p in circuit.seed_files()]
    model_cfg = decoder.DecoderConfig(**metas[0]["config"])
    return [
        f"Model: attention-only, {model_cfg.n_layers} layers x {model_cfg.n_heads} heads, "
        f"d_model {model_cfg.d_model}, vocab {model_cfg.vocab}, trained here at seeds "
        + ", ".join(str(m["seed"]) for m in metas)
        + f" ({metas[0]['steps']} steps each; held-out in-context accuracy "
        + _per_seed([m["in_context_accuracy"] for m in metas], 3)
        + ").",
        f"Measured on {cfg.n_sequences} fresh sequences per seed (chunk length "
        f"{model_cfg.min_chunk}..{model_cfg.max_chunk}); 'large' measures the same models on "
        "more sequences and shuffles.",
        "Mean-ablation replaces a head's output by its mean over the batch and positions; "
        "'removed from the queries only' mean-ablates every layer-0 head's write in the input "
        "of layer 1's W_Q and nowhere else.",
        "What the model does: duplicate-token heads in layer 0 tell layer 1's queries that the "
        "current token occurred before; layer 1's induction heads then attend to the token "
        "after that occurrence and copy it from the embedding. K-composition with a "
        "previous-token head, the textbook circuit, carries little here.",
    ]


def figures(setup: Setup) -> dict:
    """Seed 0's duplicate-token and strongest induction head on one sequence, and what removing
    layer 0 from each path of layer 1, and from all three at once, costs at every seed."""
    first = setup.seeds[0]
    c = first.circuit
    ind = int(c.induction.argmax())
    seq = c.patterns[0].shape[-1]
    ticks = [str(t) for t in range(seq)]
    out: dict[str, dict[str, Any]] = {}
    for key, layer, head, what in (
        ("pattern_duplicate", 0, first.dup, "duplicate-token head"),
        ("pattern_induction", 1, ind, "induction head"),
    ):
        out[key] = {
            "kind": "heatmap",
            "title": f"seed {first.seed}, L{layer}H{head} ({what}): attention, query row -> key column",
            "rows": ticks,
            "cols": ticks,
            "values": [[round(float(v), 3) for v in row] for row in c.patterns[layer][head]],
            "caption": "the batch's sequence with the longest repeated chunk; in its second copy "
            "each query attends back into the first copy",
        }
    labels, values = [], []
    for s in setup.seeds:
        for p in circuit.PATHS:
            labels.append(f"seed {s.seed} {circuit.PATH_NAMES[p]}")
            values.append(round(s.circuit.drop[p], 4))
        labels += [f"seed {s.seed} all three", f"seed {s.seed} half of all (bar)"]
        values += [round(s.circuit.drop_all_paths, 4), round(s.circuit.drop_all_paths / 2, 4)]
    out["path_ablation"] = {
        "kind": "bars",
        "title": "in-context accuracy drop with layer 0 removed from one path of layer 1, "
        "and from all three at once",
        "labels": labels,
        "values": values,
        "caption": "'mainly Q' (demos/BARS.md) needs, at every seed, queries > keys + values "
        "and queries > half of all three",
    }
    return out


def run(scale: str = "small", device: str | DeviceChoice = "cpu", seed: int = 0) -> Report:
    return harness.run_module(__name__, scale, device, seed)
