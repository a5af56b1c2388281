"""Monte Carlo nulls drawn in chunks, several at once, on every core torch may use.

A null is a `Null`: at most `n` draws of a statistic, `sample(k, generator)` giving the
statistics of k fresh draws. Its draws come in chunks of 50, and chunk c of a null draws from its
own generator, seeded by the c-th number of a stream seeded by the null's `seed`: chunks are
independent of each other and of the order they are computed in, so a pool of worker threads
(torch releases the GIL inside its kernels; each worker at one intra-op thread, because batched
`eigvalsh` and `randn` run on one core whatever torch's thread count) computes them in any order
and the values are the same as one thread's loop, bit for bit, whatever the machine.

A null may stop early: after each chunk, in chunk order, `done(values so far)` is asked, and
the values are those up to the first chunk where it says yes (or all n). Chunks computed ahead
of that look are dropped, so the values never depend on the pool. The pool works on a chunk no
null has asked for yet (one past the chunk awaiting its look) only when no null has a chunk it
surely needs, and only for a null drawn alone or one whose last look asked for more: at most
one chunk a null is computed in vain, and a batch of nulls that each stop at their first look
(the usual case) wastes none.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import TypeAlias, TypeVar

from prep.demos._torch import torch

Tensor: TypeAlias = torch.Tensor  # a type for annotations (torch is not followed by mypy)
Generator: TypeAlias = torch.Generator
T = TypeVar("T")

CHUNK = 50  # draws a chunk: the batch the real-* nulls have always been computed in


def chunk_sizes(n: int, chunk: int = CHUNK) -> list[int]:
    return [min(chunk, n - start) for start in range(0, n, chunk)]


def never(values: Tensor) -> bool:
    return False


@dataclass
class Null:
    """At most n draws of a statistic: sample(k, gen) -> (k,) from k fresh draws of gen."""

    sample: Callable[[int, Generator], Tensor]
    n: int
    seed: int
    done: Callable[[Tensor], bool] = never  # asked after each chunk: stop drawing here?
    chunk: int = CHUNK  # draws a chunk (and between two looks of `done`)
    sizes: list[int] = field(init=False)
    seeds: list[int] = field(init=False)

    def __post_init__(self) -> None:
        self.sizes = chunk_sizes(self.n, self.chunk)
        stream = torch.Generator().manual_seed(self.seed)
        self.seeds = [int(s) for s in torch.randint(2**62, (len(self.sizes),), generator=stream)]

    def draw(self, c: int) -> Tensor:
        """The statistics of chunk c's draws: (sizes[c],)."""
        return self.sample(self.sizes[c], torch.Generator().manual_seed(self.seeds[c]))


class _Progress:
    """One null's chunks: computed (by index), looked at in order, and where it stopped."""

    def __init__(self, null: Null) -> None:
        self.null = null
        self.values: dict[int, Tensor] = {}
        self.looked = 0  # chunks 0 .. looked-1 were looked at, in order
        self.last: int | None = None  # the chunk it stopped after
        self.submitted = 0  # chunks 0 .. submitted-1 were handed out

    def look(self) -> None:
        while self.last is None and self.looked in self.values:
            c = self.looked
            self.looked += 1
            if c == len(self.null.sizes) - 1 or self.null.done(self.kept(c)):
                self.last = c

    def kept(self, last: int) -> Tensor:
        return torch.cat([self.values[c] for c in range(last + 1)])

    def result(self) -> Tensor:
        assert self.last is not None
        return self.kept(self.last)


def _one_thread(null: Null, c: int) -> Tensor:
    torch.set_num_threads(1)  # this pool thread's kernels: one core each, no oversubscription
    return null.draw(c)


def draw_nulls(nulls: list[Null], workers: int | None = None) -> list[Tensor]:
    """Each null's values, (n_i,) or fewer where its `done` stopped it; `workers` threads
    (default: torch's thread count now)."""
    workers = torch.get_num_threads() if workers is None else workers
    restore = torch.get_num_threads()
    try:
        return _draw(nulls, workers, threading.Event())
    finally:
        torch.set_num_threads(restore)  # MKL's count is process-wide: the pool set it to 1


