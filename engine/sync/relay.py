"""Another device's registers taken in by `prep import`, passed on by this device's sync.

A mark and the study settings are last-writer-wins registers stamped (time, device, stamp).
A sync sends this device's own ("m", "s"); one received by a sync is in the folder already.
One taken in by an import (an export of another machine, A) is in no folder this device
shares: A's own sync would deliver it, but A may never sync there (A exports to B by file, B
syncs with C). So the import notes the clock it took (``note``), and the next sync passes
the register on with that clock (journal entries "M" and "S": the origin device id, then
the "m"/"s" fields), and every machine takes it by the same comparison as the origin's own
entry: a later clock wins, an equal one changes nothing. No loop (a register received by a
sync is never noted), no duplicate (the same clock arriving twice is taken once), and a
register changed here since (a later mark, or a later one received) is not passed on: the
note holds only while the clock it took is still the register's.

The notes live in ``meta.sync_relay`` (data, not schema): {"m": {card: [at, dev, stamp]},
"s": [at, dev, stamp] | null}, ``dev`` as numbered in this database's sync_devices.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from prep.engine.store import devices

_KEY = "sync_relay"
Clock = tuple[int, int, int]  # (at in microseconds, device number here, stamp)


def _load(conn: sqlite3.Connection) -> dict[str, Any]:
    notes = devices.json_meta(conn, _KEY) or {}
    return {"m": notes.get("m") or {}, "s": notes.get("s")}


def _save(conn: sqlite3.Connection, notes: dict[str, Any]) -> None:
    devices.set_json_meta(conn, _KEY, notes if notes["m"] or notes["s"] is not None else None)


def note_mark(conn: sqlite3.Connection, card_id: str, clock: Clock) -> None:
    """An import took card ``card_id``'s mark with ``clock`` (another device's)."""
    notes = _load(conn)
    notes["m"][card_id] = list(clock)
    _save(conn, notes)


def note_settings(conn: sqlite3.Connection, clock: Clock) -> None:
    """An import took the settings with ``clock`` (another device's)."""
    notes = _load(conn)
    notes["s"] = list(clock)
    _save(conn, notes)


def _settings_clock(conn: sqlite3.Connection) -> list[int] | None:
    clock = devices.json_meta(conn, "settings_clock")
    return None if clock is None else list(clock)


def mark_fields(suspended: Any, buried_until: Any, flagged: Any) -> list[Any]:
    """A mark's register as a journal entry ends it (``m`` and ``M``): SUSPENDED,
    BURIED_UNTIL_US, FLAGGED, from card_marks' columns (NULL where the mark was cleared)."""
    from prep.engine.store.reviewlog import to_us
    from prep.engine.timeutil import parse

    b = parse(buried_until)
    return [int(suspended or 0), None if b is None else to_us(b), int(flagged or 0)]


def entries(conn: sqlite3.Connection, settings: dict[str, Any]) -> list[list[Any]]:
    """The journal entries passing on what imports took and is still the register's value
    here: ["M", ORIGIN, STAMP, CARD, AT, SUSPENDED, BURIED_UNTIL_US, FLAGGED] and ["S",
    ORIGIN, STAMP, AT, SETTINGS] (``settings``: the study settings saved here)."""
    notes = _load(conn)
    if not notes["m"] and notes["s"] is None:
        return []
    names = dict(conn.execute("SELECT n, id FROM sync_devices"))
    out: list[list[Any]] = []
    for cid in sorted(notes["m"]):
        row = conn.execute(
            "SELECT c.at, c.dev, c.seq, m.suspended, m.buried_until, m.flagged "
            "FROM mark_clock c LEFT JOIN card_marks m ON m.card_id = c.card_id "
            "WHERE c.card_id = ?",
            (cid,),
        ).fetchone()
        if row is None or list(row[:3]) != notes["m"][cid]:
            continue  # changed here since (or the note is stale): not this register's value
        at, dev, stamp, susp, buried, flagged = row
        out.append(["M", names[dev], stamp, cid, at, *mark_fields(susp, buried, flagged)])
    if notes["s"] is not None and _settings_clock(conn) == notes["s"]:
        at, dev, stamp = notes["s"]
        out.append(["S", names[dev], stamp, at, settings])
    return out


def every_register(conn: sqlite3.Connection, settings: dict[str, Any], me: int) -> list[list[Any]]:
    """Every other device's mark and settings held here, passed on with their own clocks
    ("M", "S"), as a device's first journal in a folder new to it carries them (its own
    are its "m" and "s"); the same clock arriving twice is taken once."""
    names = dict(conn.execute("SELECT n, id FROM sync_devices"))
    out: list[list[Any]] = []
    for cid, at, dev, stamp, susp, buried, flagged in conn.execute(
        "SELECT c.card_id, c.at, c.dev, c.seq, m.suspended, m.buried_until, m.flagged "
        "FROM mark_clock c LEFT JOIN card_marks m ON m.card_id = c.card_id "
        "WHERE c.dev != ? ORDER BY c.card_id",
        (me,),
    ):
        out.append(["M", names[dev], stamp, cid, at, *mark_fields(susp, buried, flagged)])
    clock = _settings_clock(conn)
    if clock is not None and clock[1] != me:
        at, dev, stamp = clock
        out.append(["S", names[dev], stamp, at, settings])
    return out


def sent(conn: sqlite3.Connection, written: list[list[Any]]) -> None:
    """The entries ``written`` are in this device's journal now: their notes are dropped (a
    note taken meanwhile, with another clock, stays for the next sync); so is a note whose
    register changed since (nothing left to pass on)."""
    notes = _load(conn)
    if not notes["m"] and notes["s"] is None:
        return
    numbers = {dev_id: n for n, dev_id in conn.execute("SELECT n, id FROM sync_devices")}
    # (card, at, device, stamp) of each mark passed on
    done_m = {(e[3], e[4], numbers.get(e[1]), e[2]) for e in written if e[0] == "M"}
    for cid, (at, dev, stamp) in list(notes["m"].items()):
        row = conn.execute(
            "SELECT at, dev, seq FROM mark_clock WHERE card_id = ?", (cid,)
        ).fetchone()
        if (cid, at, dev, stamp) in done_m or row is None or list(row) != [at, dev, stamp]:
            del notes["m"][cid]
    if notes["s"] is not None:
        at, dev, stamp = notes["s"]
        done_s = any(
            e[0] == "S" and (e[3], numbers.get(e[1]), e[2]) == (at, dev, stamp) for e in written
        )
        if done_s or _settings_clock(conn) != notes["s"]:
            notes["s"] = None
    _save(conn, notes)
