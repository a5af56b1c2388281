"""One seam for "run the model with an edit of z", in the spirit of TransformerLens's
``run_with_cache`` / ``run_with_hooks``: every demo that ablates heads goes through it, on the
decoder we train (demos/decoder/decoder.py) and on a pretrained checkpoint
(demos/pretrained/pretrained.py) alike.

A model answers two calls (``ZModel``):

- ``run_with_cache(inputs)``: one forward pass, its output and a cache that keeps every layer's
  head outputs ``z`` as ``[batch, pos, n_heads, d_head]`` (and what replaying needs);
- ``run_with_z_edit(cache, start, edit, repeat)``: the output when each layer's z from ``start``
  on is replaced by ``edit(layer, z)``, the layers below ``start`` taken from the cache (the
  same operations on the same inputs: not rerun). ``repeat`` runs the batch that many times
  over as one batch (the edit sees every copy), so several ablations cost one pass.

The edits themselves are written once, here: set heads to values (``set_heads``: mean- or
zero-ablation of any heads, in any layers) and ablate each head of a layer in turn, one batch
copy per head (``each_head``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeAlias

from prep.demos._torch import torch

Tensor: TypeAlias = torch.Tensor  # a type for annotations (torch is not followed by mypy)

# edit(layer, z) -> z': z is [batch, pos, n_heads, d_head] of that layer; return the z to use
ZEdit = Callable[[int, Tensor], Tensor]


class ZCache(Protocol):
    """What a cached run kept: each layer's head outputs, [batch, pos, n_heads, d_head]."""

    z: list[Tensor]


class ZModel(Protocol):
    def run_with_cache(self, inputs: Any) -> tuple[Tensor, Any]: ...
    def run_with_z_edit(self, cache: Any, start: int, edit: ZEdit, repeat: int = 1) -> Tensor: ...


def set_heads(values: dict[tuple[int, int], Tensor | float]) -> ZEdit:
    """The edit that sets each (layer, head)'s output to its value (a [d_head] vector, or a
    number) at every position: mean-ablation passes the head's mean, zero-ablation 0.0."""

    def edit(layer: int, z: Tensor) -> Tensor:
        mine = [(head, value) for (ly, head), value in values.items() if ly == layer]
        if not mine:
            return z
        z = z.clone()
        for head, value in mine:
            z[:, :, head] = value  # (B, T, d_head) broadcast
        return z

    return edit


def run_with_heads_set(
    model: ZModel, cache: Any, values: dict[tuple[int, int], Tensor | float]
) -> Tensor:
    """The model's output with ``values``' heads set (see set_heads), replayed from the first
    layer that has one (the cached run's output when there is none to set)."""
    if not values:
        return model.run_with_z_edit(cache, len(cache.z), lambda layer, z: z)
    return model.run_with_z_edit(cache, min(layer for layer, _ in values), set_heads(values))


def each_head(layer: int, n_rows: int, values: Tensor | None) -> ZEdit:
    """The edit for a batch repeated once per head of ``layer`` (n_heads copies of ``n_rows``
    rows): copy k has head k set to ``values[k]`` ([n_heads, d_head]), or zeroed when None."""

    def edit(at: int, z: Tensor) -> Tensor:
        if at != layer:
            return z
        n_heads = z.shape[2]
        z = z.unflatten(0, (n_heads, n_rows)).clone()  # (h, N, T, h, dh)
        for k in range(n_heads):  # copy k of the batch ablates head k
            z[k, :, :, k] = 0.0 if values is None else values[k]
        return z.flatten(0, 1)  # (h*N, T, h, dh)

    return edit


def run_with_each_head(model: ZModel, cache: Any, layer: int, values: Tensor | None) -> Tensor:
    """The model's output with each head of ``layer`` ablated in turn (set to ``values[k]``,
    or zeroed when None): [n_heads, batch, ...], one replay of the layers from ``layer``."""
    n_heads, n_rows = cache.z[layer].shape[2], cache.z[layer].shape[0]
    with torch.no_grad():
        out = model.run_with_z_edit(cache, layer, each_head(layer, n_rows, values), n_heads)
    return out.unflatten(0, (n_heads, n_rows))
