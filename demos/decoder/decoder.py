"""The small attention-only decoder this project trains and ships, written out weight by weight.

Architecture (no LayerNorm, no MLP, so every path to the logits is linear in each head's output):

    x_0 = W_E[tokens] + W_pos[:T]                                         (B, T, d_model)
    x_{l+1} = x_l + sum_h softmax(causal(x_l W_Q^h (x_l W_K^h)^T / sqrt(d_head))) x_l W_V^h W_O^h
              + b_O^l
    logits = x_L W_U + b_U                                                (B, T, vocab)

Weights follow TransformerLens: W_Q, W_K, W_V are [n_heads, d_model, d_head], W_O is
[n_heads, d_head, d_model]; activations are row vectors. `prep.demos.decoder.train_decoder` trains it on
the copying task below with a fixed seed and writes `weights/decoder.safetensors` (the tensors) and
`weights/decoder.json` (config, seed, steps, loss and in-context accuracy reached).

The task (`copy_batch`): random tokens in which a chunk of random length L (min_chunk..max_chunk)
at a random offset P is repeated right after itself. From the second copy on, the next token can be
read off the first copy: find where the current token occurred before and copy the token after it
(an induction head). Chunk length and offset vary, so no fixed positional offset finds the earlier
copy; a model must match content. Everything else is unpredictable random tokens.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TypeAlias

from prep.demos import hooks
from prep.demos._torch import torch
from prep.demos.hooks import ZEdit

Tensor: TypeAlias = torch.Tensor  # a type for annotations (torch is not followed by mypy)

WEIGHTS_DIR = Path(__file__).parent / "weights"
SHIPPED = WEIGHTS_DIR / "decoder.safetensors"  # the tensors; decoder.json beside it says the rest


@dataclass(frozen=True)
class DecoderConfig:
    vocab: int = 64
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    n_ctx: int = 32  # longest sequence (learned positional embeddings)
    min_chunk: int = 4  # the repeated chunk's length L is drawn from min_chunk..max_chunk
    max_chunk: int = 12

    @property
    def d_head(self) -> int:
        assert self.d_model % self.n_heads == 0, "d_model must be divisible by n_heads"
        return self.d_model // self.n_heads

    def __post_init__(self) -> None:
        assert 2 * self.max_chunk <= self.n_ctx, "two copies of the chunk must fit in n_ctx"
        assert 2 <= self.min_chunk <= self.max_chunk


PARAM_NAMES = ("W_Q", "W_K", "W_V", "W_O", "b_O")


def init_params(cfg: DecoderConfig, gen: torch.Generator) -> dict[str, Tensor]:
    """Gaussian weights scaled by 1/sqrt(fan_in); biases zero. Names as in the safetensors file."""
    d, h, dh, dev = cfg.d_model, cfg.n_heads, cfg.d_head, gen.device

    def randn(*shape: int) -> Tensor:
        return torch.randn(shape, generator=gen, device=dev)

    p = {
        "W_E": randn(cfg.vocab, d),  # (vocab, d_model)
        "W_pos": randn(cfg.n_ctx, d) * 0.1,  # (n_ctx, d_model)
        "W_U": randn(d, cfg.vocab) / d**0.5,  # (d_model, vocab)
        "b_U": torch.zeros(cfg.vocab, device=dev),  # (vocab,)
    }
    for layer in range(cfg.n_layers):
        p[f"blocks.{layer}.W_Q"] = randn(h, d, dh) / d**0.5  # (n_heads, d_model, d_head)
        p[f"blocks.{layer}.W_K"] = randn(h, d, dh) / d**0.5  # (n_heads, d_model, d_head)
        p[f"blocks.{layer}.W_V"] = randn(h, d, dh) / d**0.5  # (n_heads, d_model, d_head)
        p[f"blocks.{layer}.W_O"] = randn(h, dh, d) / d**0.5  # (n_heads, d_head, d_model)
        p[f"blocks.{layer}.b_O"] = torch.zeros(d, device=dev)  # (d_model,)
    return p


def layer_params(params: dict[str, Tensor], layer: int) -> dict[str, Tensor]:
    """{"W_Q": ..., "W_K": ..., "W_V": ..., "W_O": ..., "b_O": ...} of one layer."""
    return {name: params[f"blocks.{layer}.{name}"] for name in PARAM_NAMES}


@dataclass
class Cache:
    """What a forward pass saw: every layer's input, attention pattern and head outputs."""

    resid: list[Tensor]  # n_layers + 1 tensors (B, T, d_model): x_0 .. x_L
    pattern: list[Tensor]  # n_layers tensors (B, n_heads, T_query, T_key)
    z: list[Tensor]  # n_layers tensors (B, T, n_heads, d_head): head outputs before W_O


