"""A review set aside whose copy never syncs again, taken as this device's own (journal v4).

engine/sync/replaced.py sets a review aside when the journal of its id's device, as the folder
holds it now, gives that id to another review: the copy that made it (a database copied, both
copies writing under one id) is to send it again under its new id once it finds the copy. A
copy that never syncs again would leave it aside for good. So a review aside for over
``ADOPT_S`` (by this machine's clock) is taken as this device's own: a review of its own
numbering whose journal entry names the id it was made under::

    ["r", SEQ, CARD_ID, RATING, AT_US, DURATION_MS|null, P, ORIGIN_DEVICE_ID, ORIGIN_SEQ]

It is held once whatever arrives after, in any order, on every device (``rule``):

- the review itself arriving under another id with the origin's number (the copy found, took
  a new id and sent it: a copy keeps its reviews' numbers), with the same card, time and
  rating, is that review: the one taken in stands down wherever both meet, so the copy's
  review is held and the adopted one nowhere; under the origin's own id (the losing version
  of a file arriving late) it is not taken, and where it is held so the adopted one
  replaces it (that id is the winning version's review's);
- two devices that took the same review in: the one with the smaller (device id, number) is
  held, the other not.

Which reviews were taken in so, here and by other devices, is kept in ``meta`` (``KEY``).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from prep.engine.store import devices as local

if TYPE_CHECKING:
    from datetime import datetime

    from prep.engine.store import Store

KEY = "sync_adopted"  # {"DEVICE ID:SEQ": [origin device id, origin seq]}: reviews taken in
ADOPT_S = 7 * 86400  # a review aside this long (its copy silent) is taken as this device's
FIELDS = 9  # an adopting review entry's fields


def since_now() -> int:
    """The time (us, this clock) a review is set aside: what ``adopt`` measures from."""
    return time.time_ns() // 1000


def known(conn) -> dict[str, list[Any]]:
    return local.json_meta(conn, KEY) or {}


def note(conn, dev_id: str, seq: int, origin: list[Any]) -> None:
    """Review (``dev_id``, ``seq``) is review ``origin`` [device id, seq] taken in there."""
    found = known(conn)
    if found.get(f"{dev_id}:{seq}") != list(origin):
        found[f"{dev_id}:{seq}"] = list(origin)
        local.set_json_meta(conn, KEY, found)


def adopt(store: Store, now: datetime) -> int:
    """Take every review set aside for over ``ADOPT_S`` as this device's own, inside the
    caller's transaction; returns how many."""
    from prep.engine.store.reviewlog import to_us
    from prep.engine.sync import merge, replaced

    conn = store.conn
    aside = local.json_meta(conn, replaced.ASIDE_KEY) or {}
    unstamped = [v for v in aside.values() if len(v) == 5]  # (set aside by an older prep)
    for v in unstamped:
        v.append(to_us(now))  # counted from now
    due = to_us(now) - ADOPT_S * 1_000_000
    old = {k: v for k, v in aside.items() if v[5] < due}
    if not old:
        if unstamped:
            local.set_json_meta(conn, replaced.ASIDE_KEY, aside)
        return 0
    me, me_id = local.device(conn), local.device_id(conn)
    devices = merge._device_ids(conn)
    scheds: dict = {}
    for key, (cid, rating, at, dur, params, _since) in sorted(old.items()):
        origin_dev, origin_seq = key.rsplit(":", 1)
        seq = local.next_review_id(conn)
        local.take_seq(conn, seq)
        review = merge._Rev(me, seq, at, rating, dur, local.params_n(conn, params))
        merge.replay(store, cid, [review], devices, scheds)
        note(conn, me_id, seq, [origin_dev, int(origin_seq)])
        del aside[key]
    local.set_json_meta(conn, replaced.ASIDE_KEY, aside or None)
    return len(old)


def rule(
    adopted: dict[str, list[Any]],
    arriving: tuple[str, int, list[Any] | None],
    held: tuple[str, int],
) -> bool | None:
    """A review ``arriving`` (device id, seq, the origin it names when it took one in) and a
    review ``held`` here under another id with the same card, time and rating: True when the
    arriving one is held instead of it, False when it is not taken, None when neither took
    the other in (replaced.py's rules decide).

    The origin's own id belongs to the review its journal holds (the one that displaced the
    review taken in): under it, the review taken in is held as the adopting device's; under
    the origin's number with another id (the copy's new id), it is the copy's."""
    dev_id, seq, origin = arriving
    theirs = adopted.get(f"{held[0]}:{held[1]}")
    if origin is not None and theirs is None:  # the held one is the review itself?
        if list(held) == list(origin):
            return True
        return False if held[1] == origin[1] else None
    if origin is None and theirs is not None:  # the review itself arrives?
        if [dev_id, seq] == list(theirs):
            return False
        return True if seq == theirs[1] else None
    if origin is not None and theirs is not None and list(origin) == list(theirs):
        return (dev_id, seq) < held  # two took it in: the smaller id is held
    return None
