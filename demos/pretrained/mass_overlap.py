"""The mass-weighted write overlap of real-block-structure, its two tails and which heads pair.

Audit14 (demos/BARS.md): per head pair, the cosine between the heads' write Grams G_i = A_i^T A_i
(overlap.gram_cosines), averaged over the pairs, against the exact-Gram null (W' = Q diag(s), Q
Haar): the upper tail ("no more than the Gram split at random", outcome (b)) and which heads pair.
Audit15 (demos/BARS.md, pre-registered before its first run): the lower tail as a check of its
own, on fresh draws (the run's seed + 4), Fisher's combination at LOWER_BAR = P_BAR / 2 (the tail
was chosen after audit14 had seen both). Kept apart from real_block_structure.py, which
re-exports these names, for the 600-line limit.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from prep.demos._torch import torch
from prep.demos.harness import Check
from prep.demos.pretrained import chunked, overlap
from prep.demos.pretrained import pretrained as pt

P_BAR = 0.01  # the overlap checks: Fisher's combined upper-tail p at most this (demos/BARS.md)
LOWER_BAR = P_BAR / 2  # the mass-weighted lower tail (audit15): a two-sided test's share


def seed_of(gen: torch.Generator) -> int:
    return int(torch.randint(2**62, (1,), generator=gen, device=gen.device))


def upper_p(null: torch.Tensor, observed: float) -> float:
    """The upper-tail Monte Carlo p-value (1 + #{null >= observed}) / (1 + n)."""
    return (1 + int((null >= observed).sum())) / (1 + len(null))


def lower_p(null: torch.Tensor, observed: float) -> float:
    """The lower-tail Monte Carlo p-value (1 + #{null <= observed}) / (1 + n)."""
    return (1 + int((null <= observed).sum())) / (1 + len(null))


def fisher_p(ps: list[float]) -> tuple[float, float]:
    """(X, combined p): Fisher's X = -2 sum ln p against chi-square with 2 len(ps) degrees of
    freedom, whose upper tail for even df 2k is exp(-X/2) sum_{i<k} (X/2)^i / i!."""
    x = -2.0 * sum(math.log(p) for p in ps)
    term, tail = 1.0, 0.0
    for i in range(len(ps)):
        tail += term
        term *= (x / 2) / (i + 1)
    return x, math.exp(-x / 2) * tail


def gram_nulls(
    variances: list[torch.Tensor], heads: tuple[int, int], draws: int, seed: int
) -> list[chunked.Null]:
    """Each layer's exact-Gram redraws for the mass-weighted overlap (its row variances, W_O's
    squared singular values over their count), from seeds drawn from `seed`."""
    gen = torch.Generator().manual_seed(seed)
    return [chunked.Null(mass_sampler(v, *heads), draws, seed_of(gen)) for v in variances]


def mass_sampler(
    variances: torch.Tensor, h: int, dh: int
) -> Callable[[int, torch.Generator], torch.Tensor]:
    """sample(k, gen): overlap.mass_summary of k exact-Gram redraws W' = Q diag(s): (k, 2)."""
    singular = variances.flip(0)[: min(h * dh, variances.numel())].sqrt().float()  # (r,)

    def sample(k: int, gen: torch.Generator) -> torch.Tensor:
        return overlap.sample_gram(k, (h, dh), singular, gen, overlap.gram_mass)  # (k, 2)

    return sample


def observed_cosines(w_o: torch.Tensor) -> torch.Tensor:
    """overlap.gram_cosines of one W_O (h, dh, d) in float64: (pairs,)."""
    return overlap.gram_cosines(w_o.detach().cpu().double()[None])[0]


def binomial_tail(k: int, n: int, p: float) -> float:
    """P(Binomial(n, p) >= k)."""
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))


def _combined(
    cosines: list[torch.Tensor], nulls: list[torch.Tensor], *, upper: bool
) -> tuple[list[float], float, float, str]:
    """Each layer's tail p for the mean mass-weighted overlap (upper: the redraws reaching it;
    else those at or below it), Fisher's (X, combined p) and the per-layer line: heads vs the
    redraws' mean and sd, and how many redraws lie on the tail's side."""
    means = [float(c.mean()) for c in cosines]
    tail, side = (upper_p, "reach it") if upper else (lower_p, "at or below it")
    ps = [tail(n[:, 0], m) for m, n in zip(means, nulls, strict=True)]
    x, p = fisher_p(ps)
    lines = "; ".join(
        f"layer {i} {m:.3f} vs {float(n[:, 0].mean()):.3f} sd {float(n[:, 0].std()):.3f} "
        f"({int(((n[:, 0] >= m) if upper else (n[:, 0] <= m)).sum())} of {len(n)} {side})"
        for i, (m, n) in enumerate(zip(means, nulls, strict=True))
    )
    return ps, x, p, lines


