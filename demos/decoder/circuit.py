"""The decoder's induction circuit taken apart: Q-, K- and V-composition and path ablations.

An induction head in layer 1 can use layer 0's writes in three places (Elhage et al. 2021, "A
Mathematical Framework for Transformer Circuits"): in its queries (Q-composition: "I am a token
that occurred before"), in its keys (K-composition: "the token before me was A") and in its
values (V-composition). Which one the trained model uses is an empirical question; this module
measures each of them two ways:

- weights: the composition score of layer 0 head w's OV circuit W_OV^w = W_V^w W_O^w with the
  reader's W_Q W_K^T (Q), W_K W_Q^T (K) or W_OV (V), ||W_OV^w M||_F / (||W_OV^w||_F ||M||_F),
  held against the same score on weights whose entries are shuffled (same values, no structure);
- behaviour: in-context accuracy when layer 0's head writes are mean-ablated in one path of layer
  1 only (its queries, its keys or its values read x_1 minus every layer-0 head's write plus that
  write's mean), everything else (the direct path to the logits included) left as it is.

Activations are row vectors, weights as in `decoder` (TransformerLens layout).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

from prep.demos._torch import torch
from prep.demos.decoder import decoder

Tensor: TypeAlias = torch.Tensor  # a type for annotations (torch is not followed by mypy)
PATHS = ("q", "k", "v")
PATH_NAMES = {"q": "queries", "k": "keys", "v": "values"}


def seed_files() -> tuple[Path, ...]:
    """The shipped decoder trained at three seeds: seed 0 is decoder.SHIPPED, which every
    single-model demo measures; the other two, beside it, give the spread a claim must hold
    across. Read when called, so a test that moves SHIPPED moves all three."""
    return (
        decoder.SHIPPED,
        decoder.SHIPPED.with_name("decoder-seed1.safetensors"),
        decoder.SHIPPED.with_name("decoder-seed2.safetensors"),
    )


def reader_matrix(params: dict[str, Tensor], path: str, layer: int, head: int) -> Tensor:
    """What a reader head multiplies a writer's OV circuit by, per path: (d_model, d_model)."""
    w = decoder.layer_params(params, layer)
    if path == "q":  # x_w W_OV^w W_Q W_K^T x_k^T: the write enters the query side
        return w["W_Q"][head] @ w["W_K"][head].T
    if path == "k":  # x_q W_Q W_K^T (x_w W_OV^w)^T: the write enters the key side
        return w["W_K"][head] @ w["W_Q"][head].T
    if path == "v":  # x_w W_OV^w W_V W_O: the write is moved on
        return w["W_V"][head] @ w["W_O"][head]
    raise ValueError(f"path must be one of {PATHS}, not {path!r}")


def composition(params: dict[str, Tensor], path: str, writer: int, reader: int) -> Tensor:
    """Composition score of layer-0 head `writer` into layer-1 head `reader` along `path`."""
    w = decoder.layer_params(params, 0)
    ov = w["W_V"][writer] @ w["W_O"][writer]  # (d_model, d_model)
    return decoder.composition_score(ov, reader_matrix(params, path, 1, reader))


def reader_matrices(params: dict[str, Tensor], path: str, layer: int) -> Tensor:
    """`reader_matrix` of every head of `layer` at once: (n_heads, d_model, d_model)."""
    w = decoder.layer_params(params, layer)
    if path == "q":
        return w["W_Q"] @ w["W_K"].transpose(-1, -2)  # (h, d_model, d_head) @ (h, d_head, d_model)
    if path == "k":
        return w["W_K"] @ w["W_Q"].transpose(-1, -2)
    if path == "v":
        return w["W_V"] @ w["W_O"]
    raise ValueError(f"path must be one of {PATHS}, not {path!r}")