def _attend(x: Tensor, w: dict[str, Tensor], causal: Tensor) -> tuple[Tensor, Tensor]:
    """One layer's attention pattern (B, n_heads, T, T) and head outputs z (B, T, n_heads, d_head)."""
    d_head = w["W_Q"].shape[-1]
    q = torch.einsum("btm,hmd->bhtd", x, w["W_Q"])  # (B, n_heads, T, d_head)
    k = torch.einsum("btm,hmd->bhtd", x, w["W_K"])  # (B, n_heads, T, d_head)
    v = torch.einsum("btm,hmd->bhtd", x, w["W_V"])  # (B, n_heads, T, d_head)
    scores = q @ k.transpose(-1, -2) / d_head**0.5  # (B, n_heads, T, T)
    scores = scores.masked_fill(~causal, float("-inf"))  # (B, n_heads, T, T)
    pattern = scores.softmax(-1)  # (B, n_heads, T, T)
    return pattern, (pattern @ v).transpose(1, 2)  # (B, T, n_heads, d_head)


def forward(
    params: dict[str, Tensor],
    tokens: Tensor | None,
    *,
    edit: ZEdit | None = None,
    resume: tuple[int, Cache] | None = None,
) -> tuple[Tensor, Cache]:
    """Logits (B, T, vocab) and the cache. `edit(layer, z)` (demos/hooks.py) gives the head
    outputs z (B, T, n_heads, d_head) each layer uses instead of its own (mean-ablation sets a
    head's to its mean: hooks.set_heads).

    `resume=(layer, cache)` starts from an unedited run's cache of the same params and tokens:
    everything below `layer`, and `layer`'s own attention, are taken from it instead of being
    recomputed (the same operations on the same inputs: the logits are identical; `tokens`
    may then be None)."""
    start, done = resume if resume is not None else (0, None)
    if done is None:
        assert tokens is not None, "a run that does not resume reads tokens"
        n_ctx = params["W_pos"].shape[0]
        seq = tokens.shape[1]
        assert seq <= n_ctx, f"sequence of {seq} tokens is longer than n_ctx {n_ctx}"
        x = params["W_E"][tokens] + params["W_pos"][:seq]  # (B, T, d_model)
        cache = Cache([x], [], [])
    else:
        x = done.resid[start]  # (B, T, d_model)
        seq = x.shape[1]
        cache = Cache(done.resid[: start + 1], done.pattern[:start], done.z[:start])
    n_layers = sum(1 for k in params if k.endswith(".W_O"))
    causal = torch.ones(seq, seq, dtype=torch.bool, device=x.device).tril()  # (T, T)
    for layer in range(start, n_layers):
        w = layer_params(params, layer)
        if done is not None and layer == start:
            pattern, z = done.pattern[layer], done.z[layer]  # (B, n_heads, T, T), (B, T, h, dh)
        else:
            pattern, z = _attend(x, w, causal)
        if edit is not None:
            z = edit(layer, z)  # (B, T, n_heads, d_head)
        x = x + torch.einsum("bthd,hdm->btm", z, w["W_O"]) + w["b_O"]  # (B, T, d_model)
        cache.pattern.append(pattern)
        cache.z.append(z)
        cache.resid.append(x)
    return x @ params["W_U"] + params["b_U"], cache  # (B, T, vocab)


@dataclass
class Decoder:
    """The decoder as demos/hooks.py's ZModel: runs with a cache, and with an edit of z."""

    params: dict[str, Tensor]

    def run_with_cache(self, tokens: Tensor) -> tuple[Tensor, Cache]:
        return forward(self.params, tokens)  # (B, T, vocab), its cache

    def run_with_z_edit(self, cache: Cache, start: int, edit: ZEdit, repeat: int = 1) -> Tensor:
        """Logits (repeat*B, T, vocab) with `edit` from layer `start` on, the layers below
        (and `start`'s attention) taken from `cache`, an unedited run's."""
        if repeat > 1:
            more = [t.repeat(repeat, *([1] * (t.ndim - 1))) for t in cache.resid[: start + 1]]
            cache = Cache(
                more,
                [t.repeat(repeat, 1, 1, 1) for t in cache.pattern],
                [t.repeat(repeat, 1, 1, 1) for t in cache.z],
            )
        logits, _ = forward(self.params, None, edit=edit, resume=(start, cache))
        return logits


