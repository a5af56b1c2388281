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

An export of an older prep has none of these: its marks and settings are taken as they
always were (only where this database has none), and undos do not travel.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from prep.engine.store import devices as local
from prep.engine.store.reviewlog import from_us, to_us
from prep.engine.timeutil import fmt, parse

if TYPE_CHECKING:
    from prep.engine.store import Store


def progress(store: Store) -> dict[str, Any]:
    """``store.dump()`` with the clocks and undos, read in one read transaction."""
    conn = store.conn
    own = not conn.in_transaction
    if own:
        conn.execute("BEGIN")
    try:
        data = store.dump()
        names = dict(conn.execute("SELECT n, id FROM sync_devices"))
        marks = {m["card_id"]: m for m in data["marks"]}
        clear = {"suspended": 0, "buried_until": None, "flagged": 0}
        rows = []
        for cid, at, dev, stamp in conn.execute(
            "SELECT card_id, at, dev, seq FROM mark_clock ORDER BY card_id"
        ):
            mark = marks.pop(cid, None) or {"card_id": cid, **clear}  # cleared: no mark now
            rows.append({**mark, "at": fmt(from_us(at)), "device": names[dev], "stamp": stamp})
        rows += [{**m, "at": None, "device": None, "stamp": None} for m in marks.values()]
        data["marks"] = sorted(rows, key=lambda m: m["card_id"])
        clock = conn.execute("SELECT value FROM meta WHERE key = 'settings_clock'").fetchone()
        data["settings_clock"] = None
        if clock is not None and data["settings"] is not None:
            at, dev, stamp = json.loads(clock[0])
            data["settings_clock"] = {"at": fmt(from_us(at)), "device": names[dev], "stamp": stamp}
        data["undone"] = [
            {"device": dev, "seq": seq, "card_id": cid, "at": fmt(from_us(at))}
            for dev, seq, cid, at in conn.execute(
                "SELECT d.id, g.seq, g.card_id, g.at FROM review_graves g "
                "JOIN sync_devices d ON d.n = g.dev ORDER BY g.rowid"
            )
        ]
        return data
    finally:
        if own:
            conn.execute("COMMIT")


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
    return bool(apply_mark(conn, row["device"], local.device_n(conn, row["device"]), entry))


def apply_settings(store: Store, settings: dict[str, Any], clock: dict[str, Any]) -> bool:
    """Take ``settings`` when ``clock`` is later than the settings' here (as a sync does)."""
    from prep.engine.sync.merge import apply_settings

    conn = store.conn
    entry = ["s", clock["stamp"], to_us(parse(clock["at"])), settings]
    return apply_settings(conn, clock["device"], local.device_n(conn, clock["device"]), entry)