def composition_table(params: dict[str, Tensor], path: str) -> Tensor:
    """(n_heads writer in layer 0, n_heads reader in layer 1) composition scores along `path`:
    every pair's `composition` in one batched product (each writer's OV circuit, each reader's
    matrix and their norms made once; tests/test_decoder_demos.py holds it to the per-pair
    scores)."""
    w = decoder.layer_params(params, 0)
    ov = w["W_V"] @ w["W_O"]  # (n_heads, d_model, d_model): each writer's OV circuit
    readers = reader_matrices(params, path, 1)  # (n_heads, d_model, d_model)
    both = ov[:, None] @ readers[None]  # (writer, reader, d_model, d_model)
    norm = torch.linalg.vector_norm
    ov_norm, reader_norm = norm(ov, dim=(-2, -1)), norm(readers, dim=(-2, -1))  # (h,), (h,)
    return norm(both, dim=(-2, -1)) / (ov_norm[:, None] * reader_norm[None, :])  # (h, h)


def duplicate_token_scores(pattern: Tensor, data: decoder.Batch) -> Tensor:
    """Mean attention from each copyable position t to t - L, the earlier occurrence of the same
    token (what a duplicate-token head attends to), per head: pattern (B, h, T, T) -> (h,)."""
    b, t = data.predictable.nonzero(as_tuple=True)  # (N,), (N,)
    key = t - data.chunk[b]  # (N,)
    return pattern[b, :, t, key].mean(0)  # (n_heads,)


def repeat_twin(data: decoder.Batch, vocab: int, gen: torch.Generator) -> Tensor:
    """Tokens (B, T): each sequence with every token of its second copy redrawn uniformly from
    the vocabulary minus the token it copied, so no position t of it holds the token at t - L;
    the first copy and every other token are kept (demos/BARS.md, audit15: the null of "attends
    there because of the repeat")."""
    tokens, pred = data.tokens, data.predictable  # (B, T), (B, T)
    second = pred.clone()  # (B, T): the copyable positions and the one after the last
    second[:, 1:] |= pred[:, :-1]
    pos = torch.arange(tokens.shape[1], device=tokens.device)[None, :]  # (1, T)
    earlier = tokens.gather(1, (pos - data.chunk[:, None]).clamp(min=0))  # (B, T)
    shift = 1 + torch.randint(vocab - 1, tokens.shape, generator=gen, device=gen.device)
    return torch.where(second, (earlier + shift.to(tokens.device)) % vocab, tokens)  # (B, T)


def target_attention(pattern: Tensor, data: decoder.Batch, back: int) -> tuple[Tensor, Tensor]:
    """Per sequence, the summed attention from its copyable positions t to key t - L + back
    (0: the earlier occurrence, 1: the token after it), per head, and how many positions:
    pattern (B, h, T, T) -> ((B, h), (B,))."""
    b, t = data.predictable.nonzero(as_tuple=True)  # (N,), (N,)
    values = pattern[b, :, t, t - data.chunk[b] + back].double()  # (N, h)
    sums = torch.zeros(pattern.shape[0], pattern.shape[1], dtype=torch.float64, device=b.device)
    return sums.index_add_(0, b, values), torch.bincount(b, minlength=pattern.shape[0])


@dataclass
class TwinAttention:
    """One layer's heads' attention on a key with the repeat and on the twins without it (the
    same positions), and the excess's standard error with the sequences as the units: (h,) each."""

    raw: Tensor
    twin: Tensor
    excess: Tensor
    se: Tensor

    def bound(self, z: float) -> Tensor:
        return self.excess - z * self.se  # (h,)


def twin_attention(original: Tensor, twin: Tensor, data: decoder.Batch, back: int) -> TwinAttention:
    """`target_attention` on the batch and on its twins (patterns (B, h, T, T) each), paired."""
    s_orig, n = target_attention(original, data, back)  # (B, h), (B,)
    s_twin, _ = target_attention(twin, data, back)  # (B, h)
    total, batch = float(n.sum()), s_orig.shape[0]
    diff = s_orig - s_twin  # (B, h): each sequence's summed paired differences
    excess = diff.sum(0) / total  # (h,)
    resid = diff - excess[None, :] * n[:, None]  # (B, h)
    se = (batch / (batch - 1) * resid.pow(2).sum(0)).sqrt() / total  # (h,)
    return TwinAttention(s_orig.sum(0) / total, s_twin.sum(0) / total, excess, se)