def _draw(nulls: list[Null], workers: int, stop: threading.Event) -> list[Tensor]:
    progress = [_Progress(null) for null in nulls]
    if workers <= 1:
        torch.set_num_threads(1)  # maybe a thread of its own (Drawing): its count is not set
        for p in progress:
            while p.last is None and not stop.is_set():
                p.values[p.looked] = p.null.draw(p.looked)
                p.look()
        return [p.result() for p in progress] if not stop.is_set() else []
    with ThreadPoolExecutor(workers, thread_name_prefix="prep-null") as pool:
        running: dict[Future[Tensor], tuple[_Progress, int]] = {}
        while any(p.last is None for p in progress) and not stop.is_set():
            while len(running) < workers:
                pick = _next(progress, alone=len(progress) == 1)
                if pick is None:
                    break
                running[pool.submit(_one_thread, pick.null, pick.submitted)] = (
                    pick,
                    pick.submitted,
                )
                pick.submitted += 1
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                p, c = running.pop(future)
                p.values[c] = future.result()
                p.look()
        for future in running:
            future.cancel()  # chunks past a stop: their values would be dropped
    return [p.result() for p in progress] if not stop.is_set() else []


def each(tasks: list[Callable[[], T]], workers: int | None = None) -> list[T]:
    """[task() for task in tasks], on the pool at one intra-op thread each: small linear algebra
    (a 384 x 384 eigendecomposition) on two threads of a busy machine waits for the other
    thread, and takes 10-20x as long as on one."""
    workers = torch.get_num_threads() if workers is None else workers
    if workers <= 1:
        return [task() for task in tasks]
    restore = torch.get_num_threads()
    try:
        with ThreadPoolExecutor(workers, thread_name_prefix="prep-prep") as pool:
            return list(pool.map(_one_thread_call, tasks))
    finally:
        torch.set_num_threads(restore)  # MKL's count is process-wide: the pool set it to 1


def _one_thread_call(task: Callable[[], T]) -> T:
    torch.set_num_threads(1)
    return task()


class Drawing:
    """Nulls drawn on the pool while the caller does other work, at one thread (the pool's
    workers have the cores): `with Drawing(nulls) as d: ...; d.result()`. Leaving the block
    stops the drawing (an exception: the learner left the demo) and gives the caller its thread
    count back."""

    def __init__(self, nulls: list[Null], workers: int | None = None) -> None:
        self.workers = torch.get_num_threads() if workers is None else workers
        self.restore = torch.get_num_threads()
        self.stop = threading.Event()
        runner = ThreadPoolExecutor(1, thread_name_prefix="prep-nulls")
        self.future = runner.submit(_draw, nulls, self.workers, self.stop)
        runner.shutdown(wait=False)  # its thread ends when the nulls are drawn
        if self.workers > 1:
            torch.set_num_threads(1)

    def result(self) -> list[Tensor]:
        return self.future.result()

    def __enter__(self) -> Drawing:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()  # no chunk is handed out after this (a finished drawing: no effect)
        try:
            self.future.result()  # the chunks running finish: the pool's MKL count is settled
        except Exception:  # noqa: BLE001 - the block's own exception is the one to report
            if exc[0] is None:
                raise
        finally:
            torch.set_num_threads(self.restore)


def _next(progress: list[_Progress], alone: bool) -> _Progress | None:
    """The null whose next chunk the pool should compute: the first one that surely needs it
    (its chunks handed out are all looked at), else one computing a single chunk ahead if it is
    drawn alone or its last look asked for more."""
    open_ = [p for p in progress if p.last is None and p.submitted < len(p.null.sizes)]
    for p in open_:
        if p.submitted == p.looked:
            return p
    for p in open_:
        if p.submitted - p.looked == 1 and (alone or p.looked >= 1):
            return p
    return None
