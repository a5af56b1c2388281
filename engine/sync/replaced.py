"""One review id with two contents, one review under two ids: what a sync tool that replaces a
file by another version of it (Syncthing-like, peer to peer) leaves behind.

Two copies of one database (one device id, D) that both wrote their journal file N hold two
versions of it; the tool keeps one everywhere. A third device C may have applied the losing
version first: C then holds review (D, k) as the loser made it. When the winning version
arrives (the file replaced: engine/sync/applied.py has it read again, the last file applied
or an older one), the same id comes with other content; later the losing copy finds the
winner's file in its folder, takes a new id (engine/sync/fork.py) and sends its review again
as (N, k). Skipping the first silently and taking the second made C hold the loser's review
twice and miss the winner's.

The rules (the same on every device, whatever arrives first):

- a review's id belongs to the journal of its device as the folder holds it now: an incoming
  review from that device's own journal ("r") with an id held here with other content (time,
  rating) replaces the one held, which is set aside (``ASIDE_KEY``, data in ``meta``) until
  its copy sends it again under its new id; a review passed on by another device ("R") that
  disagrees with the one held is taken only when its device's journal holds it as it is;
- a review arriving whose content (card, time to the microsecond, rating) is held here under
  another id whose device's journal as it stands does not hold it (another review under that
  id, or none and the arriving one has its number: a copy that takes a new id keeps its
  reviews' numbers) is that review displaced: it is held once, under the arriving id, and
  the review that journal does hold under the old id is taken too. Otherwise both are kept
  (two reviews made at the same microsecond).

Each case is said in one line (``Clashes.lines``). Nothing is deleted that is not held
again: a review set aside stays in the database until the same review is held.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prep.engine.store import devices as local
from prep.engine.study.present import count
from prep.engine.sync import adopted, journal

# {"DEVICE:SEQ": [card, rating, at_us, duration_ms, params, set aside at (us, this clock)]}
# (a review aside for long is taken as this device's own: engine/sync/adopted.py)
ASIDE_KEY = "sync_aside"


@dataclass
class Verdict:
    take: bool  # apply the arriving review
    drop: int | None = None  # the row id of a held review to remove (its card replayed in full)
    aside: bool = False  # ... and keep that one aside (nothing else holds it yet)
    # (device n, seq, card, rating, at, duration, params n): the review the device's journal
    # holds under the id of a held review that was displaced, to take as well
    extra: tuple | None = None


@dataclass
class Clashes:
    conn: Any
    root: Path | None
    me: int = 0
    _auth: dict[str, dict[int, tuple] | None] = field(default_factory=dict)
    _folders: dict[str, Path] | None = None  # every device's folder, as the applier reads it
    replaced: dict[str, int] = field(default_factory=dict)  # device id -> reviews
    moved: dict[str, int] = field(default_factory=dict)
    refused: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.me = local.device(self.conn)

    def authority(self, dev_id: str) -> dict[int, tuple] | None:
        """seq -> (card, rating, at, duration, params) of the reviews in ``dev_id``'s own
        journal as the folder holds it now; None when its folder is not here or a file of it
        cannot be read (nothing is then known against what is held)."""
        if dev_id not in self._auth:
            if self._folders is None and self.root is not None:
                from prep.engine.sync.folders import device_folders  # (it imports this module)

                # (a folder that is a link is read as the applier reads it: sync14)
                self._folders = device_folders(self.root)
            folder = (self._folders or {}).get(dev_id)
            self._auth[dev_id] = None if folder is None else _journal_reviews(folder, dev_id)
        return self._auth[dev_id]

    def judge(
        self,
        own: bool,
        dn: int,
        dev_id: str,
        seq: int,
        cid: str,
        rating: int,
        at: int,
        origin: list[Any] | None = None,
    ) -> Verdict:
        """Review (``dn``/``dev_id``, ``seq``) of card ``cid`` arriving (``own``: from its
        device's own journal; ``origin``: the review set aside it took in, adopted.py); what
        to do with it."""
        conn = self.conn
        held = _held(conn, dn, seq)
        who = _dev_id(conn, dn)
        if held is not None:
            rid, hat, hrating = held
            if (hat, hrating) == (at, rating):
                return Verdict(False)
            if dn != self.me and (own or _holds(self.authority(dev_id), seq, cid, rating, at)):
                _add(self.replaced, who)
                return Verdict(True, drop=rid, aside=True)
            _add(self.refused, who)
            return Verdict(False)
        twin = conn.execute(
            "SELECT r.id, r.dev, coalesce(r.seq, r.id) FROM revlog r JOIN review_cards c "
            "ON c.n = r.cn WHERE r.at = ? AND r.rating = ? AND c.id = ? AND NOT "
            "(r.dev = ? AND coalesce(r.seq, r.id) = ?) LIMIT 1",
            (at, rating, cid, dn, seq),
        ).fetchone()
        if twin is None:
            return Verdict(True)
        trid, tdn, tseq = twin
        tid = conn.execute("SELECT id FROM sync_devices WHERE n = ?", (tdn,)).fetchone()[0]
        # a review set aside and taken in by a device, and that review itself (adopted.py)
        took = adopted.rule(adopted.known(conn), (dev_id, seq, origin), (tid, tseq))
        if took is not None:
            return Verdict(True, drop=trid) if took else Verdict(False)
        auth = self.authority(tid)
        # displaced: its journal holds another review under its id, or none and the one
        # arriving has its number (a copy that took a new id keeps its reviews' numbers)
        if (
            tdn == self.me
            or auth is None
            or _holds(auth, tseq, cid, rating, at)
            or (tseq not in auth and tseq != seq)
        ):
            # two reviews made at the same microsecond (or nothing known against the one
            # held): each is kept, as the grow-only set keeps every id
            return Verdict(True)
        # the held one's id is not its journal's (a file replaced): it was displaced
        _add(self.moved, _dev_id(conn, tdn))
        other = auth.get(tseq)
        extra = None
        if other is not None:
            ocid, orating, oat, odur, params = other
            extra = (tdn, tseq, ocid, orating, oat, odur, local.params_n(conn, params))
        return Verdict(True, drop=trid, extra=extra)

    @staticmethod
    def count(counts: dict[str, int], name: str) -> None:
        _add(counts, name)

    def lines(self) -> list[str]:
        """What the user must know, one line a case."""
        out = []
        any_ = self.replaced or self.moved or self.refused
        said = local.labels(self.conn) if any_ else {}  # (two devices of one name told apart)
        for dev, n in self.replaced.items():
            name = said.get(dev, dev)
            out.append(
                f"{count(n, 'review')} of {name} arrived with ids held here for other "
                "reviews (a journal file replaced by another copy's version): its journal's "
                "taken, the ones held set aside until their copy sends them again"
            )
        for dev, n in self.moved.items():
            name = said.get(dev, dev)
            out.append(
                f"{count(n, 'review')} held as {name}'s came back under the new id of the "
                f"copy that made them (a journal file of {name} was replaced): held once"
            )
        for dev, n in self.refused.items():
            name = said.get(dev, dev)
            out.append(
                f"{count(n, 'review')} passed on for {name} differ from the ones held under "
                "their ids (and from its journal): not taken"
            )
        return out


def _add(counts: dict[str, int], name: str) -> None:
    counts[name] = counts.get(name, 0) + 1


def _dev_id(conn, dn: int) -> str:
    """Device ``dn``'s id (Clashes.lines() says its label)."""
    row = conn.execute("SELECT id FROM sync_devices WHERE n = ?", (dn,)).fetchone()
    return row[0] if row else "?"


def _held(conn, dn: int, seq: int) -> tuple[int, int, int] | None:
    """(row id, time, rating) of review (``dn``, ``seq``) held here."""
    return conn.execute(
        "SELECT id, at, rating FROM revlog WHERE dev = ? AND (seq = ? OR (seq IS NULL AND "
        "id = ?)) LIMIT 1",
        (dn, seq, seq),
    ).fetchone()


def _holds(auth: dict[int, tuple] | None, seq: int, cid: str, rating: int, at: int) -> bool:
    if auth is None or seq not in auth:
        return False
    ocid, orating, oat, _dur, _p = auth[seq]
    return (orating, oat) == (rating, at) and ocid == cid


def _journal_reviews(folder: Path, dev_id: str) -> dict[int, tuple] | None:
    """The reviews of ``dev_id``'s journal files in its folder ``folder`` (one that
    folders.device_folders reads: a link to a folder too); None when one cannot be read."""
    out: dict[int, tuple] = {}
    for _n, path in sorted(journal.numbered_files(folder).items()):
        try:
            j = journal.read(path, dev_id)
        except journal.JournalError:
            return None
        for e in j.entries:
            if e[0] == "r":
                _, seq, cid, rating, at, dur, pk = e[:7]
                out[seq] = (cid, rating, at, dur, j.params[pk])
    return out


def set_aside(conn, row: int) -> None:
    """Keep review row ``row`` (about to be removed: another review took its id) in meta."""
    dev_id, seq, cid, rating, at, dur, pn = conn.execute(
        "SELECT d.id, coalesce(r.seq, r.id), r.card_id, r.rating, r.at, r.duration_ms, r.params "
        "FROM reviews r JOIN sync_devices d ON d.n = r.dev WHERE r.id = ?",
        (row,),
    ).fetchone()
    keep(conn, dev_id, seq, cid, rating, at, dur, pn)


def keep(conn, dev_id: str, seq: int, cid: str, *review: Any) -> None:
    """Keep review (``dev_id``, ``seq``) of card ``cid`` (rating, at, duration, params n) in
    meta: another review took its id."""
    rating, at, dur, pn = review
    (params,) = conn.execute("SELECT value FROM sched_params WHERE n = ?", (pn,)).fetchone()
    aside = local.json_meta(conn, ASIDE_KEY) or {}
    aside[f"{dev_id}:{seq}"] = [cid, rating, at, dur, json.loads(params), adopted.since_now()]
    _save(conn, aside)


def settle_aside(conn) -> None:
    """Drop from the reviews set aside every one held again (under whatever id)."""
    aside = local.json_meta(conn, ASIDE_KEY)
    if not aside:
        return
    for key, (cid, rating, at, *_rest) in list(aside.items()):
        if conn.execute(
            "SELECT 1 FROM reviews WHERE card_id = ? AND at = ? AND rating = ? LIMIT 1",
            (cid, at, rating),
        ).fetchone():
            del aside[key]
    _save(conn, aside)


def aside_count(conn) -> int:
    return len(local.json_meta(conn, ASIDE_KEY) or {})


def _save(conn, aside: dict) -> None:
    local.set_json_meta(conn, ASIDE_KEY, aside or None)
