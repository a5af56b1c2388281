"""Applying other devices' journal entries to this database, by rules that cannot conflict.

- a review is added once (its id is its device and sequence number) unless a tombstone says
  it was undone; a tombstone removes it wherever it is; an id arriving with other content
  than the review held under it, or a review held arriving under a second id, is settled by
  engine/sync/replaced.py (the journal of the id's device as it stands decides);
- a card whose reviews changed is replayed: its surviving reviews in (time, device id,
  sequence) order, each through the scheduler it was made with (its stored parameters, which
  say how its fuzz is seeded: by the card and its history for reviews since round 12, as Anki
  seeds it, so every machine replaying the same log draws the same; by the review's own id,
  device and sequence, for those of rounds 7-11, the same wherever other reviews land in the
  log; scheduler.py's module doc). Only the reviews
  from the first changed one on are replayed and written again; the state of the reviews
  before it is what they stored;
- a mark and the study settings take the value with the latest (time, device id, stamp);
- a demo run is added once (known by its id, or by its name and time: an import took it in
  under the importing device's id);
- a mark, the settings or a demo run another device made, passed on by this journal's device
  ("M", "S", "D": an import took it in, or a restore gave this one a new id), is taken as
  its origin's own entry would be.

Every step only adds to a set or compares stamps, so applying the same entries in any order,
any number of times, gives the same database (tests/test_sync_merge.py holds it).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prep.engine.store import devices as local
from prep.engine.store.deckcache import _RECONCILED_KEY
from prep.engine.store.reviewlog import Chain, from_us, to_us
from prep.engine.study.scheduler import CardState, Scheduler
from prep.engine.sync import adopted, replaced
from prep.engine.sync.journal import Journal
from prep.engine.timeutil import fmt, utcnow

if TYPE_CHECKING:
    from prep.engine.store import Store


@dataclass
class Applied:
    reviews: int = 0
    undone: int = 0
    marks: int = 0
    settings: bool = False
    demo_runs: int = 0
    rescheduled: int = 0
    by_device: dict[str, int] = field(default_factory=dict)  # its label (labels()) -> reviews
    notes: list[str] = field(default_factory=list)  # what the user must know (replaced.py)

    @property
    def anything(self) -> bool:
        return bool(self.reviews or self.undone or self.marks or self.settings or self.demo_runs)


@dataclass(frozen=True)
class _Rev:
    """One review of a card as the replay orders it."""

    dev: int
    seq: int
    at: int  # microseconds since the epoch
    rating: int
    duration_ms: int | None
    params: int
    row: int | None = None  # its row id here (None: arriving now)


def _review_row(conn, dev: int, seq: int) -> tuple[int, str] | None:
    """(row id, card id) of the review (dev, seq) stored here."""
    row = conn.execute(
        "SELECT id, card_id FROM reviews WHERE dev = ? AND seq = ?", (dev, seq)
    ).fetchone()
    if row is None:
        row = conn.execute(
            "SELECT id, card_id FROM reviews WHERE id = ? AND dev = ? AND seq IS NULL", (seq, dev)
        ).fetchone()
    return row


def _buried(conn, dev: int, seq: int) -> bool:
    return (
        conn.execute("SELECT 1 FROM review_graves WHERE dev = ? AND seq = ?", (dev, seq)).fetchone()
        is not None
    )


def _device_ids(conn) -> dict[int, str]:
    return dict(conn.execute("SELECT n, id FROM sync_devices"))


def bury(
    conn, rn: int, rseq: int, cid: str, by: int, at: int, what: tuple[int, int] | None = None
) -> tuple[bool, str | None]:
    """Record the undo of review (device ``rn``, ``rseq``) of card ``cid`` (a tombstone; ``by``:
    the device it came from, ``at``: when, in microseconds; ``what``: the review's time and
    rating, when the tombstone names them), as a sync or an import of an export brings it.
    Returns (whether it is new here, the card of the review it removes here when one is
    held: that card is to be replayed without it)."""
    cur = conn.execute(
        "INSERT OR IGNORE INTO review_graves (dev, seq, card_id, by_dev, at) "
        "VALUES (?, ?, ?, ?, ?)",
        (rn, rseq, cid, by, at),
    )
    if not cur.rowcount:
        return False, None
    if rn == local.device(conn):  # an undo of this id's review made elsewhere (a copy's):
        local.take_seq(conn, rseq)  # no review made here later takes its number
    if what is not None:
        local.note_undone(conn, rn, rseq, what)
    found = _review_row(conn, rn, rseq)
    return True, None if found is None else found[1]


def replay_cards(store: Store, cids: set[str]) -> int:
    """Replay each of ``cids`` from its surviving reviews (a tombstone reached it); returns
    the cards rescheduled."""
    devices = _device_ids(store.conn)
    scheds: dict[int, Scheduler] = {}
    return sum(any(replay(store, cid, [], devices, scheds)) for cid in sorted(cids))


def apply(store: Store, journals: list[Journal], now: datetime | None = None) -> Applied:
    """Apply ``journals`` (read and checked) inside the caller's transaction."""
    conn = store.conn
    now = now or utcnow()
    out = Applied()
    batch = _Batch(store, out, journals[0].path.parent.parent if journals else None)
    incoming, affected, touched = batch.incoming, batch.affected, batch.touched
    for j in journals:
        jn = local.device_n(conn, j.device, j.name)
        pmap = {key: local.params_n(conn, p) for key, p in j.params.items()}
        for e in j.entries:
            kind = e[0]
            if kind in ("r", "R"):
                batch.review(j, jn, e, pmap)
            elif kind == "u":
                _, rdev, rseq, cid, at, *what = e  # (v4: the review it undid)
                rn = local.device_n(conn, rdev)
                named = (what[0], what[1]) if what else None
                new, held = bury(conn, rn, rseq, cid, jn, at, named)
                if new:
                    out.undone += 1
                    if held is not None:
                        affected.add(held)
                        touched.add(held)
                    for ccid, revs in incoming.items():
                        if revs.pop((rn, rseq), None) is not None:
                            affected.add(ccid)
            elif kind == "m":
                out.marks += apply_mark(conn, j.device, jn, e)
            elif kind == "s":
                out.settings |= apply_settings(conn, j.device, jn, e)
            elif kind == "d":
                out.demo_runs += _apply_run(conn, jn, e)
            elif kind in ("M", "S", "D"):  # another device's, passed on (engine/sync/relay.py)
                origin, own = e[1], [kind.lower(), *e[2:]]
                on = local.device_n(conn, origin)
                if kind == "M":
                    out.marks += apply_mark(conn, origin, on, own)
                elif kind == "S":
                    out.settings |= apply_settings(conn, origin, on, own)
                else:
                    out.demo_runs += _apply_run(conn, on, own)
        (done,) = conn.execute("SELECT applied FROM sync_devices WHERE n = ?", (jn,)).fetchone()
        # (a file applied before and read again, or one set aside, names the device and its
        # last file only when it is the newest applied: run._new_series compares that one)
        newest = j.restart or (not j.aside and j.number >= done)
        conn.execute(
            "UPDATE sync_devices SET applied = ?, name = CASE WHEN ? THEN ? ELSE name END, "
            "wrote_at = CASE WHEN ? THEN ? ELSE wrote_at END, applied_at = ? WHERE n = ?",
            (
                j.number if j.restart else max(done, j.number),
                newest,
                j.name,
                newest,
                j.written_at,
                fmt(now),
                jn,
            ),
        )
    devices = _device_ids(conn)
    scheds: dict[int, Scheduler] = {}
    new_cards = False
    for cid in sorted(affected):
        card_revs = list(incoming.get(cid, {}).values())
        done = None if cid in touched else _append(store, cid, card_revs, devices, scheds)
        changed, created = (
            done
            if done is not None
            else replay(
                store,
                cid,
                card_revs,
                devices,
                scheds,
                batch.redo.get(cid),
                batch.base.get(cid, _NO),
                batch.logs.get(cid),
            )
        )
        out.rescheduled += bool(changed or created)  # a card first scheduled here counts too
        new_cards |= created
    if new_cards:  # cards new here: the next open checks them against the decks
        conn.execute("DELETE FROM meta WHERE key = ?", (_RECONCILED_KEY,))
    replaced.settle_aside(conn)
    out.notes, out.by_device = batch.clashes.lines(), local.labelled(conn, out.by_device)
    return out


