"""A BERT replay on the real tokens only: no work for padding (issue 26).

The paraphrase batch is right-padded to its longest sentence; at the small scale 18% of its
positions are padding (44 of 240), and an ablation replay runs 12 copies of it through up to six
layers. Everything in a BERT layer but the attention itself works on each position alone (the
Q, K, V and output projections, the LayerNorms, the feed-forward), so those run here on the
real tokens packed into rows, `(R, d_model)` with R the number of real tokens; only the
attention sees the padded layout `(B, h, T, d_head)`, through the library's own
`eager_attention_forward` with the captured mask (padding keys get the mask's minimum, hence
weight exactly 0, whatever value sits there; zeros here).

Why the numbers do not move: a position's row goes through the same kernels with the same
inner dimension as in the padded batch (a GEMM's output row does not depend on how many rows
sit beside it), and a zero weight times a value adds exactly 0. On this machine's MKL the
replay equals the library's padded forward bit for bit at every real token (1 and 2 threads,
the small and large scales); tests/test_real_demo_speed.py holds it to float32 rounding, which
is all another BLAS promises. Padding positions of the result are zeros: not computed, as no
real token reads them.

Used by `Real.run_with_z_edit` for a BERT encoder with eager attention and no feed-forward
chunking (how `pretrained.load` loads one); anything else replays through the library's layers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

from prep.demos._torch import torch

Tensor: TypeAlias = torch.Tensor  # a type for annotations (torch is not followed by mypy)
ZEdit = Callable[[int, Tensor], Tensor]  # demos/hooks.py's edit(layer, z) -> z


def fits(model: Any) -> bool:
    """True when the model's layers are plain BERT encoder layers this replay reproduces."""
    cfg = model.config
    return (
        cfg.model_type == "bert"
        and getattr(cfg, "_attn_implementation", None) == "eager"
        and not cfg.is_decoder
        and not getattr(cfg, "add_cross_attention", False)
        and not getattr(cfg, "chunk_size_feed_forward", 0)
        and not model.training
    )


@dataclass(frozen=True)
class Packing:
    """Where the real tokens of a (B, T) batch sit in its flattened (B*T,) positions."""

    rows: int  # B, the batch (all copies)
    width: int  # T, the padded length
    index: Tensor  # (R,) flat positions b*T + t of the real tokens, in order

    @staticmethod
    def of(mask: Tensor) -> Packing:
        """mask (B, T): 1 for a real token."""
        return Packing(mask.shape[0], mask.shape[1], mask.reshape(-1).nonzero()[:, 0])

    def pack(self, x: Tensor) -> Tensor:
        """(B, T, ...) -> (R, ...): the real tokens' rows."""
        return x.reshape(self.rows * self.width, *x.shape[2:]).index_select(0, self.index)

    def unpack(self, rows: Tensor) -> Tensor:
        """(R, ...) -> (B, T, ...): zeros at the padding positions."""
        flat = rows.new_zeros(self.rows * self.width, *rows.shape[1:])
        flat.index_copy_(0, self.index, rows)  # in place: ~4x faster than index_copy here
        return flat.unflatten(0, (self.rows, self.width))


def replay(
    real: Any, cap: Any, start: int, edit: ZEdit, repeat: int, mask: Tensor, rep: Callable
) -> Tensor:
    """`Real.run_with_z_edit` for a BERT encoder (see there), on the real tokens only.

    `mask` is the batch's (N, T) token mask and `rep` repeats a batch-first tensor `repeat`
    times. At `start` the captured z is edited (Q, K, V and the attention of that layer are the
    cached run's: the weights are unchanged); from the next layer on each layer runs in full,
    its z edited before the output projection. Returns (repeat*N, T, d_model), zeros at padding.
    """
    from transformers.models.bert.modeling_bert import eager_attention_forward

    h, dh = real.n_heads, real.d_head
    packing = Packing.of(rep(mask))
    args, kwargs = cap.layer_args[start]
    hidden = packing.pack(rep(args[0] if args else kwargs["hidden_states"]))  # (R, d_model)
    z = edit(start, rep(cap.z[start]))  # (rN, T, h, dh)
    hidden = _after_attention(real.layers[start], packing.pack(z.flatten(-2)), hidden)
    for i in range(start + 1, real.n_layers):
        block = real.layers[i]
        attn = block.attention.self
        args, kwargs = cap.layer_args[i]
        additive = rep(args[1] if len(args) > 1 else kwargs.get("attention_mask"))  # (rN,1,*,T)
        q, k, v = (
            _heads(packing, lin(hidden), h, dh) for lin in (attn.query, attn.key, attn.value)
        )
        z, _ = eager_attention_forward(
            attn,
            q,
            k,
            v,
            additive,
            scaling=attn.scaling,
            dropout=0.0,
        )  # (rN, T, h, dh)
        z = edit(i, z)
        hidden = _after_attention(block, packing.pack(z.flatten(-2)), hidden)
    return packing.unpack(hidden)  # (rN, T, d_model)


def _heads(packing: Packing, rows: Tensor, h: int, dh: int) -> Tensor:
    """A projection's packed rows (R, h*dh) in the attention's layout (rN, h, T, dh)."""
    return packing.unpack(rows).unflatten(-1, (h, dh)).transpose(1, 2)


def _after_attention(block: Any, z: Tensor, hidden: Tensor) -> Tensor:
    """A BERT layer after its self-attention: W_O, residual and LayerNorm, then the
    feed-forward; z (R, h*dh) and the layer input hidden (R, d_model) -> (R, d_model)."""
    attended = block.attention.output(z, hidden)  # (R, d_model)
    return block.feed_forward_chunk(attended)  # (R, d_model)
