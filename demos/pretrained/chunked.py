"""A null statistic over many random draws, in chunks, on every core torch may use.

A Monte Carlo null draws its samples from one seeded generator, in order, so the draws are the
sequential ones whatever the machine; what is done with each chunk of draws (products, Cholesky,
eigenvalues) is independent of the other chunks. `over_chunks` draws chunk after chunk in the
calling thread and hands each chunk's statistic to a pool of worker threads (torch releases the
GIL inside its kernels), each at one intra-op thread: batched `eigvalsh` and `randn` run on one
core whatever torch's thread count, so a pool is what puts the second core to work.

With one thread (a busy machine, `_torch.set_threads`) it is the plain loop. The results are the
same chunk for chunk as the plain loop at one thread: the same chunks, the same operations, each
on one thread (tests/test_real_demo_speed.py holds them equal).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeAlias

from prep.demos._torch import torch

Tensor: TypeAlias = torch.Tensor  # a type for annotations (torch is not followed by mypy)

CHUNK = 50  # draws a chunk: the batch the real-* nulls have always been computed in


def chunk_sizes(n: int, chunk: int = CHUNK) -> list[int]:
    return [min(chunk, n - start) for start in range(0, n, chunk)]


def _one_thread(statistic: Callable[[Tensor], Tensor], draws: Tensor) -> Tensor:
    torch.set_num_threads(1)  # this pool thread's kernels: one core each, no oversubscription
    return statistic(draws)


def over_chunks(
    n: int,
    draw: Callable[[int], Tensor],
    statistic: Callable[[Tensor], Tensor],
    workers: int | None = None,
) -> Tensor:
    """torch.cat of statistic(draw(k)) over the chunk sizes k of n draws: (n,).

    `draw` runs here, chunk after chunk (it owns the generator); `statistic` runs on `workers`
    threads (default: torch's thread count now), at most two chunks ahead of each worker so the
    drawn chunks waiting in memory stay few.
    """
    workers = torch.get_num_threads() if workers is None else workers
    if workers <= 1:
        return torch.cat([statistic(draw(k)) for k in chunk_sizes(n)])
    restore = torch.get_num_threads()
    out: list[Tensor] = []
    try:
        with ThreadPoolExecutor(workers, thread_name_prefix="prep-null") as pool:
            pending: deque[Future[Tensor]] = deque()
            for k in chunk_sizes(n):
                pending.append(pool.submit(_one_thread, statistic, draw(k)))
                while len(pending) > 2 * workers:
                    out.append(pending.popleft().result())
            out.extend(f.result() for f in pending)
    finally:
        torch.set_num_threads(restore)  # MKL's count is process-wide: the pool set it to 1
    return torch.cat(out)
