"""The model's own job as an importance target: paraphrase retrieval margin, with bootstrap CIs.

all-MiniLM-L6-v2 is trained to embed a sentence near its paraphrase and away from other
sentences. Its job on the fixed pairs of demos/pretrained/data/sentences.tsv, measured without saturation:
for each anchor a_i, the margin

    m_i = cos(a_i, p_i) - max_{k not in {a_i, p_i}} cos(a_i, e_k)

of its paraphrase over the hardest other sentence of the batch (anchors and paraphrases alike,
harder negatives than the paraphrases alone), on mean-pooled embeddings. A head's task effect is
how much ablating it lowers m_i, per pair; unlike the training loss (0.004 on these pairs, moved by
1e-6 by a typical head) the margin is far from any floor. Every Spearman rho against a per-pair
effect gets a bootstrap interval over pairs (resampled with replacement, rho recomputed).
"""

from __future__ import annotations

from typing import TypeAlias

from prep.demos._torch import torch
from prep.demos.pretrained import pretrained as pt
from prep.demos.pretrained import rankstats

Tensor: TypeAlias = torch.Tensor  # a type for annotations (torch is not followed by mypy)
BOOTSTRAP_LEVEL = 0.90  # central interval reported for every rho


def embeddings(hidden: Tensor, mask: Tensor) -> Tensor:
    """Mean-pooled, L2-normalised sentence embeddings: hidden (..., N, T, d) -> (..., N, d)."""
    m = mask.to(hidden.dtype)[..., None]  # (N, T, 1)
    return torch.nn.functional.normalize((hidden * m).sum(-2) / m.sum(-2), dim=-1)


def margins(hidden: Tensor, mask: Tensor) -> Tensor:
    """Per pair (rows 2i, 2i+1 are anchor and paraphrase): cos to the paraphrase minus the
    largest cos to any other sentence: hidden (..., N, T, d) -> (..., N/2)."""
    emb = embeddings(hidden, mask)  # (..., N, d)
    sims = emb @ emb.transpose(-1, -2)  # (..., N, N)
    n = sims.shape[-1]
    anchors = torch.arange(0, n, 2, device=sims.device)  # (P,)
    rows = sims[..., anchors, :]  # (..., P, N)
    positive = rows.gather(-1, (anchors + 1).expand(*rows.shape[:-1]).unsqueeze(-1))[..., 0]
    own = torch.zeros(len(anchors), n, dtype=torch.bool, device=sims.device)  # (P, N)
    own[torch.arange(len(anchors)), anchors] = True
    own[torch.arange(len(anchors)), anchors + 1] = True
    hardest = rows.masked_fill(own, float("-inf")).amax(-1)  # (..., P)
    return positive - hardest  # (..., P)


def bootstrap_rho(
    score: Tensor, effect: Tensor, n_boot: int, gen: torch.Generator
) -> tuple[float, float, float]:
    """(rho, lo, hi): Spearman rho of score (h,) with effect (h, P) averaged over pairs, and the
    central BOOTSTRAP_LEVEL interval of rho over pairs resampled with replacement."""
    score, effect = score.to("cpu", torch.float64), effect.to("cpu", torch.float64)
    rho = float(pt.spearman(score, effect.mean(-1)))
    pairs = effect.shape[-1]
    idx = torch.randint(pairs, (n_boot, pairs), generator=gen)  # (n_boot, P)
    boot = effect[:, idx].mean(-1).T  # (n_boot, h)
    rhos = rankstats.rho_against_rows(score, boot)  # (n_boot,) the score ranked once
    rhos = rhos[torch.isfinite(rhos)]
    tail = (1 - BOOTSTRAP_LEVEL) / 2
    lo, hi = torch.quantile(rhos, torch.tensor([tail, 1 - tail], dtype=torch.float64))
    return rho, float(lo), float(hi)