def mass_check(cosines: list[torch.Tensor], nulls: list[torch.Tensor]) -> Check:
    """Fisher's combination of each layer's upper-tail p for the mean mass-weighted overlap.

    Pre-registered (demos/BARS.md, audit14) with both outcomes' wording; its first run gave
    outcome (b), combined p = 1.0: weighted by write mass the heads overlap no more than their
    Gram split at random (below every redraw in 5 of 6 layers). So the row states that, the
    same statistic, null and level, and fails where heads share a strongly written direction."""
    ps, x, p, lines = _combined(cosines, nulls, upper=True)
    return pt.measurement(
        f"layers 0-{len(cosines) - 1}: mass-weighted overlap (cosine between two heads' write "
        f"Grams A_i^T A_i, mean over head pairs), against {len(nulls[0])} redraws a layer of "
        f"the same exact Gram, drawn apart: Fisher's combined upper-tail p. Heads vs null "
        f"mean: {lines}",
        p,
        f"> {P_BAR:g}: weighted by how strongly each direction is written, heads overlap no "
        f"more than the same Gram split at random (X = {x:.1f} on {2 * len(ps)} df; per-layer "
        f"p {', '.join(f'{q:.3f}' for q in ps)})",
        p > P_BAR,
        "weighted by write mass, the heads overlap more than the layer's own Gram split among "
        "heads at random gives: they share directions they write strongly",
        bar="the conventional strict level, argued in demos/BARS.md (audit14) before the first "
        "run, outcome (b); the statistic counts each write direction by its share of ||W_O||^2",
    )


def lower_check(cosines: list[torch.Tensor], nulls: list[torch.Tensor]) -> Check:
    """Fisher's combination of each layer's lower-tail p for the mean mass-weighted overlap,
    against fresh exact-Gram draws (demos/BARS.md, audit15, pre-registered before its first run):
    passes at combined p <= LOWER_BAR, where the heads avoid each other's strong directions."""
    ps, x, p, lines = _combined(cosines, nulls, upper=False)
    return pt.measurement(
        f"layers 0-{len(cosines) - 1}: mass-weighted overlap, lower tail, against {len(nulls[0])} "
        f"fresh redraws a layer of the same exact Gram: Fisher's combined lower-tail p. Heads vs "
        f"null mean: {lines}",
        p,
        f"<= {LOWER_BAR:g}: weighted by how strongly each direction is written, heads overlap "
        f"less than the same Gram split at random (X = {x:.1f} on {2 * len(ps)} df; per-layer p "
        f"{', '.join(f'{q:.3f}' for q in ps)})",
        p <= LOWER_BAR,
        "weighted by write mass, the heads overlap no less than the layer's own Gram split among "
        "heads at random gives: nothing keeps them out of each other's strong directions",
        bar=f"the demo's level {P_BAR:g} halved, the tail being chosen after audit14 saw both; "
        "argued in demos/BARS.md (audit15) before the first run, on draws of its own",
    )


def pair_lines(cosines: list[torch.Tensor], nulls: list[torch.Tensor]) -> list[str]:
    """Which heads pair (BARS.md, audit14): per layer the top pair, how far it stands out from its
    layer's mean against the redraws' same statistic, and the family's binomial tail."""
    h = round((1 + math.sqrt(1 + 8 * len(cosines[0]))) / 2)
    i, j = torch.triu_indices(h, h, 1)
    named, lines = [], []
    for layer, (c, n) in enumerate(zip(cosines, nulls, strict=True)):
        top = int(c.argmax())
        stand = float(c[top] - c.mean())
        reach = int((n[:, 1] >= stand).sum())
        pair = f"L{layer}H{int(i[top])}-H{int(j[top])}"
        if reach == 0:
            named.append(pair)
        lines.append(
            f"{pair} {float(c[top]):.3f} (+{stand:.3f} over the layer's mean; redraws' top pair "
            f"+{float(n[:, 1].mean()):.3f}, {reach} of {len(n)} reach it)"
        )
    k = len(named)
    tail = binomial_tail(k, len(cosines), 1 / (1 + len(nulls[0])))
    verdict = (
        f"named: {', '.join(named)} (p = 1/{1 + len(nulls[0])} each in its layer)"
        if k >= 2
        else "the data does not identify which heads pair"
    )
    return [
        f"Which heads pair (mass-weighted; demos/BARS.md, audit14): each layer's top pair: "
        f"{'; '.join(lines)}. {k} of {len(cosines)} layers' top pairs stand out beyond every "
        f"redraw (P(K >= {k}) = {tail:.2g} under the null; pairs are named only at K >= 2): "
        f"{verdict}."
    ]
