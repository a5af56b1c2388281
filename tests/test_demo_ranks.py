"""The distributed demos' kept ranks (demos/synthetic/ranks.py): in the demo worker the rank
interpreters import torch once and then run one live process group after another; `prep demo`
still starts fresh interpreters. Every run joins a new group and runs its collectives for real."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from prep.demos.synthetic import ranks, sequence_parallel, tensor_parallel


@pytest.fixture
def kept() -> Iterator[None]:
    ranks.keep_warm()
    try:
        yield
    finally:
        ranks.keep_warm(False)
    assert ranks._kept == []  # closed: nothing left running


def kept_pids() -> set[int]:
    return {p.pid for p in ranks._kept if p.poll() is None}


def measured(report) -> list[float]:
    return [c.measured for c in report.checks + report.contrast]


def test_kept_ranks_run_each_demo_live_in_the_same_interpreters(kept: None) -> None:
    tensor_parallel.warm()
    first = kept_pids()
    assert len(first) == tensor_parallel.WORLD_SIZE
    runs = [tensor_parallel.run(device="cpu") for _ in range(2)]
    runs += [sequence_parallel.run(device="cpu") for _ in range(2)]
    assert all(r.passed for r in runs), [c for r in runs for c in r.checks if not c.passed]
    assert kept_pids() == first  # no new interpreter after the warm-up, for either demo
    # the same numbers as fresh interpreters give (the collectives ran, not a stored result)
    ranks.keep_warm(False)
    fresh = tensor_parallel.run(device="cpu")
    assert measured(fresh) == measured(runs[0]) == measured(runs[1])
    assert ranks._kept == []


def test_a_rank_that_dies_is_replaced_and_the_run_says_why(kept: None, tmp_path) -> None:
    tensor_parallel.warm()
    victim = ranks._kept[0]
    victim.kill()
    victim.wait()
    report = tensor_parallel.run(device="cpu")  # a dead kept rank is never handed a job
    assert report.passed and victim.pid not in kept_pids()
    # a job that crashes in its kept rank: exit code 1, the traceback in the run's log, and the
    # rank serves the next job
    before = kept_pids()
    codes = ranks.run(
        "prep.demos.synthetic.tensor_parallel", [["0"]], tmp_path, dict(os.environ), timeout=60
    )
    assert codes == [1]
    assert "ValueError" in (tmp_path / "rank0.log").read_text()
    assert tensor_parallel.run(device="cpu").passed and kept_pids() == before
