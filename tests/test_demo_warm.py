"""The worker's warm-up imports what a demo's first run would otherwise import on the key press
(torch.optim's first step imports torch._dynamo: ~800 modules, longer than the training)."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import sys
from prep.demos import worker
worker._harness()
before = "torch._dynamo" in sys.modules
worker.op_ping(None, {"warm": "block-diagonal"})
print(before, "torch._dynamo" in sys.modules)
"""


def test_warming_an_optimising_demo_imports_what_its_first_step_needs() -> None:
    proc = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "True"]  # torch alone does not: the ping does


def test_first_training_step_imports_dynamo() -> None:
    """Why the warm-up is needed: a fresh torch imports torch._dynamo at an optimiser's first
    step (if torch stops doing that, the warm-up is dead weight and this test says so)."""
    code = (
        "import sys\nfrom prep.demos._torch import torch\n"
        "p = torch.nn.Parameter(torch.zeros(2)); p.sum().backward()\n"
        "a = 'torch._dynamo' in sys.modules\ntorch.optim.SGD([p], lr=0.1).step()\n"
        "print(a, 'torch._dynamo' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "True"]