@dataclass
class Batch:
    tokens: Tensor  # (B, n_ctx)
    predictable: Tensor  # (B, n_ctx) bool: the next token can be copied from the first copy
    chunk: Tensor  # (B,) the repeated chunk's length L: position t's earlier copy is t - L


def copy_batch(cfg: DecoderConfig, batch: int, gen: torch.Generator) -> Batch:
    """A batch of the repeated-chunk copying task.

    predictable[b, t] is True where the next token tokens[b, t+1] is the one after the earlier
    occurrence of tokens[b, t] in the first copy: positions P+L .. P+2L-2 of the second copy.
    """
    dev, T = gen.device, cfg.n_ctx
    tokens = torch.randint(cfg.vocab, (batch, T), generator=gen, device=dev)  # (B, T)
    span = cfg.max_chunk - cfg.min_chunk + 1
    L = cfg.min_chunk + torch.randint(span, (batch, 1), generator=gen, device=dev)  # (B, 1)
    room = (T - 2 * L + 1).float()  # (B, 1) number of possible offsets P
    P = (torch.rand((batch, 1), generator=gen, device=dev) * room).long()  # (B, 1) 0..T-2L
    pos = torch.arange(T, device=dev)[None, :]  # (1, T)
    second = (pos >= P + L) & (pos < P + 2 * L)  # (B, T) the second copy
    source = torch.where(second, pos - L, pos)  # (B, T) where each token is read from
    tokens = tokens.gather(1, source)  # (B, T) chunk repeated right after itself
    predictable = (pos >= P + L) & (pos <= P + 2 * L - 2)  # (B, T)
    return Batch(tokens, predictable, L[:, 0])


def next_token_loss(logits: Tensor, tokens: Tensor) -> Tensor:
    """Mean cross-entropy of predicting tokens[:, t+1] at every position t < T-1."""
    return torch.nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1), tokens[:, 1:].flatten())


def in_context_accuracy(logits: Tensor, tokens: Tensor, predictable: Tensor) -> Tensor:
    """Fraction of predictable positions whose argmax logit is the next token (a scalar)."""
    hit = logits[:, :-1].argmax(-1) == tokens[:, 1:]  # (B, T-1)
    mask = predictable[:, :-1]  # (B, T-1)
    return hit[mask].float().mean()


def save(params: dict[str, Tensor], meta: dict, path: Path) -> None:
    """Tensors to `path` (safetensors), everything else to `path` with suffix .json."""
    from safetensors.torch import save_file

    path.parent.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().cpu().contiguous() for k, v in params.items()}, str(path))
    path.with_suffix(".json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")


class WeightsError(Exception):
    """The decoder weights are missing or malformed; the message is one line for the user."""


def load(
    path: Path = SHIPPED, device: torch.device | str = "cpu"
) -> tuple[DecoderConfig, dict[str, Tensor], dict]:
    """(config, params on `device`, the JSON metadata) of a saved decoder."""
    from safetensors.torch import load_file

    meta_path = path.with_suffix(".json")
    if not path.is_file() or not meta_path.is_file():
        raise WeightsError(
            f"{path}: decoder weights not found (train them with python -m prep.demos.decoder.train_decoder)"
        )
    meta = json.loads(meta_path.read_text())
    cfg = DecoderConfig(**meta["config"])
    params = {k: v.to(device) for k, v in load_file(str(path)).items()}
    expected = set(init_params(cfg, torch.Generator().manual_seed(0)))
    if set(params) != expected:
        raise WeightsError(f"{path}: tensors {sorted(set(params) ^ expected)} do not match config")
    return cfg, params, meta


def config_dict(cfg: DecoderConfig) -> dict:
    return asdict(cfg)


# --------------------------------------------------------------------------- measurements


def prev_token_scores(pattern: Tensor) -> Tensor:
    """Mean attention from position t to t-1 (t >= 1), per head: pattern (B, h, T, T) -> (h,)."""
    return pattern.diagonal(offset=-1, dim1=-2, dim2=-1).mean((0, 2))  # (n_heads,)


def induction_scores(pattern: Tensor, data: Batch) -> Tensor:
    """Mean attention from each predictable position t to t - L + 1, the token after the earlier
    occurrence of tokens[t] (what an induction head attends to), per head: (n_heads,)."""
    seq = pattern.shape[-1]
    b, t = data.predictable.nonzero(as_tuple=True)  # (N,), (N,)
    key = t - data.chunk[b] + 1  # (N,)
    assert bool((key >= 0).all()) and bool((key < seq).all())
    return pattern[b, :, t, key].mean(0)  # (n_heads,)


