"""The demo names the tests hold the registry to, in the order of `prep demo --list`.

Written out here rather than read from `prep.demos.registry`, so a renamed or dropped demo fails
the tests instead of passing them.
"""

DEMO_NAMES = (
    "block-diagonal",
    "no-wo",
    "per-head-sum",
    "cross-head-mixing",
    "head-weighting",
    "importance-reparam",
    "ov-rank",
    "fold-wo",
    "learned-suppression",
    "dla",
    "induction",
    "ov-copying",
    "param-share",
)
