"""The attention layer the demos measure, written out so every weight is visible.

Conventions (TransformerLens): W_Q, W_K, W_V are [n_heads, d_model, d_head]; W_O is
[n_heads, d_head, d_model]. Activations are row vectors, so head h writes z_h @ W_O[h]. Flattened
head-major, W_O becomes the (in, out) = (n_heads*d_head, d_model) matrix used as concat @ W, whose
rows h*d_head:(h+1)*d_head are head h's block; nn.Linear stores the transpose (out, in), where head
h's block is the columns weight[:, h*d_head:(h+1)*d_head].
"""

from __future__ import annotations

from dataclasses import dataclass

from prep.demos._torch import torch

Tensor = torch.Tensor


@dataclass(frozen=True)
class Sizes:
    batch: int
    seq_len: int
    d_model: int
    n_heads: int

    @property
    def d_head(self) -> int:
        assert self.d_model % self.n_heads == 0, "d_model must be divisible by n_heads"
        return self.d_model // self.n_heads


def standard_scales(large_seq_len: int = 2048) -> dict[str, Sizes]:
    """The sizes most demos run at: a CPU-second toy, and a 4096-wide, 32-head production layer."""
    return {
        "small": Sizes(batch=2, seq_len=32, d_model=64, n_heads=8),
        "large": Sizes(batch=1, seq_len=large_seq_len, d_model=4096, n_heads=32),
    }


@dataclass
class Weights:
    W_Q: Tensor  # (n_heads, d_model, d_head)
    W_K: Tensor  # (n_heads, d_model, d_head)
    W_V: Tensor  # (n_heads, d_model, d_head)
    W_O: Tensor  # (n_heads, d_head, d_model)


def randn(shape: tuple[int, ...], gen: torch.Generator, dtype: torch.dtype) -> Tensor:
    """Standard normal on the generator's device."""
    return torch.randn(shape, generator=gen, device=gen.device, dtype=dtype)


def random_inputs(s: Sizes, gen: torch.Generator, dtype: torch.dtype = torch.float32) -> Tensor:
    return randn((s.batch, s.seq_len, s.d_model), gen, dtype)  # (B, T, d_model)


def random_weights(s: Sizes, gen: torch.Generator, dtype: torch.dtype = torch.float32) -> Weights:
    """Gaussian weights scaled by 1/sqrt(fan_in), so activations stay O(1) at any size."""
    h, d, dh = s.n_heads, s.d_model, s.d_head
    return Weights(
        W_Q=randn((h, d, dh), gen, dtype) / d**0.5,  # (n_heads, d_model, d_head)
        W_K=randn((h, d, dh), gen, dtype) / d**0.5,  # (n_heads, d_model, d_head)
        W_V=randn((h, d, dh), gen, dtype) / d**0.5,  # (n_heads, d_model, d_head)
        W_O=dense_w_o(s, gen, dtype),  # (n_heads, d_head, d_model)
    )


def random_layer(
    s: Sizes, gen: torch.Generator, dtype: torch.dtype = torch.float32
) -> tuple[Tensor, Weights, Tensor]:
    """Random inputs x, then random weights w (in that order from gen), and the heads' outputs."""
    x = random_inputs(s, gen, dtype)  # (B, T, d_model)
    w = random_weights(s, gen, dtype)
    z = head_outputs(x, w.W_Q, w.W_K, w.W_V)  # (B, T, n_heads, d_head)
    return x, w, z


def dense_w_o(s: Sizes, gen: torch.Generator, dtype: torch.dtype = torch.float32) -> Tensor:
    """A dense W_O: every head's block has nonzeros in every output dimension."""
    return randn((s.n_heads, s.d_head, s.d_model), gen, dtype) / s.d_model**0.5  # (h, dh, d)


def block_diagonal_w_o(
    s: Sizes, gen: torch.Generator, dtype: torch.dtype = torch.float32
) -> Tensor:
    """W_O whose head h block is zero outside output columns h*d_head:(h+1)*d_head."""
    h, dh = s.n_heads, s.d_head
    blocks = randn((h, dh, dh), gen, dtype) / dh**0.5  # (n_heads, d_head, d_head)
    w_o = torch.zeros(
        h, dh, s.d_model, device=gen.device, dtype=dtype
    )  # (n_heads, d_head, d_model)
    for i in range(h):
        w_o[i, :, i * dh : (i + 1) * dh] = blocks[i]
    return w_o


def identity_w_o(s: Sizes, device: torch.device, dtype: torch.dtype = torch.float32) -> Tensor:
    """The identity as per-head blocks: "no W_O" written as a W_O."""
    eye = torch.eye(s.d_model, device=device, dtype=dtype)  # (d_model, d_model)
    return eye.reshape(s.n_heads, s.d_head, s.d_model)  # (n_heads, d_head, d_model)


def flat(w_o: Tensor) -> Tensor:
    """[n_heads, d_head, d_model] -> the (in, out) matrix used as concat @ W, head-major rows."""
    h, dh, d = w_o.shape
    return w_o.reshape(h * dh, d)  # (n_heads*d_head, d_model)


def concat(z: Tensor) -> Tensor:
    """(B, T, n_heads, d_head) -> (B, T, n_heads*d_head): head 0's d_head entries first."""
    return z.flatten(-2)  # (B, T, n_heads*d_head)


def head_outputs(x: Tensor, W_Q: Tensor, W_K: Tensor, W_V: Tensor) -> Tensor:
    """Causal softmax attention per head, no W_O: z[b, t, h] = sum_s A_h[t, s] v_h[s]."""
    q = torch.einsum("btm,hmd->bhtd", x, W_Q)  # (B, n_heads, T, d_head)
    k = torch.einsum("btm,hmd->bhtd", x, W_K)  # (B, n_heads, T, d_head)
    v = torch.einsum("btm,hmd->bhtd", x, W_V)  # (B, n_heads, T, d_head)
    z = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, h, T, dh)
    return z.transpose(1, 2)  # (B, T, n_heads, d_head)


def project(z: Tensor, w_o: Tensor) -> Tensor:
    """The fused path: concat(z) @ W_O flattened head-major."""
    return concat(z) @ flat(w_o)  # (B, T, d_model)


def per_head_writes(z: Tensor, w_o: Tensor) -> Tensor:
    """Each head's write into the residual stream, z_h @ W_O[h], kept apart."""
    return torch.einsum("bthd,hdm->hbtm", z, w_o)  # (n_heads, B, T, d_model)
