"""torch, imported without its "Failed to initialize NumPy" warning.

The demos never use NumPy. torch's CPU wheels emit a UserWarning at import when NumPy is absent,
which would print on every `prep demo` run and turn into an error under pytest's
`filterwarnings = error`. Every demo module imports torch from here, so the first import of torch
in the process is this quiet one; later `import torch` statements reuse the loaded module.
"""

import warnings

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
    import torch

__all__ = ["torch"]
