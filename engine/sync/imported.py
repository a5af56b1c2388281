"""`prep import` of an export whose history diverged from this one: its reviews merged by the
rules a sync uses (engine/sync/merge.py's replay), and the other devices' reviews it took in
noted for the next sync to pass on."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from prep.engine.store import devices as local
from prep.engine.store.reviewlog import to_us
from prep.engine.study.scheduler import Scheduler
from prep.engine.sync.merge import _buried, _device_ids, _Rev, _review_row, replay

if TYPE_CHECKING:
    from prep.engine.store import Store


def merge_reviews(store: Store, reviews: dict[str, list[dict[str, Any]]]) -> int:
    """`prep import` of an export whose history diverged from this one: each card's reviews
    from the file that are not held here join its log, and the card is replayed. A review
    keeps its id (device, sequence number) and the parameters it was made with, so the same
    review arriving later by a sync is held once; one undone here (a tombstone) stays undone.
    A review from an export of an older prep, without an id, is matched by time and rating
    and joins as this device's (so a sync takes it on). Returns the reviews added."""
    from prep.engine.study.scheduler import replay_params
    from prep.engine.timeutil import parse

    conn = store.conn
    me = local.device(conn)
    pn = local.params_n(conn, replay_params(store.settings(), True, 0))
    scheds: dict[int, Scheduler] = {}
    added = 0
    others: list[_Rev] = []
    for cid, rows in reviews.items():
        held = {(to_us(r.reviewed_at), r.rating) for r in store.reviews(card_id=cid)}
        incoming = []
        for r in rows:
            at = to_us(parse(r["reviewed_at"]))
            if r.get("device"):
                dn, seq = local.device_n(conn, r["device"]), r["seq"]
                if _review_row(conn, dn, seq) or _buried(conn, dn, seq):
                    continue
                if dn == me:
                    local.take_seq(conn, seq)
                params = pn if r.get("params") is None else local.params_n(conn, r["params"])
                incoming.append(_Rev(dn, seq, at, r["rating"], r["duration_ms"], params))
                continue
            if (at, r["rating"]) in held:
                continue
            held.add((at, r["rating"]))
            seq = local.next_review_id(conn)
            local.take_seq(conn, seq)  # this number is taken: no later review here gets it
            incoming.append(_Rev(me, seq, at, r["rating"], r["duration_ms"], pn))
        if incoming:
            replay(store, cid, incoming, _device_ids(conn), scheds)
            added += len(incoming)
            others += [r for r in incoming if r.dev != me]
    _note_relays(conn, others)
    return added


def _note_relays(conn, revs: list[_Rev]) -> None:
    """Other devices' reviews an import took in: noted by their ids ("p" of sync_sent), so
    the next sync passes them on even where the replay wrote them under row ids at or below
    the "x" mark (a row freed by the replay is taken again). Without a sync yet, every
    other device's review is passed on anyway (run._sent)."""
    sent = local.json_meta(conn, "sync_sent")
    if not revs or sent is None or "x" not in sent:
        return
    names = _device_ids(conn)
    pending = local.with_pending(sent.get("p", []), ((names[r.dev], r.seq) for r in revs))
    local.set_json_meta(conn, "sync_sent", {**sent, "p": pending})