class _Batch:
    """The reviews arriving in one apply, by card, and what they change."""

    def __init__(self, store: Store, out: Applied, root: Path | None) -> None:
        self.store, self.conn, self.out = store, store.conn, out
        self.incoming: dict[str, dict[tuple[int, int], _Rev]] = defaultdict(dict)
        self.pending: dict[tuple[int, int], str] = {}  # (device, seq) arriving -> its card
        self.affected: set[str] = set()
        self.touched: set[str] = set()  # cards replayed from the start of the change
        self.redo: dict[str, set[int]] = {}  # cards a displaced review left: rows written again
        # cards whose first review was displaced: the state their history begins from
        self.base: dict[str, CardState | None] = {}
        # their logs as read before a review of theirs was removed: the rows after a removed
        # one refer to its state (the first one's successor has nothing left to refer to)
        self.logs: dict[str, list] = {}
        self.clashes = replaced.Clashes(self.conn, root)
        # (card, time, rating) -> (device, seq, its journal) of the reviews arriving now: one
        # taken in by a device (adopted.py) and the review itself may arrive together
        self.contents: dict[tuple, tuple[int, int, str, Journal]] = {}

    def review(self, j: Journal, jn: int, e: list, pmap: dict[str, int]) -> None:
        """A review entry ("r", or "R": another device's passed on by this journal's)."""
        conn = self.conn
        took_in = None  # (a review set aside that this one's device took in: adopted.py)
        if e[0] == "r":
            _, seq, cid, rating, at, dur, pk = e[:7]
            dn, origin = jn, j.device
            if len(e) == adopted.FIELDS:
                took_in = e[7:]
                adopted.note(conn, origin, seq, took_in)
        else:
            _, origin, seq, cid, rating, at, dur, pk = e
            dn = local.device_n(conn, origin)
        was = self.pending.get((dn, seq))
        prev = None if was is None else self.incoming[was].get((dn, seq))  # (None: undone)
        if was is not None and prev is not None:  # the same id earlier in these journals
            if e[0] != "r" or (was, prev.at, prev.rating) == (cid, at, rating):
                return  # (passed on by another device: its own journal's is taken)
            # a later file of its own journal gives the id to another review (two copies
            # wrote under one id): the later one is the journal's (as fork.py counts it)
            del self.incoming[was][(dn, seq)]
            replaced.keep(
                conn, origin, seq, was, prev.rating, prev.at, prev.duration_ms, prev.params
            )
            self.clashes.count(self.clashes.replaced, j.device)
            self._count(j, -1)
        if _buried(conn, dn, seq):
            return
        if not self._one_of((cid, at, rating), (dn, origin, seq, took_in)):
            return
        verdict = self.clashes.judge(e[0] == "r", dn, origin, seq, cid, rating, at, took_in)
        if verdict.drop is not None:  # a held review displaced (engine/sync/replaced.py)
            self._base(verdict.drop)
            held = _drop(conn, verdict.drop, verdict.aside)
            self.affected.add(held)
            self.touched.add(held)
            rows = conn.execute("SELECT id FROM reviews WHERE card_id = ?", (held,))
            self.redo[held] = {r for (r,) in rows}
        if verdict.extra is not None:  # the review its journal holds under the freed id
            xdn, xseq, xcid, *rest = verdict.extra
            if not (_review_row(conn, xdn, xseq) or _buried(conn, xdn, xseq)):
                xrating, xat, xdur, xpn = rest
                self.incoming[xcid][(xdn, xseq)] = _Rev(xdn, xseq, xat, xrating, xdur, xpn)
                self.pending[(xdn, xseq)] = xcid
                self.affected.add(xcid)
        if verdict.take:
            self.incoming[cid][(dn, seq)] = _Rev(dn, seq, at, rating, dur, pmap[pk])
            self.pending[(dn, seq)] = cid
            self.contents[(cid, at, rating)] = (dn, seq, origin, j)
            self.affected.add(cid)
            self._count(j, 1)

    def _one_of(self, content: tuple, arriving: tuple) -> bool:
        """Whether a review arriving is taken when its card, time and rating arrived now under
        another id (adopted.rule: one of them may stand for the other, or stand down)."""
        other = self.contents.get(content)
        dn, dev_id, seq, took_in = arriving
        if other is None or other[:2] == (dn, seq):
            return True
        odn, oseq, oid, oj = other
        took = adopted.rule(adopted.known(self.conn), (dev_id, seq, took_in), (oid, oseq))
        if took:
            del self.incoming[content[0]][(odn, oseq)], self.pending[(odn, oseq)]
            del self.contents[content]
            self._count(oj, -1)
        return took is not False

    def _base(self, row: int) -> None:
        """Before held review ``row`` is removed: when it is its card's first, the state its
        card's history begins from is the one before it (the next review's stored "before"
        is this one's "after"); replay() starts there."""
        (cid,) = self.conn.execute("SELECT card_id FROM reviews WHERE id = ?", (row,)).fetchone()
        if cid not in self.logs:
            self.logs[cid] = self.store._card_log(cid)
        log = self.logs[cid]
        if cid not in self.base and log and log[0][0].id == row:
            self.base[cid] = log[0][0].prev

    def _count(self, j: Journal, n: int) -> None:
        dev = j.device  # (by id: two devices of one name are two; labelled once applied)
        self.out.reviews += n
        self.out.by_device[dev] = self.out.by_device.get(dev, 0) + n
        if not self.out.by_device[dev]:
            del self.out.by_device[dev]


