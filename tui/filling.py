"""The deck cache's fill in its thread (Startup._fill_thread), on the thread's own connection.

What the app needs of that thread beyond the load itself:

- q stops it promptly, whatever it is doing: the load's progress callback sees the stop
  between steps, and a single long statement (the reconciliation's whole-collection
  "removed" UPDATE at a million cards) is stopped inside SQLite (Store.stop_when), rolled
  back; nothing saved is lost, and the next open does it again;
- another prep holding the write lock is waited for here, off the UI thread, with a line on
  the screen (a short busy timeout, then a retry, so q is never kept waiting): round eight
  let the load fall back to a private cache in the thread, threw it away, and parsed every
  deck file again on the UI thread;
- any other error is handed back, for the app to show (r retries the thread).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from collections.abc import Callable

    from textual.worker import Worker

    from prep.engine.store import Store, StoreError
    from prep.tui.screens.fill import FillScreen

# The thread's wait for another writer's lock before it says so and tries again (a rating's
# commit takes milliseconds; a longer writer is waited for in steps q can cut short)
FILL_BUSY_TIMEOUT_MS = 250
RETRY_EVERY_S = 0.5
WAITING = (
    "Waiting: another prep is writing to the progress database. This goes on by itself once "
    "it is done (q quits; nothing is lost)."
)


def fill(
    db: str,
    screen: FillScreen,
    worker: Worker[object],
    load: Callable[[Store], object],
) -> Literal["done", "stopped"] | StoreError:
    """Run ``load`` on a new connection to ``db`` until it is done, the worker is cancelled
    (q: "stopped"), or it fails otherwise (the StoreError, for the app to show)."""
    from prep.engine.store import Store, StoreError

    told = False
    while True:
        try:
            with Store.open(db) as store:
                store.set_busy_timeout(FILL_BUSY_TIMEOUT_MS)
                store.stop_when(lambda: worker.is_cancelled)
                load(store)
            return "done"
        except StoreError as exc:
            if worker.is_cancelled:
                return "stopped"  # (interrupted: rolled back)
            if exc.kind != "busy":
                return exc
        if not told:
            told = True
            screen.post_message(screen.Note(WAITING))
        if _stopped_within(worker, RETRY_EVERY_S):
            return "stopped"


def _stopped_within(worker: Worker[object], seconds: float) -> bool:
    """Wait ``seconds``, in short steps; True as soon as the worker is cancelled."""
    step = threading.Event()
    for _ in range(max(1, int(seconds / 0.05))):
        if worker.is_cancelled:
            return True
        step.wait(0.05)
    return worker.is_cancelled
