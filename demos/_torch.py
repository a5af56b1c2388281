"""torch, imported without its "Failed to initialize NumPy" warning, and its thread count for
the machine's load (`set_threads`: the worker's demo runs and grades, `prep grade`).

The demos never use NumPy. torch's CPU wheels emit a UserWarning at import when NumPy is absent,
which would print on every `prep demo` run and turn into an error under pytest's
`filterwarnings = error`. Every demo module imports torch from here, so the first import of torch
in the process is this quiet one; later `import torch` statements reuse the loaded module.
"""

import math
import os
import warnings

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
    import torch

__all__ = ["set_threads", "threads_for_load", "torch", "warm_optimizers"]


# A core counts as free for one more thread when it is idle at least this share of the time.
# An extra thread that waits for its core stalls the others at every barrier: on 2 busy cores,
# 2 threads ran the decoder demos 3x slower than 1, while a free core at best halves the time.
# With the core free a share p of the time, 2 threads take about p/2 + 3(1 - p) of one thread's
# time: below 1 only when p > 0.8. So 0.8 of a core is a core, 0.5 is not.
FREE_CORE = 0.8


def threads_for_load(cores: int, load: float) -> int:
    """Torch's intra-op threads for one run: one, plus one for each core that the load leaves
    free (idle at least FREE_CORE of the time); every core on a quiet machine. The headroom
    ``cores - load`` is counted in such cores, rounded down: it was ``round``ed half to even,
    so 0.5 of a core was no thread, 1.5 cores two more threads, 2.5 cores two as well."""
    free = math.floor(cores - load + (1 - FREE_CORE) + 1e-9)  # (1e-9: 2 - 1.2 + 0.2 is 0.99..)
    return max(1, min(cores, free + 1))


def set_threads() -> int:
    """Set torch's intra-op threads for the machine's load now (demo runs, grading)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = 0.0
    n = threads_for_load(cores, load)
    torch.set_num_threads(n)
    return n


def warm_optimizers() -> None:
    """Import what a torch.optim step imports on its first call: torch._dynamo (~800 modules,
    sympy among them; ~1.3 s on a quiet core, more than a small training's compute). The
    worker's warm-up calls it (a demo module's `warm`) so the first key press does not pay it."""
    import torch._dynamo  # noqa: F401
