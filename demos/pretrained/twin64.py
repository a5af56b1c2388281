"""The float64 copy of a loaded checkpoint, made once per loaded model (issue 26).

The real-* demos' identities are checked at 1e-10, in float64. `pretrained.in_float64` deep-
copies the model and converts it (0.1-0.15 s, every run); in the app's worker the model is loaded
once, so its float64 copy is too: `of(real)` converts on first use and hands back the same copy
after. Only the weights are prepared ahead: every forward pass on them runs live in each run.

A demo that changes the copy's weights (real-importance reparameterises one layer) does it
inside `restoring(copy, layer)`, which puts that layer's attention parameters back exactly as
they were when the block ends, however it ends (an error, a cancelled run). The copy is shared
by the runs of one process, one at a time (the worker runs one real-* demo at a time on MiniLM).
`run_from(copy, cap, layer)` runs such a changed copy again from the changed layer on only.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Iterator

from prep.demos._torch import torch
from prep.demos.pretrained import pretrained as pt

_copies: weakref.WeakKeyDictionary[pt.Real, pt.Real] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def of(real: pt.Real) -> pt.Real:
    """The float64 copy of `real` (made on first use, then kept as long as `real` is)."""
    with _lock:
        twin = _copies.get(real)
        if twin is None:
            twin = _copies[real] = pt.in_float64(real)
        return twin


@contextlib.contextmanager
def restoring(twin: pt.Real, layer: int) -> Iterator[None]:
    """Within the block the layer's attention weights may be changed in place (e.g.
    `pt.reparameterise`); they are restored bit for bit when it ends."""
    params = [*twin.attn(layer).parameters(), *twin.out_proj(layer).parameters()]
    saved = [p.detach().clone() for p in params]
    try:
        yield
    finally:
        with torch.no_grad():
            for p, keep in zip(params, saved, strict=True):
                p.copy_(keep)


def run_from(real: pt.Real, cap: pt.Capture, start: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The model's last hidden state (N, T, d_model) and layer `start`'s z (N, T, h, d_head)
    when layers `start`.. are run again, in full, on the input `cap` saw there.

    For a pass after only layer `start`'s weights changed: the layers before it are the
    captured run's (same weights, same input: the same numbers bit for bit), so they are not
    run again; `start` and every later layer run live through the library's own modules, on the
    padded batch (padding positions as the library computes them), with the arguments they had.
    """
    args, kwargs = cap.layer_args[start]
    hidden = args[0] if args else kwargs["hidden_states"]  # (N, T, d_model)
    seen: list[torch.Tensor] = []

    def on_proj(mod: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> None:
        seen.append(inputs[0].detach().unflatten(-1, (real.n_heads, real.d_head)))

    handle = real.out_proj(start).register_forward_pre_hook(on_proj)
    try:
        with torch.no_grad():
            for i in range(start, real.n_layers):
                args, kwargs = cap.layer_args[i]
                kw = {k: v for k, v in kwargs.items() if k != "hidden_states"}
                out = real.layers[i](hidden, *args[1:], **kw)
                hidden = out[0] if isinstance(out, tuple) else out
            if real.family == "gpt2":
                hidden = real.model.ln_f(hidden)
    finally:
        handle.remove()
    return hidden, seen[0]  # (N, T, d_model), (N, T, h, d_head)