def _drop(conn, row: int, aside: bool) -> str:
    """Remove held review row ``row`` (another review took its id, or it arrived under its
    own; ``aside``: kept in meta until held again); returns its card."""
    (cid,) = conn.execute("SELECT card_id FROM reviews WHERE id = ?", (row,)).fetchone()
    if aside:
        replaced.set_aside(conn, row)
    local.bump_floor(conn)
    conn.execute("DELETE FROM revlog WHERE id = ?", (row,))
    return cid


def _newer(conn, theirs: tuple[int, str, int], clock: tuple[int, int, int] | None) -> bool:
    if clock is None:
        return True
    at, dev, seq = clock
    dev_id = conn.execute("SELECT id FROM sync_devices WHERE n = ?", (dev,)).fetchone()
    return theirs > (at, dev_id[0] if dev_id else "", seq)


def apply_mark(conn, dev_id: str, dn: int, e: list) -> int:
    _, stamp, cid, at, suspended, buried_us, flagged = e
    clock = conn.execute("SELECT at, dev, seq FROM mark_clock WHERE card_id = ?", (cid,)).fetchone()
    if not _newer(conn, (at, dev_id, stamp), clock):
        return 0
    if not (suspended or flagged or buried_us is not None):
        conn.execute("DELETE FROM card_marks WHERE card_id = ?", (cid,))
    else:
        buried = None if buried_us is None else fmt(from_us(buried_us))
        conn.execute(
            "INSERT INTO card_marks (card_id, suspended, buried_until, flagged) "
            "VALUES (?, ?, ?, ?) ON CONFLICT(card_id) DO UPDATE SET "
            "suspended = excluded.suspended, buried_until = excluded.buried_until, "
            "flagged = excluded.flagged",
            (cid, suspended, buried, flagged),
        )
    conn.execute(
        "INSERT INTO mark_clock (card_id, at, dev, seq) VALUES (?, ?, ?, ?) "
        "ON CONFLICT(card_id) DO UPDATE SET at = excluded.at, dev = excluded.dev, "
        "seq = excluded.seq",
        (cid, at, dn, stamp),
    )
    return 1


