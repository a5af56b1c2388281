"""A file of this device's own journal folder that stays unreadable.

fork.check reads every file of this device's folder it has not checked: one it did not write
means another copy of this database writes under its id. A file there that cannot be read
may be that evidence still arriving, so nothing is sent while it cannot be read. A file that
never becomes readable (damaged, or a sync tool that stopped bringing it) would stop this
device sending at every sync; so, by a rule that waits only for what can still arrive:

- a file whose header names the time this database wrote that number (fork.WROTE_KEY) is its
  own, damaged since it was written: no evidence of a copy; set aside at once;
- an entry that is no regular file (a FIFO, a symbolic link, a folder: journal.NotAFile) is
  no journal and never becomes one: set aside at once;
- a file this user may not read (permission denied: journal.Denied) does not become readable
  by itself (a sync tool bringing a file writes it; it does not refuse it): set aside at once,
  its line naming the cause and what to do (before, it held sending for 10 minutes with a
  "still arriving?" line); once its permissions change its change time moves: checked again;
- any other file is set aside once a sync finds it as the previous sync found it unreadable
  (the same size and modification time) and last modified more than ``STUCK_S`` ago: a sync
  tool bringing a file writes it, and one unchanged that long is not arriving. A modification
  time ahead of this machine's clock (tools keep the sender's, whose clock may be fast) is
  not trusted: such a file counts as unchanged since a sync here first found it so.

Set aside means noted in the database (``KEY``) and left where it is: not renamed or removed,
since the sync tool would carry that to every machine, the other copy's included, where the
file may be whole. A file set aside is no evidence either way and holds nothing up; the
sync that sets it aside says so in one line; once it changes it is checked again (its
change time moves: fork._unchecked).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

from prep.engine.paths import entry_kind
from prep.engine.store import devices as local
from prep.engine.sync import journal

if TYPE_CHECKING:
    from prep.engine.store import Store

# {number: [size, mtime_ns, set aside (0 or 1), first found so (this machine's clock, ns)]}
KEY = "sync_stuck"
STUCK_S = 600


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        st = path.lstat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def set_aside(conn, files: dict[int, Path]) -> set[int]:
    """The numbers of the files set aside and unchanged since."""
    notes = local.json_meta(conn, KEY) or {}
    return {
        int(n)
        for n, (size, mtime, aside, *_first) in notes.items()
        if aside and int(n) in files and _stat(files[int(n)]) == (size, mtime)
    }


def judge(
    store: Store,
    files: dict[int, Path],
    unread: list[int],
    wrote_at: dict[int, list[str]],
    denied: set[int] | frozenset[int] = frozenset(),
) -> tuple[list[int], list[int]]:
    """Of the files ``unread`` (this device's, not readable, not set aside; ``denied``: those
    this user may not read): (those set aside now, those still waited for); noted inside the
    caller's transaction."""
    conn = store.conn
    old = local.json_meta(conn, KEY) or {}
    notes = {n: v for n, v in old.items() if int(n) in files and int(n) not in unread and v[2]}
    now_ns = time.time_ns()
    aside, waiting = [], []
    for n in unread:
        st = _stat(files[n])
        seen = old.get(str(n))
        # (no regular file, never one a sync tool brings: no evidence, not arriving either)
        ours = n in denied or entry_kind(files[n]) is not None
        ours = ours or journal.written_at(files[n]) in wrote_at.get(n, ())
        still = seen is not None and st is not None and (seen[0], seen[1]) == st
        # unchanged since: since its modification time, or, where that is ahead of this
        # machine's clock (the sender's clock fast), since a sync here first found it so
        first = int(seen[3]) if still and seen is not None and len(seen) > 3 else now_ns
        since = st[1] if st is not None and st[1] <= now_ns else first
        if st is not None and (ours or (still and now_ns - since > STUCK_S * 1_000_000_000)):
            notes[str(n)] = [*st, 1, first]
            aside.append(n)
        else:
            notes[str(n)] = [*(st or (-1, -1)), 0, first]
            waiting.append(n)
    if notes:
        store.set_meta(KEY, json.dumps(notes, separators=(",", ":")))
    else:
        conn.execute("DELETE FROM meta WHERE key = ?", (KEY,))
    return aside, waiting


def line(
    files: dict[int, Path],
    aside: list[int],
    wrote_at: dict[int, list[str]],
    denied: set[int] | frozenset[int] = frozenset(),
) -> str:
    """What the sync that sets files aside says, in one line."""
    first = files[aside[0]]
    more = f" (and {len(aside) - 1} more)" if len(aside) > 1 else ""
    kind = entry_kind(first)
    if aside[0] in denied:
        return (
            f"{first}{more}: this device's journal file cannot be read (permission denied): "
            "set aside, left in place; sending again; give this user read access to it "
            "(chmod u+r, or chown it) and the next sync checks it (another copy of this "
            "database may have written it)"
        )
    if kind is not None:
        why = f"{kind} in this device's journal folder, not a journal file"
    elif journal.written_at(first) in wrote_at.get(aside[0], ()):
        why = "this device's own journal file is damaged since it wrote it"
    else:
        why = (
            f"this device's journal file has stayed unreadable and unchanged for over "
            f"{STUCK_S // 60} minutes (not arriving)"
        )
    whole = "" if kind is not None else " (the machine that wrote it may hold it whole)"
    return f"{first}{more}: {why}: set aside, left in place{whole}; sending again"
