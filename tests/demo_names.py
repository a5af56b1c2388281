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
    "tensor-parallel",
    "mla-absorb",
    "fold-bias-ln",
    "scale-migration",
    "lora-wo",
    "residual-growth",
    "mha-code",
    "sequence-parallel",
    "real-block-structure",
    "real-importance",
    "real-ov-rank",
    "real-per-head-sum",
)
# The real-weight demos load a pretrained checkpoint (the optional `real` extra); their tests are
# in tests/test_real_demos.py and share one loaded model.
REAL_DEMO_NAMES = tuple(n for n in DEMO_NAMES if n.startswith("real-"))
SYNTHETIC_DEMO_NAMES = tuple(n for n in DEMO_NAMES if n not in REAL_DEMO_NAMES)
