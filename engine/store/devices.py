"""This installation's identity and stamps, kept in its database (schema v9).

Each database has one device (``meta.device``: its row in ``sync_devices``, whose ``id`` is a
random 16-hex-digit name). A review made here is (this device, its row id); a review received
from another device keeps that device's (device, sequence). A row id once used by a review of
this device is never used again by another one (``meta.review_floor`` remembers the highest
row id removed), so an id is never reused after an undo.
"""

from __future__ import annotations

import json
import re
import socket
import sqlite3
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from prep.engine.store.reviewlog import to_us


def _meta(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else row[0]


def json_meta(conn: sqlite3.Connection, key: str) -> Any:
    """A meta value stored as JSON (sync's marks: sync_sent, sync_file, ...), None when unset."""
    value = _meta(conn, key)
    return None if value is None else json.loads(value)


def set_json_meta(conn: sqlite3.Connection, key: str, value: Any) -> None:
    """json_meta's writer: ``value`` stored as compact JSON, or the key removed when None."""
    if value is None:
        conn.execute("DELETE FROM meta WHERE key = ?", (key,))
    else:
        _set_meta(conn, key, json.dumps(value, separators=(",", ":")))


def _set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def device(conn: sqlite3.Connection) -> int:
    """This installation's device (its number in sync_devices)."""
    return int(_meta(conn, "device") or 1)


def device_id(conn: sqlite3.Connection) -> str:
    return conn.execute("SELECT id FROM sync_devices WHERE n = ?", (device(conn),)).fetchone()[0]


MAX_NAME = 64  # a device name's length (the journal's header holds it)


def name(conn: sqlite3.Connection) -> str:
    """This device's name, as the other devices' summaries say it ("received 3 from
    laptop"): `prep config device_name NAME`, by default the host's name."""
    row = conn.execute("SELECT name FROM sync_devices WHERE n = ?", (device(conn),)).fetchone()
    return (row[0] if row else "") or socket.gethostname()[:MAX_NAME]


LABEL_ID = 4  # the fewest characters of a device id a label shows ("vm (a1b2)")


def labels(conn: sqlite3.Connection, given: dict[str, str] | None = None) -> dict[str, str]:
    """How sync's lines name each device known here, by id: its name (its id when it has
    none), made unique by ``labels_of``; ``given``: the names that journal files read now
    give devices (applied with them), over the ones stored, and devices not known here yet.
    This device's name is name()'s."""
    names = {dev_id: text for dev_id, text in conn.execute("SELECT id, name FROM sync_devices")}
    names.update(given or {})
    mine = device_id(conn)
    return labels_of({d: name(conn) if d == mine else (t or d) for d, t in names.items()})


# a name as a label that carries an id ends: "vm (a1b2)"
_LABELLED = re.compile(r"(.*) \(([0-9a-fA-F]+)\)", re.DOTALL)


def labels_of(names: dict[str, str]) -> dict[str, str]:
    """Each device's label, by id, from its name (``names``: id -> name): one label a device,
    naming it alone. A name only one device has is its label, unless it reads as another
    device's label (a device literally called "vm (a1b2)" beside a "vm" whose id starts
    a1b2); such a name, and a name several devices share (two machines both called "vm",
    two HOMEs of one host), is followed by the shortest start of the device's id that tells
    those of that name apart, at least LABEL_ID characters: "vm (a1b2)", "vm (77ff)",
    "vm (a1b2) (c3d4)". A label so made is never another's: its name and id prefix name one
    device (the last " (" of a label begins its id: an id has none)."""
    by_name: dict[str, list[str]] = {}
    for dev_id, said in names.items():
        by_name.setdefault(said, []).append(dev_id)

    def reads_as_another(said: str, own: str) -> bool:
        m = _LABELLED.fullmatch(said)
        if m is None:
            return False
        base, start = m.group(1), m.group(2).lower()
        return any(i != own and i.startswith(start) for i in by_name.get(base, ()))

    out: dict[str, str] = {}
    for said, ids in by_name.items():
        if len(ids) == 1 and not reads_as_another(said, ids[0]):
            out[ids[0]] = said
            continue
        k = LABEL_ID
        while len({i[:k] for i in ids}) < len(ids) and k < max(map(len, ids)):
            k += 1
        out.update((i, f"{said} ({i[:k]})") for i in ids)
    return out


def labelled(conn: sqlite3.Connection, counts: dict[str, int]) -> dict[str, int]:
    """``counts`` by device id, keyed by labels() instead (a device not known: its id)."""
    names = labels(conn) if counts else {}
    return {names.get(dev_id, dev_id): n for dev_id, n in counts.items()}


def name_problem(text: str) -> str | None:
    """Why ``text`` cannot be a device name, or None."""
    if not text.strip():
        return "a device name cannot be empty"
    if len(text) > MAX_NAME:
        return f"a device name has at most {MAX_NAME} characters, got {len(text)}"
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        return "a device name cannot hold control characters"
    return None


def set_name(conn: sqlite3.Connection, text: str) -> None:
    """Name this device (checked by name_problem first); sent with its next journal file."""
    conn.execute("UPDATE sync_devices SET name = ? WHERE n = ?", (text.strip(), device(conn)))


def device_n(conn: sqlite3.Connection, dev_id: str, name: str | None = None) -> int:
    """The number of the device called ``dev_id`` here (added when first seen)."""
    row = conn.execute("SELECT n FROM sync_devices WHERE id = ?", (dev_id,)).fetchone()
    if row is not None:
        return int(row[0])
    cur = conn.execute(
        "INSERT INTO sync_devices (id, name) VALUES (?, ?)", (dev_id, (name or "")[:64])
    )
    return int(cur.lastrowid or 0)  # (an INSERT always sets it)


def new_device(conn: sqlite3.Connection, resend_registers: bool = False) -> str:
    """Give this database a new device id (after a restore from a backup: the old id's
    entries in the sync folder are then another device's, received on the next sync, and
    nothing made from now on can take a sequence number the old id already used)."""
    import secrets  # (it loads OpenSSL: not on every start's way, engine/decks/digest.py)

    dev_id = secrets.token_hex(8)
    old = device(conn)
    sent = json.loads(_meta(conn, "sync_sent") or "{}")
    n = device_n(conn, dev_id, name(conn))
    _set_meta(conn, "device", str(n))
    # the new id has sent nothing; the old id's reviews and demo runs it had not sent are
    # passed on (as another device's, engine/sync/run.py), and the rest held here is in the
    # folder already
    top = conn.execute("SELECT coalesce(max(id), 0) FROM revlog").fetchone()[0]
    unsent = [old, int(sent.get("r", 0)), int(sent.get("d", 0))]  # (reviews, demo runs)
    marks = {"x": top, "o": unsent, "p": unrelayed(conn, old)}
    _set_meta(conn, "sync_sent", json.dumps(marks))
    # the new id has written no file, nor checked one (engine/sync/fork.py)
    conn.execute(
        "DELETE FROM meta WHERE key IN ('sync_file', 'sync_seen', 'sync_intent', 'sync_ctime', "
        "'sync_wrote')"
    )
    # (``resend_registers``: what the old id sent is not known to be in the folder, a sync
    # tool having put another copy's version of a file of it in place: its marks and
    # settings are all handed over, each with its own time)
    handed = {k: v for k, v in sent.items() if k not in "ms"} if resend_registers else sent
    _hand_over(conn, old, n, handed)
    return dev_id


def unrelayed(conn: sqlite3.Connection, me: int) -> list[list[Any]]:
    """[device id, seq] of the other devices' reviews held here that an import took in and
    no sync has passed on yet (rows past ``sync_sent``'s "x"; engine/sync/run.py), with
    those noted already ("p"): what a new id (a restore, a copy) still passes on by them."""
    value = _meta(conn, "sync_sent")
    sent = {} if value is None else json.loads(value)
    if value is not None and "x" not in sent:  # (synced by a prep before "x": all by sync)
        return []
    rows = conn.execute(
        "SELECT d.id, coalesce(r.seq, r.id) FROM reviews r JOIN sync_devices d ON d.n = r.dev "
        "WHERE r.id > ? AND r.dev != ? ORDER BY r.id",
        (int(sent.get("x", 0)), me),
    )
    return with_pending(sent.get("p", []), rows)


def with_pending(pending: list[list[Any]], reviews: Iterable[tuple[str, int]]) -> list[list[Any]]:
    """``pending`` (sync_sent's "p": [device id, seq] of the other devices' reviews to pass
    on) with ``reviews`` added, each once, in order (a set: linear in both, however many)."""
    out = [list(p) for p in pending]
    held = {(p[0], p[1]) for p in out}
    for dev_id, seq in reviews:
        if (dev_id, seq) not in held:
            held.add((dev_id, seq))
            out.append([dev_id, seq])
    return out


def _hand_over(conn: sqlite3.Connection, old: int, new: int, sent: dict) -> None:
    """The old id's marks, settings and undos it had not sent yet become the new id's, so its
    next sync sends them (each keeps its time: the last writer stays the last writer)."""
    for (cid,) in conn.execute(
        "SELECT card_id FROM mark_clock WHERE dev = ? AND seq > ? ORDER BY seq",
        (old, int(sent.get("m", 0))),
    ).fetchall():
        conn.execute(
            "UPDATE mark_clock SET dev = ?, seq = ? WHERE card_id = ?",
            (new, next_stamp(conn), cid),
        )
    clock = _meta(conn, "settings_clock")
    if clock is not None:
        at, dev, stamp = json.loads(clock)
        if dev == old and stamp > int(sent.get("s", 0)):
            _set_meta(conn, "settings_clock", json.dumps([at, new, next_stamp(conn)]))
    conn.execute(
        "UPDATE review_graves SET by_dev = ? WHERE by_dev = ? AND rowid > ?",
        (new, old, int(sent.get("g", 0))),
    )


# the parameters last encoded, a copy of them and their text: a session passes the same
# dict with every rating (Scheduler.replay_params), encoded once
_encoded: tuple[dict, dict, str] | None = None


def params_text(params: dict) -> str:
    """The parameters as sched_params stores them (sorted JSON). The same dict as last time,
    unchanged since, is not encoded again."""
    global _encoded
    seen = _encoded
    if seen is not None and seen[0] is params and seen[1] == params:
        return seen[2]
    text = json.dumps(params, sort_keys=True)
    _encoded = (params, json.loads(text), text)
    return text


def params_n(conn: sqlite3.Connection, params: dict) -> int:
    """The number of these scheduler parameters (scheduler.replay_params) in sched_params."""
    text = params_text(params)
    row = conn.execute("SELECT n FROM sched_params WHERE value = ?", (text,)).fetchone()
    if row is not None:
        return int(row[0])
    return int(conn.execute("INSERT INTO sched_params (value) VALUES (?)", (text,)).lastrowid or 0)


def bump_floor(conn: sqlite3.Connection) -> None:
    """Before review rows are removed: no later review of this device takes their ids."""
    top = conn.execute("SELECT max(id) FROM revlog").fetchone()[0] or 0
    if top > int(_meta(conn, "review_floor") or 0):
        _set_meta(conn, "review_floor", str(top))


def next_review_id(conn: sqlite3.Connection) -> int:
    top = conn.execute("SELECT max(id) FROM revlog").fetchone()[0] or 0
    return max(top, int(_meta(conn, "review_floor") or 0)) + 1


# this device's number, its id, the newest review's row id and the floor (review_stamp)
STAMP_SQL = (
    "WITH me(n) AS (SELECT coalesce(max(CAST(value AS INTEGER)), 1) FROM meta "
    "WHERE key = 'device') SELECT me.n, (SELECT id FROM sync_devices d WHERE d.n = me.n), "
    "coalesce((SELECT max(id) FROM revlog), 0), coalesce((SELECT CAST(value AS INTEGER) "
    "FROM meta WHERE key = 'review_floor'), 0) FROM me"
)


def stamp_of(row: tuple) -> tuple[int, str, int]:
    """review_stamp's answer from STAMP_SQL's four columns."""
    n, dev_id, top, floor = row
    return int(n), dev_id, max(int(top), int(floor)) + 1


def review_stamp(conn: sqlite3.Connection) -> tuple[int, str, int]:
    """(this device's number, its id, the row id the next review made here takes), read in one
    statement (device, device_id and next_review_id together: a rating asks for all three)."""
    return stamp_of(conn.execute(STAMP_SQL).fetchone())


def take_seq(conn: sqlite3.Connection, seq: int) -> None:
    """A review of this device's own arrives back with ``seq`` (an import of an export made
    here): no later review of this device takes that number."""
    if seq > int(_meta(conn, "review_floor") or 0):
        _set_meta(conn, "review_floor", str(seq))


def origin_of(conn: sqlite3.Connection, dev_id: str, seq: int) -> tuple[int, str] | None | bool:
    """The review (device ``dev_id``, ``seq``) here: (row id, card id) when held, True when
    undone (a tombstone), None when never seen."""
    row = conn.execute("SELECT n FROM sync_devices WHERE id = ?", (dev_id,)).fetchone()
    if row is None:
        return None
    n = row[0]
    found = (
        conn.execute(
            "SELECT id, card_id FROM reviews WHERE dev = ? AND seq = ?", (n, seq)
        ).fetchone()
        or conn.execute(
            "SELECT id, card_id FROM reviews WHERE id = ? AND dev = ? AND seq IS NULL", (seq, n)
        ).fetchone()
    )
    if found is not None:
        return int(found[0]), str(found[1])
    grave = conn.execute("SELECT 1 FROM review_graves WHERE dev = ? AND seq = ?", (n, seq))
    return True if grave.fetchone() is not None else None


def next_stamp(conn: sqlite3.Connection) -> int:
    """This device's next stamp number (marks and settings), inside the caller's transaction."""
    n = int(_meta(conn, "sync_stamp") or 0) + 1
    _set_meta(conn, "sync_stamp", str(n))
    return n


def stamp_mark(conn: sqlite3.Connection, card_id: str, at: datetime) -> None:
    """Stamp a mark set here: never before the card's last stamp (a clock set back), so the
    last writer here is the last writer everywhere."""
    row = conn.execute("SELECT at FROM mark_clock WHERE card_id = ?", (card_id,)).fetchone()
    at_us = to_us(at) if row is None else max(to_us(at), row[0] + 1)
    conn.execute(
        "INSERT INTO mark_clock (card_id, at, dev, seq) VALUES (?, ?, ?, ?) "
        "ON CONFLICT(card_id) DO UPDATE SET at = excluded.at, dev = excluded.dev, "
        "seq = excluded.seq",
        (card_id, at_us, device(conn), next_stamp(conn)),
    )


def stamp_settings(conn: sqlite3.Connection, at: datetime) -> None:
    """Stamp settings saved here, never before the last stamp (as stamp_mark)."""
    old = _meta(conn, "settings_clock")
    at_us = to_us(at) if old is None else max(to_us(at), json.loads(old)[0] + 1)
    _set_meta(conn, "settings_clock", json.dumps([at_us, device(conn), next_stamp(conn)]))


def bury_review(conn: sqlite3.Connection, review_id: int, card_id: str, at: datetime) -> None:
    """Record the undo of review row ``review_id`` (a tombstone that travels to the other
    devices), before the row is removed."""
    dev, seq, rat, rating = conn.execute(
        "SELECT dev, coalesce(seq, id), at, rating FROM revlog WHERE id = ?", (review_id,)
    ).fetchone()
    cur = conn.execute(
        "INSERT OR IGNORE INTO review_graves (dev, seq, card_id, by_dev, at) "
        "VALUES (?, ?, ?, ?, ?)",
        (dev, seq, card_id, device(conn), to_us(at)),
    )
    if cur.rowcount:
        note_undone(conn, dev, seq, (rat, rating))
    bump_floor(conn)


# UNDID_KEY:DEVICE N:SEQ = [time (us), rating] of a review undone here: what this device's
# tombstone of it says it undid (journal v4), so that a copy of this database tells the undo
# of a review both hold from the undo of one under the same number made since the copy
UNDID_KEY = "sync_undid"


def note_undone(conn: sqlite3.Connection, dev: int, seq: int, what: tuple[int, int]) -> None:
    """Keep what the tombstone of review (``dev``, ``seq``) undid: its (time, rating)."""
    set_json_meta(conn, f"{UNDID_KEY}:{dev}:{seq}", list(what))


def undone(conn: sqlite3.Connection, dev: int, seq: int) -> tuple[int, int] | None:
    """(time, rating) of the review the tombstone (``dev``, ``seq``) held here undid, when
    known (an undo made here since journal v4, or one received with it)."""
    value = json_meta(conn, f"{UNDID_KEY}:{dev}:{seq}")
    return None if value is None else (int(value[0]), int(value[1]))


def move_undone(conn: sqlite3.Connection, dev: int, seq: int, new: int) -> None:
    """The tombstone (``dev``, ``seq``) is now (``new``, ``seq``): what it undid moves too."""
    conn.execute(
        "UPDATE OR REPLACE meta SET key = ? WHERE key = ?",
        (f"{UNDID_KEY}:{new}:{seq}", f"{UNDID_KEY}:{dev}:{seq}"),
    )