def head_means(cache: Cache) -> list[Tensor]:
    """Each layer's head outputs averaged over batch and positions: (n_heads, d_head) per layer."""
    return [z.mean((0, 1)) for z in cache.z]


def ablated_logits(
    params: dict[str, Tensor],
    data: Batch,
    cache: Cache,
    heads: list[tuple[int, int]],
    *,
    means: list[Tensor] | None = None,
) -> Tensor:
    """Logits with each (layer, head) in `heads` mean-ablated (its output z replaced by its mean
    over this batch): (B, T, vocab). `means`: head_means(cache), when the caller has it. The
    layers below the first ablated head are the cached run's (demos/hooks.py)."""
    means = head_means(cache) if means is None else means
    values: dict[tuple[int, int], Tensor | float] = {(ly, h): means[ly][h] for ly, h in heads}
    return hooks.run_with_heads_set(Decoder(params), cache, values)


def ov_circuit(params: dict[str, Tensor], layer: int, head: int) -> Tensor:
    """The full OV circuit W_E W_V^h W_O^h W_U of one head: (vocab, vocab), row = source token."""
    w = layer_params(params, layer)
    return params["W_E"] @ w["W_V"][head] @ w["W_O"][head] @ params["W_U"]  # (vocab, vocab)


def ov_eigenvalues(params: dict[str, Tensor], layer: int, head: int) -> Tensor:
    """The d_head (generically nonzero) eigenvalues of the full OV circuit, complex: (d_head,).

    W_E W_V W_O W_U has rank <= d_head; its nonzero eigenvalues are those of the cyclic
    permutation W_O W_U W_E W_V (d_head x d_head), which is cheap and well conditioned.
    """
    w = layer_params(params, layer)
    small = w["W_O"][head] @ params["W_U"] @ params["W_E"] @ w["W_V"][head]  # (d_head, d_head)
    return torch.linalg.eigvals(small)  # (d_head,) complex


def composition_score(left: Tensor, right: Tensor) -> Tensor:
    """||left @ right||_F / (||left||_F ||right||_F) (Elhage et al. 2021), a scalar in [0, 1]."""
    return (left @ right).norm() / (left.norm() * right.norm())


def k_composition(params: dict[str, Tensor], writer: tuple[int, int], reader: tuple[int, int]):
    """How much `reader`'s keys read what `writer` writes: composition score of
    W_OV^writer (d_model x d_model) with W_K^reader W_Q^reader^T, i.e. of the term
    x_q W_Q W_K^T (x_k W_OV)^T in the reader's attention score."""
    (lw, hw), (lr, hr) = writer, reader
    w, r = layer_params(params, lw), layer_params(params, lr)
    ov = w["W_V"][hw] @ w["W_O"][hw]  # (d_model, d_model)
    kq = r["W_K"][hr] @ r["W_Q"][hr].T  # (d_model, d_model)
    return composition_score(ov, kq)


@dataclass
class Observed:
    """A decoder run on a fresh batch of the copying task: what every decoder demo measures."""

    cfg: DecoderConfig
    params: dict[str, Tensor]
    data: Batch
    logits: Tensor  # (B, T, vocab)
    cache: Cache

    @property
    def accuracy(self) -> float:
        return float(in_context_accuracy(self.logits, self.data.tokens, self.data.predictable))

    def accuracy_without(self, heads: list[tuple[int, int]]) -> float:
        """In-context accuracy with `heads` mean-ablated."""
        logits = ablated_logits(self.params, self.data, self.cache, heads)  # (B, T, vocab)
        return float(in_context_accuracy(logits, self.data.tokens, self.data.predictable))


def observe(
    cfg: DecoderConfig, params: dict[str, Tensor], n_sequences: int, gen: torch.Generator
) -> Observed:
    data = copy_batch(cfg, n_sequences, gen)
    with torch.no_grad():
        logits, cache = forward(params, data.tokens)  # (B, T, vocab)
    return Observed(cfg, params, data, logits, cache)


def untrained(cfg: DecoderConfig, gen: torch.Generator, dtype: torch.dtype) -> dict[str, Tensor]:
    """The decoder at initialisation (the training script's init), on gen's device."""
    return {k: v.to(dtype) for k, v in init_params(cfg, gen).items()}


def shuffled(params: dict[str, Tensor], gen: torch.Generator) -> dict[str, Tensor]:
    """Every tensor's entries randomly permuted: same values and norms, no learned structure."""
    out = {}
    for k, v in params.items():
        order = torch.randperm(v.numel(), generator=gen, device=gen.device)  # (numel,)
        out[k] = v.flatten()[order].reshape(v.shape)
    return out
