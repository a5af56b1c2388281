"""The demo worker keeps freed memory (demos/worker.py keep_freed_memory, issue 26): a block freed and
allocated again comes from the heap, not from fresh pages the kernel faults in one by one."""

from __future__ import annotations

import subprocess
import sys

import pytest

CHILD = """
import resource, sys
from prep.demos import worker
if sys.argv[1] == "keep":
    assert worker.keep_freed_memory()
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
b"x" * (40 << 20)  # a 40 MiB block, above glibc's largest adaptive mmap threshold
start = faults()
for _ in range(10):
    b"x" * (40 << 20)
print(faults() - start)
"""


def page_faults(mode: str) -> int:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, mode], capture_output=True, text=True, check=True
    )
    return int(out.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_a_freed_block_is_reused_without_page_faults() -> None:
    pages = 10 * (40 << 20) // 4096
    assert page_faults("default") > pages // 2  # every block faulted in afresh
    assert page_faults("keep") < pages // 100  # the heap's own pages, reused


def test_the_worker_keeps_freed_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    from prep.demos import worker

    called: list[bool] = []
    monkeypatch.setattr(worker, "keep_freed_memory", lambda: called.append(True) or True)
    monkeypatch.setattr(worker, "serve", lambda stdin, stdout: None)
    monkeypatch.setattr(worker.ranks, "keep_warm", lambda: None)
    monkeypatch.setattr(sys, "stdout", sys.stdout)  # main() points stdout at stderr
    assert worker.main() == 0 and called == [True]