class PathAblation:
    """Layer 1 of the 2-layer decoder run with layer 0's head writes mean-ablated in some of its
    paths: each projection (of the residual as it is, or with layer 0's writes at their mean)
    and each attention pattern is made once and shared by the ablations that use it (the same
    operations on the same tensors as computing each ablation alone)."""

    def __init__(
        self,
        params: dict[str, Tensor],
        tokens: Tensor,
        cache: decoder.Cache | None = None,
        heads: list[int] | None = None,
    ) -> None:
        """`heads`: the layer-0 heads whose writes are ablated (None: every one)."""
        with torch.no_grad():
            if cache is None:
                _, cache = decoder.forward(params, tokens)
            w0 = decoder.layer_params(params, 0)
            self.params, self.w1 = params, decoder.layer_params(params, 1)
            self.x1 = cache.resid[1]  # (B, T, d_model)
            z0 = cache.z[0]  # (B, T, n_heads, d_head)
            if heads is not None:
                z0 = z0[:, :, heads]  # (B, T, len(heads), d_head)
                w0 = {"W_O": w0["W_O"][heads]}  # (len(heads), d_head, d_model)
            writes = torch.einsum("bthd,hdm->btm", z0, w0["W_O"])  # (B, T, d_model)
            mean_writes = torch.einsum("hd,hdm->m", z0.mean((0, 1)), w0["W_O"])  # (d_model,)
            self.ablated = self.x1 - writes + mean_writes  # (B, T, d_model): writes at mean
        self.seq = tokens.shape[1]
        self._proj: dict[tuple[str, bool], Tensor] = {}
        self._pattern: dict[tuple[bool, bool], Tensor] = {}

    def proj(self, path: str, ablated: bool) -> Tensor:
        """Layer 1's queries, keys or values: (B, h, T, d_head)."""
        if (path, ablated) not in self._proj:
            src = self.ablated if ablated else self.x1  # (B, T, d_model)
            w = self.w1["W_" + path.upper()]  # (h, d_model, d_head)
            self._proj[path, ablated] = torch.einsum("btm,hmd->bhtd", src, w)
        return self._proj[path, ablated]

    def pattern(self, q_ablated: bool, k_ablated: bool) -> Tensor:
        """Layer 1's attention pattern: (B, h, T, T)."""
        if (q_ablated, k_ablated) not in self._pattern:
            q, k = self.proj("q", q_ablated), self.proj("k", k_ablated)
            d_head = q.shape[-1]
            causal = torch.ones(self.seq, self.seq, dtype=torch.bool, device=q.device).tril()
            scores = (q @ k.transpose(-1, -2) / d_head**0.5).masked_fill(~causal, float("-inf"))
            self._pattern[q_ablated, k_ablated] = scores.softmax(-1)
        return self._pattern[q_ablated, k_ablated]

    def logits(self, paths: tuple[str, ...]) -> Tensor:
        """Logits (B, T, vocab) with layer 0's writes mean-ablated in `paths` (a subset of
        "q", "k", "v") of layer 1 only."""
        with torch.no_grad():
            pattern = self.pattern("q" in paths, "k" in paths)  # (B, h, T, T)
            z1 = (pattern @ self.proj("v", "v" in paths)).transpose(1, 2)  # (B, T, h, d_head)
            out = torch.einsum("bthd,hdm->btm", z1, self.w1["W_O"])  # (B, T, d_model)
            x2 = self.x1 + out + self.w1["b_O"]  # (B, T, d_model)
            return x2 @ self.params["W_U"] + self.params["b_U"]  # (B, T, vocab)