def apply_settings(conn, dev_id: str, dn: int, e: list) -> bool:
    from prep.engine.study.scheduler import Settings

    _, stamp, at, value = e
    row = conn.execute("SELECT value FROM meta WHERE key = 'settings_clock'").fetchone()
    clock = tuple(json.loads(row[0])) if row else None
    if not _newer(conn, (at, dev_id, stamp), clock):  # type: ignore[arg-type]
        return False
    settings = Settings.from_dict(value).validated()
    conn.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES ('settings', ?)",
        (json.dumps(settings.to_dict()),),
    )
    conn.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES ('settings_clock', ?)",
        (json.dumps([at, dn, stamp]),),
    )
    return True


_RUN_COLUMNS = (
    "name",
    "device",
    "device_name",
    "dtype",
    "scale",
    "seed",
    "passed",
    "seconds",
    "metrics",
    "ran_at",
)


def _apply_run(conn, dn: int, e: list) -> int:
    _, seq, run = e
    exists = conn.execute(
        "SELECT 1 FROM demo_runs WHERE dev = ? AND (seq = ? OR (seq IS NULL AND id = ?))",
        (dn, seq, seq),
    ).fetchone()
    if exists:
        return 0
    # the same run under another id: `prep import` takes a run in as this device's (an export
    # does not carry a run's id), and knows it by its name and time; so does a sync
    same = conn.execute(
        "SELECT 1 FROM demo_runs WHERE name = ? AND ran_at = ? AND dev != ? LIMIT 1",
        (run["name"], run["ran_at"], dn),
    ).fetchone()
    if same:
        return 0
    values = [run[c] for c in _RUN_COLUMNS]
    values[_RUN_COLUMNS.index("metrics")] = json.dumps(run["metrics"])
    values[_RUN_COLUMNS.index("passed")] = int(run["passed"])
    conn.execute(
        f"INSERT INTO demo_runs ({', '.join(_RUN_COLUMNS)}, dev, seq) "
        f"VALUES ({', '.join('?' * len(_RUN_COLUMNS))}, ?, ?)",
        [*values, dn, seq],
    )
    return 1


