"""The float64 copy of a loaded checkpoint, made once per loaded model (issue 26).

The real-* demos' identities are checked at 1e-10, in float64. `pretrained.in_float64` deep-
copies the model and converts it (0.1-0.15 s, every run); in the app's worker the model is loaded
once, so its float64 copy is too: `of(real)` converts on first use and hands back the same copy
after. Only the weights are prepared ahead: every forward pass on them runs live in each run.

A demo that changes the copy's weights (real-importance reparameterises one layer) does it
inside `restoring(copy, layer)`, which puts that layer's attention parameters back exactly as
they were when the block ends, however it ends (an error, a cancelled run). The copy is shared
by the runs of one process, one at a time (the worker runs one real-* demo at a time on MiniLM).
`copy.rerun_from(cap, layer)` runs such a changed copy again from the changed layer on only.
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