def forward_without(
    params: dict[str, Tensor],
    tokens: Tensor,
    paths: tuple[str, ...],
    cache: decoder.Cache | None = None,
) -> Tensor:
    """Logits (B, T, vocab) of the 2-layer decoder with layer 0's head writes mean-ablated in
    layer 1's `paths` only (a subset of "q", "k", "v"); every other path sees them unchanged.
    `cache`: the unedited run's on these params and tokens, when the caller has it (it is what
    this function would compute first)."""
    return PathAblation(params, tokens, cache).logits(paths)


@dataclass
class Circuit:
    """One decoder's circuit, measured on a batch of the copying task."""

    accuracy: float
    duplicate: Tensor  # (n_heads,) layer 0: attention to the earlier occurrence of the token
    previous: Tensor  # (n_heads,) layer 0: attention t -> t-1
    induction: Tensor  # (n_heads,) layer 1: attention to the token after the earlier occurrence
    comp: dict[str, Tensor]  # path -> (n_heads, n_heads) composition scores, writer x reader
    null_max: dict[str, float]  # path -> largest score over every pair and every shuffle
    null_mean: dict[str, float]  # path -> mean shuffled score
    drop: dict[str, float]  # path -> accuracy drop with layer 0 removed from that path only
    drop_all_paths: float  # accuracy drop with layer 0 removed from queries, keys and values
    patterns: list[Tensor]  # per layer (n_heads, T, T): attention on the longest-chunk sequence
    # per layer (0: on the earlier occurrence, 1: on the token after it) with and without the
    # repeat; None when measured without a twin generator
    twins: list[TwinAttention] | None = None


def measure(
    params: dict[str, Tensor], cfg: decoder.DecoderConfig, n_sequences: int, n_shuffles: int,
    gen: torch.Generator, twin_gen: torch.Generator | None = None,
) -> Circuit:  # fmt: skip
    """`twin_gen`: draws the twins' tokens (`repeat_twin`), kept apart from `gen` so that every
    other number is what it was without them."""
    obs = decoder.observe(cfg, params, n_sequences, gen)
    twins = None
    if twin_gen is not None:
        with torch.no_grad():
            _, twin_cache = decoder.forward(params, repeat_twin(obs.data, cfg.vocab, twin_gen))
        twins = [
            twin_attention(obs.cache.pattern[layer], twin_cache.pattern[layer], obs.data, layer)
            for layer in (0, 1)
        ]
    acc = obs.accuracy
    shown = int(obs.data.predictable.sum(1).argmax())  # the sequence with the longest chunk
    comp = {p: composition_table(params, p) for p in PATHS}
    null: dict[str, list[Tensor]] = {p: [] for p in PATHS}
    for _ in range(n_shuffles):
        shuffled = decoder.shuffled(params, gen)
        for p in PATHS:
            null[p].append(composition_table(shuffled, p).flatten())
    drop = {}
    ablation = PathAblation(params, obs.data.tokens, obs.cache)
    for p in (*PATHS, "all"):
        logits = ablation.logits(PATHS if p == "all" else (p,))
        drop[p] = acc - float(
            decoder.in_context_accuracy(logits, obs.data.tokens, obs.data.predictable)
        )
    drop_all_paths = drop.pop("all")
    return Circuit(
        accuracy=acc,
        duplicate=duplicate_token_scores(obs.cache.pattern[0], obs.data),
        previous=decoder.prev_token_scores(obs.cache.pattern[0]),
        induction=decoder.induction_scores(obs.cache.pattern[1], obs.data),
        comp=comp,
        null_max={p: float(torch.cat(null[p]).max()) for p in PATHS},
        null_mean={p: float(torch.cat(null[p]).mean()) for p in PATHS},
        drop=drop,
        drop_all_paths=drop_all_paths,
        patterns=[pat[shown].detach().cpu() for pat in obs.cache.pattern],
        twins=twins,
    )