def _scheduler(conn, n: int, cache: dict[int, Scheduler]) -> Scheduler:
    if n not in cache:
        (text,) = conn.execute("SELECT value FROM sched_params WHERE n = ?", (n,)).fetchone()
        cache[n] = Scheduler.from_replay_params(json.loads(text))
    return cache[n]


def _deck_of(conn, cid: str) -> tuple[str, str, bool] | None:
    """(deck, content hash) of a card in the loaded decks (the deck cache), or None."""
    row = conn.execute(
        "SELECT dc.deck, dc.chash FROM deck_cards dc JOIN deck_files f ON f.fid = dc.key >> 32 "
        "WHERE dc.id = ? AND f.ord IS NOT NULL AND dc.dup = 0 LIMIT 1",
        (cid,),
    ).fetchone()
    return None if row is None else (row[0], row[1], False)


def _append(
    store: Store,
    cid: str,
    incoming: list[_Rev],
    devices: dict[int, str],
    scheds: dict[int, Scheduler],
) -> tuple[bool, bool] | None:
    """The usual case, without reading the card's log: every review arriving comes after the
    card's last one here, so the replay starts from the card's stored state. None when that
    is not the case (replay() then does it all)."""
    conn = store.conn
    live = sorted(incoming, key=lambda r: (r.at, devices[r.dev], r.seq))
    if not live:
        return None
    last = conn.execute(
        "SELECT dev, coalesce(seq, id), at FROM reviews WHERE card_id = ? ORDER BY id DESC LIMIT 1",
        (cid,),
    ).fetchone()
    if last is None:
        return None
    current = store.card(cid)
    if (
        current is None
        or current.last_review is None
        or to_us(current.last_review) != last[2]
        or (live[0].at, devices[live[0].dev], live[0].seq) <= (last[2], devices[last[0]], last[1])
    ):
        return None
    final = _write(store, cid, current, live, Chain(), scheds, devices)
    return _schedule(current) != _schedule(final), False


def _schedule(s: CardState) -> tuple:
    """What a review changes of a card (a change of any is "rescheduled" in the summary)."""
    return (s.state, s.step, s.stability, s.difficulty, s.due, s.last_review, s.reps, s.lapses)


