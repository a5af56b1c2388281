"""What an export carries so that `prep import` merges by `prep sync`'s rules
(engine/sync/merge.py), and how an import applies it -- the same code a sync runs:

- the undos (tombstones): each review undone, by its id (device, seq), its card and when. An
  import records each one here and replays a card whose review it removes; a review undone
  on the exporting machine is then undone here too, however it got here (an earlier export,
  a sync). A tombstone taken in by an import is passed on by this device's next sync, as the
  reviews an import brings are;
- each mark's clock (at, device, stamp), the marks cleared since included (a mark that is
  no mark, with its clock): a mark is a last-writer-wins register, and the later clock wins
  whichever way it arrives;
- the settings' clock: the settings are one register too.

A mark or the settings another device made, taken in by an import, is passed on by this
device's next sync with its own clock (engine/sync/relay.py), as the reviews and undos an
import brings are.

An export of an older prep has none of these: its marks and settings are taken as they
always were (only where this database has none), and undos do not travel.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from prep.engine.store import devices as local
from prep.engine.store.reviewlog import from_us, to_us
from prep.engine.sync import relay
from prep.engine.timeutil import fmt, parse

if TYPE_CHECKING:
    from prep.engine.store import Store


def progress(store: Store) -> dict[str, Any]:
    """``store.dump()`` with the clocks and undos, read in one read transaction."""
    with read_transaction(store):
        data = store.dump()
        data["marks"] = marks(store, data["marks"])
        data["settings_clock"] = settings_clock(store, data["settings"])
        data["undone"] = list(undone(store))
        return data


@contextmanager
def read_transaction(store: Store) -> Iterator[None]:
    """One read transaction (unless the caller holds one): a rating committed meanwhile is
    in all that is read, or in none of it."""
    conn = store.conn
    own = not conn.in_transaction
    if own:
        conn.execute("BEGIN")
    try:
        yield
    finally:
        # (SQLite ends the transaction itself on some errors, out of memory among them: a
        # COMMIT then raised "no transaction is active" over the error that ended it)
        if own and conn.in_transaction:
            conn.execute("COMMIT")


def _names(store: Store) -> dict[int, str]:
    return dict(store.conn.execute("SELECT n, id FROM sync_devices"))


def marks(store: Store, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The marks ``rows`` (store.mark_rows()) with their clocks, the marks cleared since
    (with a clock, no mark now) added, in card order."""
    names = _names(store)
    by_card = {m["card_id"]: m for m in rows}
    clear = {"suspended": 0, "buried_until": None, "flagged": 0}
    out = []
    for cid, at, dev, stamp in store.conn.execute(
        "SELECT card_id, at, dev, seq FROM mark_clock ORDER BY card_id"
    ):
        mark = by_card.pop(cid, None) or {"card_id": cid, **clear}  # cleared: no mark now
        out.append({**mark, "at": fmt(from_us(at)), "device": names[dev], "stamp": stamp})
    out += [{**m, "at": None, "device": None, "stamp": None} for m in by_card.values()]
    return sorted(out, key=lambda m: m["card_id"])


def settings_clock(store: Store, settings: dict[str, Any] | None) -> dict[str, Any] | None:
    """The clock of the saved ``settings`` (None when none are saved, or unstamped)."""
    clock = store.conn.execute("SELECT value FROM meta WHERE key = 'settings_clock'").fetchone()
    if clock is None or settings is None:
        return None
    at, dev, stamp = json.loads(clock[0])
    return {"at": fmt(from_us(at)), "device": _names(store)[dev], "stamp": stamp}


def undone(store: Store) -> Iterator[dict[str, Any]]:
    """The undos (tombstones) as exported, in the order they were recorded."""
    for dev, seq, cid, at in store.conn.execute(
        "SELECT d.id, g.seq, g.card_id, g.at FROM review_graves g "
        "JOIN sync_devices d ON d.n = g.dev ORDER BY g.rowid"
    ):
        yield {"device": dev, "seq": seq, "card_id": cid, "at": fmt(from_us(at))}


def apply_undone(
    store: Store, rows: Iterable[dict[str, Any]], aliases: Mapping[str, str] | None = None
) -> tuple[int, set[str]]:
    """Record an export's undos here (engine/sync/merge.bury, as a sync does), recorded as
    this device's so that its next sync passes them on. Returns (the reviews held here they
    remove, the cards to replay)."""
    rows = list(rows)
    removed, cards = 0, set[str]()
    if not rows:  # (an older export's: nothing to load)
        return removed, cards
    from prep.engine.sync.merge import bury

    conn = store.conn
    me = local.device(conn)
    for row in rows:
        cid = (aliases or {}).get(row["card_id"], row["card_id"])
        rn = local.device_n(conn, row["device"])
        new, held = bury(conn, rn, row["seq"], cid, me, to_us(parse(row["at"])))
        if held is not None:
            removed += 1
            cards.add(held)
    return removed, cards


def apply_mark(store: Store, row: dict[str, Any]) -> bool:
    """Take the mark ``row`` (with its clock) when its clock is later than this card's
    (engine/sync/merge.apply_mark, as a sync does). Returns whether it was taken."""
    from prep.engine.sync.merge import apply_mark

    conn = store.conn
    buried = parse(row["buried_until"])
    entry = [
        "m",
        row["stamp"],
        row["card_id"],
        to_us(parse(row["at"])),
        int(row["suspended"]),
        None if buried is None else to_us(buried),
        int(row["flagged"]),
    ]
    dn = local.device_n(conn, row["device"])
    if not apply_mark(conn, row["device"], dn, entry):
        return False
    if dn != local.device(conn):  # another device's: this device's next sync passes it on
        relay.note_mark(conn, row["card_id"], (entry[3], dn, row["stamp"]))
    return True


def apply_settings(store: Store, settings: dict[str, Any], clock: dict[str, Any]) -> bool:
    """Take ``settings`` when ``clock`` is later than the settings' here (as a sync does)."""
    from prep.engine.sync.merge import apply_settings

    conn = store.conn
    entry = ["s", clock["stamp"], to_us(parse(clock["at"])), settings]
    dn = local.device_n(conn, clock["device"])
    if not apply_settings(conn, clock["device"], dn, entry):
        return False
    if dn != local.device(conn):  # (as a mark: passed on by the next sync)
        relay.note_settings(conn, (entry[2], dn, clock["stamp"]))
    return True
