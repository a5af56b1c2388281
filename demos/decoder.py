"""The small attention-only decoder this project trains and ships, written out weight by weight.

Architecture (no LayerNorm, no MLP, so every path to the logits is linear in each head's output):

    x_0 = W_E[tokens] + W_pos[:T]                                         (B, T, d_model)
    x_{l+1} = x_l + sum_h softmax(causal(x_l W_Q^h (x_l W_K^h)^T / sqrt(d_head))) x_l W_V^h W_O^h
              + b_O^l
    logits = x_L W_U + b_U                                                (B, T, vocab)

Weights follow TransformerLens: W_Q, W_K, W_V are [n_heads, d_model, d_head], W_O is
[n_heads, d_head, d_model]; activations are row vectors. `prep.demos.train_decoder` trains it on
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

from prep.demos._torch import torch

Tensor = torch.Tensor

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


def forward(
    params: dict[str, Tensor],
    tokens: Tensor,
    *,
    ablate: dict[tuple[int, int], Tensor] | None = None,
) -> tuple[Tensor, Cache]:
    """Logits (B, T, vocab) and the cache. `ablate[(layer, head)] = value (d_head,)` replaces
    that head's output z by `value` at every position (mean-ablation passes the head's mean)."""
    n_ctx = params["W_pos"].shape[0]
    seq = tokens.shape[1]
    assert seq <= n_ctx, f"sequence of {seq} tokens is longer than n_ctx {n_ctx}"
    x = params["W_E"][tokens] + params["W_pos"][:seq]  # (B, T, d_model)
    cache = Cache([x], [], [])
    n_layers = sum(1 for k in params if k.endswith(".W_O"))
    causal = torch.ones(seq, seq, dtype=torch.bool, device=tokens.device).tril()  # (T, T)
    for layer in range(n_layers):
        w = layer_params(params, layer)
        d_head = w["W_Q"].shape[-1]
        q = torch.einsum("btm,hmd->bhtd", x, w["W_Q"])  # (B, n_heads, T, d_head)
        k = torch.einsum("btm,hmd->bhtd", x, w["W_K"])  # (B, n_heads, T, d_head)
        v = torch.einsum("btm,hmd->bhtd", x, w["W_V"])  # (B, n_heads, T, d_head)
        scores = q @ k.transpose(-1, -2) / d_head**0.5  # (B, n_heads, T, T)
        scores = scores.masked_fill(~causal, float("-inf"))  # (B, n_heads, T, T)
        pattern = scores.softmax(-1)  # (B, n_heads, T, T)
        z = (pattern @ v).transpose(1, 2)  # (B, T, n_heads, d_head)
        for (abl_layer, head), value in (ablate or {}).items():
            if abl_layer == layer:
                z = z.clone()
                z[:, :, head] = value  # (B, T, d_head) broadcast
        x = x + torch.einsum("bthd,hdm->btm", z, w["W_O"]) + w["b_O"]  # (B, T, d_model)
        cache.pattern.append(pattern)
        cache.z.append(z)
        cache.resid.append(x)
    return x @ params["W_U"] + params["b_U"], cache  # (B, T, vocab)


def copy_batch(cfg: DecoderConfig, batch: int, gen: torch.Generator) -> tuple[Tensor, Tensor]:
    """(tokens (B, n_ctx), predictable (B, n_ctx) bool) for the repeated-chunk copying task.

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
    return tokens, predictable


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
            f"{path}: decoder weights not found (train them with python -m prep.demos.train_decoder)"
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
