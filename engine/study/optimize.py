"""`prep optimize`: fit FSRS parameters to the user's own review log (fsrs's Optimizer).

fsrs's Optimizer trains only on reviews made at least a day after the card's previous review
(among the first 64 reviews of each card); below one mini-batch of those (512) it silently
returns the default parameters. We count them the same way first and refuse below that, saying
how many more are needed.

The Optimizer imports torch and pandas, so it is imported here lazily, inside ``fit`` only;
counting and everything `prep --help`/`prep stats` touch stay light.
"""

from __future__ import annotations

import math
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import fsrs
from fsrs.scheduler import DEFAULT_PARAMETERS

from prep.engine.store import Review, Store
from prep.engine.study.scheduler import CardState, Rating, Scheduler, Settings
from prep.engine.textsafe import count

# fsrs.optimizer: `mini_batch_size = 512`; `if num_reviews < mini_batch_size: return defaults`.
MIN_REVIEWS = 512
# fsrs.optimizer: `max_seq_len = 64`: only the first 64 reviews of each card are used.
MAX_SEQ_LEN = 64

# FSRS-6 parameter names, for the side-by-side table (fsrs documents w0..w20).
PARAMETER_NAMES = (
    "initial stability (Again)",
    "initial stability (Hard)",
    "initial stability (Good)",
    "initial stability (Easy)",
    "initial difficulty",
    "difficulty: rating effect",
    "difficulty: change per grade",
    "difficulty: mean reversion",
    "stability after recall: scale",
    "stability after recall: S decay",
    "stability after recall: R effect",
    "stability after lapse: scale",
    "stability after lapse: D effect",
    "stability after lapse: S effect",
    "stability after lapse: R effect",
    "Hard penalty",
    "Easy bonus",
    "same-day review: scale",
    "same-day review: rating offset",
    "same-day review: S effect",
    "forgetting curve decay",
)


class OptimizeError(Exception):
    """Not enough data (or another reason not to fit), with a one-line message."""


def fsrs_card_id(card_id: str) -> int:
    """The integer id fsrs sees for a card (as in CardState.to_fsrs)."""
    return zlib.crc32(card_id.encode())


def review_logs(reviews: Iterable[Review]) -> list[fsrs.ReviewLog]:
    return [
        fsrs.ReviewLog(
            card_id=fsrs_card_id(r.card_id),
            rating=Rating(r.rating),
            review_datetime=r.reviewed_at,
            review_duration=r.duration_ms,
        )
        for r in reviews
    ]


def trainable_count(logs: Iterable[fsrs.ReviewLog]) -> int:
    """How many reviews fsrs's Optimizer would train on: among the first 64 reviews of each
    card, those made at least one whole day after the card's previous review."""
    by_card: dict[int, list[datetime]] = {}
    for log in logs:
        by_card.setdefault(log.card_id, []).append(log.review_datetime)
    count = 0
    for times in by_card.values():
        times = sorted(times)[:MAX_SEQ_LEN]
        count += sum(1 for a, b in zip(times, times[1:], strict=False) if (b - a).days > 0)
    return count


@dataclass(frozen=True)
class FitResult:
    old: tuple[float, ...]
    new: tuple[float, ...]
    reviews: int  # reviews in the log
    trainable: int  # of those, what the optimizer trains on
    old_loss: float  # log loss of the old parameters on this log (lower predicts better)
    new_loss: float
    seconds: float

    @property
    def changed(self) -> bool:
        return any(abs(a - b) > 1e-9 for a, b in zip(self.old, self.new, strict=True))


def current_parameters(settings: Settings) -> tuple[float, ...]:
    return (
        tuple(settings.parameters) if settings.parameters is not None else tuple(DEFAULT_PARAMETERS)
    )


