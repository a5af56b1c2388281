"""Whether a sync folder answers before a sync reads it: a network share whose server is gone
(an NFS hard mount, sshfs, SMB) blocks a stat or a listing for good, and `prep sync` (or the
app on quit) hung with it, nothing said.

The sync folder and each device's folder in it (a link too: it may lead to another share) are
stat-ed and listed first in a thread of its own, which touches no database; the caller waits
while it makes progress, and gives up once one step has not answered for ANSWER_S seconds, as
Anki's sync client gives up on a connection idle that long (rslib's HttpSyncClient: an I/O
timeout of 30 s, reset by each byte). Then the folder that did not answer is named and the
sync is not begun: nothing is written (the database, its backup, a journal). The thread stays
blocked in the system call, a daemon thread: the process exits without waiting for it.

A share that hangs later, midway through a sync, still blocks it: only these first looks are
watched (each file's reading and the journal's writing are not; a sync killed there loses
nothing: a transaction not committed is not applied, a journal file not renamed into place
is not one)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from prep.engine.sync.journal import DEVICE_RE

__all__ = ["ANSWER_S", "unanswered"]

ANSWER_S = 30.0  # one look at the folder this long without an answer: it does not answer
_POLL_S = 0.1  # how often the caller checks the looks' progress


def _look(root: Path, at: list[Path | None]) -> None:
    """Stat and list ``root`` and each entry named like a device's folder (following a link,
    as the sync does), noting in ``at`` each path before it is looked at; None once done. An
    error ends it: the sync's own checks say what it is."""
    try:
        at.append(root)
        os.stat(root)
        with os.scandir(root) as found:
            names = [e.name for e in found if DEVICE_RE.fullmatch(e.name)]
        for name in sorted(names):
            path = root / name
            at.append(path)
            try:
                if not path.is_dir():  # (a stat that follows a link: another share too)
                    continue
                with os.scandir(path) as files:
                    for _ in files:
                        pass
            except OSError:
                continue
    except OSError:
        pass
    finally:
        at.append(None)


def unanswered(root: Path, timeout: float | None = None) -> str | None:
    """The line naming the folder (``root``, or a device's folder in it) that did not answer
    a look for ``timeout`` seconds (ANSWER_S), or None once every look answered."""
    limit = ANSWER_S if timeout is None else timeout
    at: list[Path | None] = []
    thread = threading.Thread(target=_look, args=(root, at), daemon=True, name="prep-look")
    thread.start()
    seen, since = 0, time.monotonic()
    while True:
        thread.join(_POLL_S)
        if not thread.is_alive():
            return None
        if len(at) != seen:  # (progress: each look has its own time to answer)
            seen, since = len(at), time.monotonic()
        elif time.monotonic() - since >= limit:
            where = at[-1] if at else root
            return (
                f"{where}: did not answer for {limit:g} s (a network share whose server is "
                "not reachable?); nothing synced, nothing written: sync again once it answers"
            )