def _write(
    store: Store,
    cid: str,
    state: CardState,
    revs: list[_Rev],
    chain: Chain,
    scheds: dict,
    devices: dict[int, str],
) -> CardState:
    """Rate ``state`` by each of ``revs`` in turn, writing each review; returns the last state.
    (A chain that does not know the state before writes the first review's prev in full.)"""
    conn = store.conn
    me = local.device(conn)
    for r in revs:
        if r.dev == me and r.seq is not None:
            local.take_seq(conn, r.seq)  # one of ours coming back: its number stays taken
        prev = None if state.is_new else state
        prev_state = None if prev is None else prev.state
        key = f"{devices[r.dev]}:{r.seq}"  # (seeds the fuzz of a review of "fuzz_by": "review")
        new = _scheduler(conn, r.params, scheds).review(state, r.rating, from_us(r.at), key).state
        pblob, nblob = chain.encode(cid, prev_state, prev, new)
        conn.execute(
            "INSERT INTO reviews (card_id, rating, at, duration_ms, prev_state, prev, next, "
            "dev, seq, params) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (cid, r.rating, r.at, r.duration_ms, prev_state, pblob, nblob, r.dev, r.seq, r.params),
        )
        state = new
    store.put_card(state)
    # (schema v14) the row is its newest review's state: the next rating here stores the
    # state before it as "that review's next" (NULL), not in full
    conn.execute(
        "UPDATE cards SET logged = (SELECT max(id) FROM revlog WHERE cn = "
        "(SELECT n FROM review_cards WHERE id = ?)) WHERE id = ?",
        (cid, cid),
    )
    return state


_NO = object()  # (replay's ``base``: none given)


def replay(
    store: Store,
    cid: str,
    incoming: list[_Rev],
    devices: dict[int, str],
    scheds: dict[int, Scheduler],
    redo: set[int] | None = None,
    base: Any = _NO,
    before: list | None = None,
) -> tuple[bool, bool]:
    """Merge ``incoming`` into card ``cid``'s log (dropping undone reviews) and replay it
    from the first review that changed (or whose row is in ``redo``: its id changed, and
    with it its fuzz; ``base``, unless ``_NO``: the state its history begins from, its first
    review removed; ``before``: its log as read before reviews of it were removed, whose
    rows left are replayed). Returns (its due time changed, the card is new here)."""
    conn = store.conn
    meta = {
        rid: (dev, seq, params)
        for rid, dev, seq, params in conn.execute(
            "SELECT id, dev, coalesce(seq, id), params FROM reviews WHERE card_id = ?", (cid,)
        )
    }
    # (Review, prev_state), in row order
    log = store._card_log(cid) if before is None else [x for x in before if x[0].id in meta]
    old = []
    for review, _ps in log:
        dev, seq, params = meta[review.id]
        at = to_us(review.reviewed_at)
        old.append(_Rev(dev, seq, at, review.rating, review.duration_ms, params, review.id))
    survivors = [r for r in old if not _buried(conn, r.dev, r.seq)]
    merged = sorted(
        survivors + [r for r in incoming if not _buried(conn, r.dev, r.seq)],
        key=lambda r: (r.at, devices[r.dev], r.seq),
    )
    k = 0
    redo = redo or set()
    while k < len(old) and k < len(merged) and old[k] == merged[k] and old[k].row not in redo:
        k += 1
    if k == len(old) == len(merged):
        return False, False
    current = store.card(cid)
    if current is not None:
        deck, chash, removed = current.deck, current.content_hash, current.removed
    else:
        found = _deck_of(conn, cid)
        deck, chash, removed = found if found is not None else ("", "", True)
    if k > 0:
        state = log[k - 1][0].next
    elif base is not _NO and base is not None:
        state = base
    elif log and base is _NO and log[0][0].prev is not None and merged and merged[0] == old[0]:
        state = log[0][0].prev  # a history that began from an imported state
    else:
        state = CardState(id=cid, deck=deck, content_hash=chash)
    local.bump_floor(conn)
    conn.executemany("DELETE FROM reviews WHERE id = ?", [(r.row,) for r in old[k:]])
    chain = Chain()
    if k > 0:
        chain.last[cid] = state
    from dataclasses import replace

    changed = current.changed if current is not None else False

    def flagged(s: CardState) -> CardState:  # the card's flags now (deck, text, membership)
        return replace(s, deck=deck, content_hash=chash, removed=removed, changed=changed)

    if merged[k:] and isinstance(state, CardState):
        state = flagged(state)  # reviews written now carry the card's flags, as ratings' do
    state = _write(store, cid, state, merged[k:], chain, scheds, devices)
    if not merged:
        conn.execute("DELETE FROM cards WHERE id = ?", (cid,))
        return current is not None, False
    final = flagged(state)
    if final != state:  # (a row unlike its newest review's state is not ``logged``)
        store.put_card(final)
    return current is not None and _schedule(current) != _schedule(final), current is None