def check_enough(logs: Sequence[fsrs.ReviewLog]) -> int:
    """The trainable count; raises OptimizeError below the optimizer's minimum."""
    n = trainable_count(logs)
    if n < MIN_REVIEWS:
        raise OptimizeError(
            f"not enough reviews to optimize: fsrs needs {MIN_REVIEWS} reviews made a day or more "
            f"after the card's previous one; you have {n} ({MIN_REVIEWS - n} more needed; "
            f"{count(len(logs), 'review')} in all). Keep reviewing and try again later"
        )
    return n


class _CountedReads(dict):
    """A dict that reports every ``[key]`` read (see ``_watch``)."""

    def __init__(self, data: dict, on_read: Callable[[], None]) -> None:
        super().__init__(data)
        self._on_read = on_read

    def __getitem__(self, key: object) -> object:
        self._on_read()
        return super().__getitem__(key)


def _watch(optimizer: object, progress: Callable[[float], None]) -> None:
    """Report the fit's progress (0..1) to ``progress``.

    fsrs's Optimizer reads each card's history from ``_revlogs_train`` once per pass over the
    log: one pass to count the reviews, two per epoch (training, then the epoch's loss), and
    one per loss we ask for afterwards (old and new parameters). Counting those reads
    measures how far the fit is (by passes, not seconds: a training pass costs more than a
    loss pass). The attribute is private (fsrs 6); without it the fit runs without progress."""
    import fsrs.optimizer as fsrs_optimizer

    revlogs = getattr(optimizer, "_revlogs_train", None)
    if not isinstance(revlogs, dict) or not revlogs:
        return
    total = len(revlogs) * (2 * int(getattr(fsrs_optimizer, "num_epochs", 5)) + 3)
    reads = 0

    def on_read() -> None:
        nonlocal reads
        reads += 1
        progress(min(reads / total, 1.0))

    optimizer._revlogs_train = _CountedReads(revlogs, on_read)  # type: ignore[attr-defined]


def fit(
    store: Store,
    progress: Callable[[float], None] | None = None,
    damaged: list | None = None,
) -> FitResult:
    """Fit parameters to the stored review log. Imports torch (via fsrs.optimizer).
    ``progress`` is told the fraction done (0..1) as the fit goes: 54k reviews take minutes.
    ``damaged``: review rows that cannot be read are left out and listed there (else a
    StoreError names the first)."""
    reviews = store.reviews(damaged=[] if damaged is not None else None)
    logs = review_logs(reviews)
    n = check_enough(logs)
    old = current_parameters(store.settings())
    started = time.monotonic()
    from fsrs.optimizer import Optimizer  # torch + pandas: only here

    optimizer = Optimizer(logs)
    if progress is not None:
        _watch(optimizer, progress)
    new = tuple(float(x) for x in optimizer.compute_optimal_parameters(verbose=False))
    # the optimizer's own loss (private in fsrs 6; without it the effect shows intervals only)
    loss = getattr(optimizer, "_compute_batch_loss", None)
    old_loss = float(loss(parameters=list(old))) if loss else math.nan
    new_loss = float(loss(parameters=list(new))) if loss else math.nan
    return FitResult(old, new, len(reviews), n, old_loss, new_loss, time.monotonic() - started)


def first_intervals(
    parameters: Sequence[float], settings: Settings, now: datetime
) -> dict[str, timedelta]:
    """The effect on a typical card: the interval a new card gets after Good on each day it
    comes due (three times), under ``parameters`` and the user's other settings (no fuzz)."""
    from dataclasses import replace

    sched = Scheduler(replace(settings, parameters=tuple(parameters)), enable_fuzzing=False)
    card = CardState(id="typical")
    out: dict[str, timedelta] = {}
    t = now
    labels = ["1st Good", "2nd Good", "3rd Good", "4th Good", "5th Good"]
    i = 0
    # Learning steps first (same-day), then the graduating and later intervals.
    for _ in range(12):
        o = sched.review(card, Rating.Good, t)
        card = o.state
        if o.interval >= timedelta(days=1):
            out[labels[i]] = o.interval
            i += 1
            if i == 3:
                break
        t = card.due or t
    return out
