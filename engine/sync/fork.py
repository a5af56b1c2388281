"""A database that is a copy of another (copied to a new laptop, or an old backup put back by
hand) shares that one's device id: both would write one journal folder and number their
reviews from the same point, so each would skip the other's entries and their sequence numbers
would collide (3 reviews on one side, 2 on the other, "received no review" on both).

Before a sync writes anything, the journal files in this device's own folder that it has not
checked yet (those after the last one known as its own, or every one) are read: an entry
there that this database did not make (a review, mark, settings or demo run it does not hold as
it is and never sent, an undo it has no tombstone of) means another copy writes under this id. This database then takes a new device id
(devices.new_device, as a restore does); the old id's journal is from then on another device's,
read from its first file (what is held already is skipped: a review is known by its id); and
this database's reviews, undos and demo runs under the old id that the old id's journal does
not hold as they are here (made here since the copy) move to the new id and are replayed (the
fuzz of a review made with "fuzz_by": "review" is seeded by its id), so the next sync sends
them, colliding with nothing. The
copy that wrote first keeps the old id. Nothing is written but this database and, by the sync
that follows, its own new folder. While a file there not checked yet cannot be read (still
arriving from another copy?), nothing is sent under this id: that file may be the evidence
(until engine/sync/stuck.py sets it aside). A file this database was about to write when a
sync was killed (INTENT_KEY) is its own.

A peer-to-peer sync tool (Syncthing) may put another copy's version of a file this database
wrote in place of it (both wrote that number). So the files it wrote are noted (WROTE_KEY):
another version of one is another copy's, whatever it holds (even what both hold); and a file
put in place since the last check (its inode change time, CTIME_KEY) is checked again, an
older number too. A review of ours that such a copy's undo may name (it gave the number to
a review of its own) is kept, moved to the new id: at worst un-undone, never lost. Since
journal v4 an undo names the review it undid (time, rating): an undo naming ours is of ours
(it keeps its id and is undone, as on the copy), one naming another review leaves ours (moved);
our own undo of a review the old id's journal holds as it named it stays that review's. The
new id takes a name of its own ("NAME (copy XXXX)")."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prep.engine.store import devices as local
from prep.engine.study.present import count
from prep.engine.sync import adopted, folders, journal, merge, stuck
from prep.engine.sync.journal import JournalError
from prep.engine.textsafe import quoted

if TYPE_CHECKING:
    from prep.engine.store import Store

SEEN_KEY = "sync_seen"  # [number, written_at]: the newest file of our own folder checked ours
# [number, written_at]: the journal file a sync is about to write (committed before it is
# written, cleared with the transaction that notes it written): a sync killed between the two
# wrote a file this database then no longer holds as it is (an undo since), but it is ours
INTENT_KEY = "sync_intent"
# the newest inode change time (ns) of a file of our folder checked as ours (or written)
CTIME_KEY = "sync_ctime"
# {number: written_at} of every journal file this database wrote under its id: another
# version of one of them in the folder is another copy's (the sync tool replaced ours)
WROTE_KEY = "sync_wrote"


@dataclass
class Checked:
    line: str | None  # a copy found: what to tell the user
    known: int  # every file of this device's folder numbered up to this one is its own
    # a file of this device's folder not checked yet cannot be read (still arriving from
    # another copy?): what to tell the user; nothing is sent under this id until it is whole
    waiting: str | None = None
    aside: str | None = None  # a file of it set aside now (engine/sync/stuck.py), one line
    # this device's folder cannot be listed (permission denied): nothing can be checked or
    # numbered there, so nothing is sent; one line naming it and what to do
    refused: str | None = None


def check(store: Store, root: Path) -> Checked:
    """Take a new device id when this database's own journal folder in ``root`` holds entries
    it did not write (then ``line`` says so)."""
    conn = store.conn
    me = local.device_id(conn)
    unlisted: list[str] = []
    files = {n: Path(e.path) for n, e in journal.numbered_entries(root / me, unlisted).items()}
    # (no folder there: journal.write says what it is; before, one that could not be listed
    # was taken as empty, and the whole history written again at each sync)
    if unlisted and (root / me).is_dir():
        return Checked(
            None,
            0,
            refused=f"{unlisted[0]}: this device's journal folder; give this user read "
            "access to it (chmod u+rwx)",
        )
    ctimes = _ctimes(files)
    wrote_at = _wrote(conn, root)
    base, todo = _unchecked(conn, files, ctimes, wrote_at)
    if not todo:
        if local.json_meta(conn, CTIME_KEY) is None and ctimes:
            with store.transaction():  # (files written before the mark was kept: as they are)
                store.set_meta(CTIME_KEY, str(max(ctimes.values())))
        return Checked(None, base)
    why: dict[int, str] = {}  # what is wrong with each file that cannot be read
    unchecked = _read({n: files[n] for n in todo}, me, why)
    denied = {n for n, w in why.items() if w == "denied"}  # (never arriving: said at once)
    sent = {k: int(v) for k, v in (local.json_meta(conn, "sync_sent") or {}).items() if k in "rmsd"}
    intent = local.json_meta(conn, INTENT_KEY)
    mine = {
        n for n in todo if intent and n >= intent[0] and journal.written_at(files[n]) == intent[1]
    }
    # a file this database wrote (WROTE_KEY), there with a header it never wrote at that
    # number: another copy's version of it, put in place by the sync tool (whatever it holds:
    # proof of a copy). A header that cannot be read is no proof (stuck.py's rule then), and
    # one it wrote there before (its own older version, a folder made again) is its own.
    other = {n for n in todo if n in wrote_at and _foreign_header(files[n], wrote_at[n])}
    foreign = bool(other - mine) or any(
        _not_ours(conn, e, sent) for n, es in unchecked.items() if n not in mine for e in es
    )
    with store.transaction():
        if not foreign:  # ours, up to the first one not readable yet (still arriving?)
            readable = set(unchecked) | mine | stuck.set_aside(conn, files)
            unread = [n for n in todo if n not in readable]
            aside, waiting_for = stuck.judge(store, files, unread, wrote_at, denied)
            readable |= set(aside)
            known = max(
                (n for n in todo if all(k in readable for k in todo if k <= n)), default=base
            )
            _seen(store, known, files)
            done = [c for n, c in ctimes.items() if n <= known]
            if done:
                top = max(int(local.json_meta(conn, CTIME_KEY) or 0), *done)
                store.set_meta(CTIME_KEY, str(top))
            said = stuck.line(files, aside, wrote_at, denied) if aside else None
            if not waiting_for:
                return Checked(None, known, aside=said)
            first = waiting_for[0]
            waiting = (
                f"{files[first]}: this device's journal file cannot be read yet "
                f"({why.get(first, 'unreadable')}; it may still be arriving from another copy "
                f"of this database; once unchanged for {stuck.STUCK_S // 60} minutes it is set "
                "aside and sending resumes): nothing sent this time"
            )
            return Checked(None, known, waiting, said)
        name = local.name(conn)
        own = {**_read({n: p for n, p in files.items() if n not in todo}, me), **unchecked}
        new, unsure = _split(store, own, root)
    line = (
        f"this database is a copy of another that syncs as device {me} ({name}); "
        f"it now syncs as device {new}, named {quoted(local.name(conn))} "
        "(prep config device_name NAME to name it)"
    )
    if unsure:  # (pre-v4 undos: which review each undid is not known; said, once)
        line += (
            f"; {count(unsure, 'review')} of this database kept under the new id, though "
            "the other copy undid a review under its number with a prep before journal v4 "
            "(it does not say which review): if it undid this one, the machines that hold "
            "it under the old id too may hold it twice"
        )
    return Checked(line, 0)


def intend(store: Store, number: int, written_at: str) -> None:
    """Before this device writes its journal file (numbered ``number`` or, if that name is
    taken meanwhile, after it) with header ``written_at``: noted, committed."""
    with store.transaction():
        store.set_meta(INTENT_KEY, json.dumps([number, written_at]))


def wrote(store: Store, path: Path, written_at: str, known: int) -> None:
    """After this device wrote journal file ``path`` (inside the caller's transaction): it is
    known as its own too when no file came between the check and it."""
    store.conn.execute("DELETE FROM meta WHERE key = ?", (INTENT_KEY,))
    number = int(path.name.split(".")[0])
    wrote_at = local.json_meta(store.conn, WROTE_KEY) or {}
    mine = wrote_at.setdefault(_key(path.parent.parent), {})
    headers = _headers(mine.get(str(number)))
    mine[str(number)] = [*(h for h in headers if h != written_at), written_at]
    store.set_meta(WROTE_KEY, json.dumps(wrote_at, separators=(",", ":")))
    if number == known + 1:
        store.set_meta(SEEN_KEY, json.dumps([number, written_at]))
        made = _ctimes({number: path}).get(number, 0)
        seen = int(local.json_meta(store.conn, CTIME_KEY) or 0)
        # (not past a file put in place since the check, before this one was written: the
        # sync tool may have replaced one of ours meanwhile; the next check reads it)
        others = _ctimes(journal.numbered_files(path.parent))
        if all(c <= seen for n, c in others.items() if n != number):
            store.set_meta(CTIME_KEY, str(max(seen, made)))


def _key(root: Path) -> str:
    try:
        return str(root.resolve())
    except OSError:
        return str(root)


def _headers(value: Any) -> list[str]:
    """The headers noted for one number (a prep before the lists noted one, as a string)."""
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def _wrote(conn, root: Path) -> dict[int, list[str]]:
    """{number: every written_at} of the files this database wrote under its id in the sync
    folder ``root`` (each folder its own: a machine may sync through two, each numbered from
    1; a folder made again is numbered from 1 again, so a number may have had several)."""
    mine = (local.json_meta(conn, WROTE_KEY) or {}).get(_key(root), {})
    return {int(n): _headers(w) for n, w in mine.items()}


def _foreign_header(path: Path, headers: list[str]) -> bool:
    """Whether file ``path`` has a readable header this database never wrote at its number."""
    stamp = journal.written_at(path)
    return stamp is not None and stamp not in headers


def _seen(store: Store, known: int, files: dict[int, Path]) -> None:
    stamp = journal.written_at(files[known]) if known else ""
    store.set_meta(SEEN_KEY, json.dumps([known, stamp]))


def _ctimes(files: dict[int, Path]) -> dict[int, int]:
    """Each file's inode change time (ns): a file put in place since (a sync tool replacing
    it by another version, or bringing it) is newer than every one checked before."""
    out = {}
    for n, path in files.items():
        try:
            out[n] = path.lstat().st_ctime_ns
        except OSError:
            continue
    return out


def _unchecked(
    conn,
    files: dict[int, Path],
    ctimes: dict[int, int] | None = None,
    wrote_at: dict[int, list[str]] | None = None,
) -> tuple[int, list[int]]:
    """(n, the numbers of our folder's files after n): every file up to n is known as ours,
    by the mark of the newest one checked (or, before any check, the one written last) when
    that file is still there as it was, and when no file up to it was put in place since
    the last check (a peer-to-peer sync tool may replace one of ours by another copy's
    version of it: ``CTIME_KEY``; then the files from that one on are checked again). A file
    put in place within the same tick of the clock as the mark (its change time equal to it)
    counts as put in place since when it is one this database wrote and its header is not
    one it wrote there."""
    mark = local.json_meta(conn, SEEN_KEY) or local.json_meta(conn, "sync_file")
    base = 0
    if mark and mark[0] in files and journal.written_at(files[mark[0]]) == mark[1]:
        base = int(mark[0])
    seen = local.json_meta(conn, CTIME_KEY)
    if seen is not None and ctimes:
        wrote_at = wrote_at or {}
        since = [
            n
            for n, c in ctimes.items()
            if n <= base
            and (
                c > int(seen)
                or (c == int(seen) and n in wrote_at and _changed(files[n], wrote_at[n]))
            )
        ]
        base = min([base, *(n - 1 for n in since)])
    return base, sorted(n for n in files if n > base)


def _changed(path: Path, headers: list[str]) -> bool:
    return journal.written_at(path) not in headers


def _read(
    files: dict[int, Path], me: str, why: dict[int, str] | None = None
) -> dict[int, list[list[Any]]]:
    """Every file of our folder, its entries (one that cannot be read is no evidence: what
    is wrong with it noted in ``why``, "denied" for one this user may not read)."""
    out = {}
    for n, path in files.items():
        try:
            out[n] = journal.read(path, me).entries
        except journal.Denied:
            if why is not None:
                why[n] = "denied"
        except JournalError as exc:
            if why is not None:
                text = str(exc).removeprefix(f"{path}: ").removesuffix("; nothing of it applied")
                why[n] = text
    return out


def _review(conn, dn: int, seq: int) -> tuple | None:
    """(time, rating) of review (``dn``, ``seq``) here: what tells two reviews of one id
    apart (its card may have another id here since: Store.adopt_aliases)."""
    return conn.execute(
        "SELECT at, rating FROM revlog WHERE dev = ? AND (seq = ? OR (seq IS NULL AND id = ?)) "
        "LIMIT 1",
        (dn, seq, seq),
    ).fetchone()


def _grave(conn, dn: int, seq: int) -> bool:
    row = conn.execute("SELECT 1 FROM review_graves WHERE dev = ? AND seq = ?", (dn, seq))
    return row.fetchone() is not None


def _not_ours(conn, e: list[Any], sent: dict[str, int]) -> bool:
    """Whether this database cannot have written entry ``e`` under its id: it does not hold
    it as it is, and (its reviews, marks and settings go out in the order of their numbers,
    ``sent`` the last number sent of each kind) it never sent one of that number. (Another
    prep on this database may have written the file and not yet noted it sent: what this
    database holds as it is counts as its own first.)"""
    kind = e[0]
    me = local.device(conn)
    if kind in ("r", "R"):
        dn = me if kind == "r" else _known(conn, e[1])
        seq, _cid, rating, at = e[1:5] if kind == "r" else e[2:6]
        if dn is None:
            return True
        held = _review(conn, dn, seq)
        if held is not None:
            return tuple(held) != (at, rating)
        return (kind == "r" and seq > sent.get("r", 0)) or not _grave(conn, dn, seq)
    if kind == "u":
        dn = _known(conn, e[1])
        if dn is None or not _grave(conn, dn, e[2]):
            return True
        # (v4) an undo naming a review other than the one this database's undo of that id
        # undid (both known) is another copy's
        what = local.undone(conn, dn, e[2])
        return len(e) == journal.NAMED_UNDO and what is not None and what != (e[5], e[6])
    if kind == "m":  # a card's clock set here only grows: one of ours before it is as it was
        clock = conn.execute(
            "SELECT at, dev, seq FROM mark_clock WHERE card_id = ?", (e[2],)
        ).fetchone()
        if clock is not None and tuple(clock) == (e[3], me, e[1]):
            return False
        return e[1] > sent.get("m", 0) or (
            clock is not None and clock[1] == me and clock[2] <= e[1]
        )
    if kind == "s":
        clock = local.json_meta(conn, "settings_clock")
        return clock != [e[2], me, e[1]] and e[1] > sent.get("s", 0)
    if kind == "d":  # (a demo run is never removed)
        held = conn.execute(
            "SELECT name, ran_at FROM demo_runs WHERE dev = ? AND (seq = ? OR "
            "(seq IS NULL AND id = ?)) LIMIT 1",
            (me, e[1], e[1]),
        ).fetchone()
        return held is None or tuple(held) != (e[2]["name"], e[2]["ran_at"])
    return False  # another device's mark, settings or run passed on: no evidence either way


def _twins(root: Path, old_id: str, want: set[tuple]) -> dict[tuple, tuple[str, int]]:
    """Reviews (card, time, rating) of ``want`` that another device's journal in ``root``
    holds as its own: (that device's id, its number)."""
    found: dict[tuple, tuple[str, int]] = {}
    for dev, folder in folders.device_folders(root).items() if want else ():
        if dev == old_id:
            continue
        for path in journal.numbered_files(folder).values():
            try:
                entries = journal.read(path, dev).entries
            except JournalError:
                continue
            for e in entries:
                if e[0] == "r" and (e[2], e[4], e[3]) in want:
                    found[(e[2], e[4], e[3])] = (dev, e[1])
    return found


def _known(conn, dev_id: str) -> int | None:
    row = conn.execute("SELECT n FROM sync_devices WHERE id = ?", (dev_id,)).fetchone()
    return None if row is None else int(row[0])


def copy_name(name: str, new_id: str) -> str:
    """The name a copy takes with its new id: ``NAME (copy XXXX)``, XXXX the new id's first
    four digits (as `prep sync --status` lists it), so the others' summaries never say "from
    NAME" for two devices: not even for two copies that find themselves at the same time,
    which a number counted from the devices known could not promise."""
    base = re.sub(r" \(copy [0-9a-f]+\)$", "", name)
    suffix = f" (copy {new_id[:4]})"
    return base[: local.MAX_NAME - len(suffix)] + suffix


def _split(store: Store, own: dict[int, list[list[Any]]], root: Path) -> tuple[str, int]:
    """Take a new id; what the old id's journal does not hold as it is here moves to it.
    Returns the new id and how many reviews moved under the number of an undo that does not
    name the review it undid (a prep before journal v4): it may have been of them."""
    conn = store.conn
    old = local.device(conn)
    reviews: dict[int, tuple] = {}  # the old id's journal: seq -> (at, rating)
    cards: dict[int, str] = {}  # and seq -> card
    undos: dict[int, tuple | None] = {}  # the old id's reviews it undid: what (v4), if said
    runs: dict[int, tuple] = {}
    old_id = local.device_id(conn)
    # the last review this database sent under the old id: none numbered up to it is new here
    sent_r = int((local.json_meta(conn, "sync_sent") or {}).get("r", 0))
    files = journal.numbered_files(root / old_id)
    wrote = {n: w for n, w in _wrote(conn, root).items() if n in files}
    by_me = {n for n, w in wrote.items() if journal.written_at(files[n]) in w}
    if len(by_me) < len(wrote):
        # a file it wrote is not in the folder as it wrote it (a sync tool put the other
        # copy's version of it in place): what it sent is not known to be there, and a
        # review of its own in a file of its own may be one it made since the copy
        sent_r = 0
    elsewhere: set[int] = set()  # numbers of the reviews in files this database did not write
    for n, entries in own.items():
        for e in entries:
            if e[0] == "r":
                reviews[e[1]] = (e[4], e[3])
                cards[e[1]] = e[2]
                if n not in by_me:
                    elsewhere.add(e[1])
            elif e[0] == "u" and e[1] == old_id:
                undos[e[2]] = (e[5], e[6]) if len(e) == journal.NAMED_UNDO else None
            elif e[0] == "d":
                runs[e[1]] = (e[2]["name"], e[2]["ran_at"])
    new_id = local.new_device(conn, resend_registers=len(by_me) < len(wrote))
    local.set_name(conn, copy_name(local.name(conn), new_id))
    new = local.device(conn)
    conn.execute(
        "DELETE FROM meta WHERE key IN (?, ?, ?, ?)", (SEEN_KEY, INTENT_KEY, CTIME_KEY, WROTE_KEY)
    )
    rows = conn.execute(
        "SELECT id, coalesce(seq, id), card_id, at, rating FROM reviews WHERE dev = ?", (old,)
    ).fetchall()
    # the last review both copies hold as it is (its number), or the last one sent (this
    # copy may have undone those after it since): every one of ours numbered up to it was
    # made before the copy too, so the old id's undo of one is of ours
    copied = max(
        (seq for _r, seq, _c, at, rating in rows if reviews.get(seq) == (at, rating)),
        default=0,
    )
    copied = max(copied, sent_r)
    moved: dict[str, set[int]] = {}

    # an undo of a number past that one may be of a review the other copy made since: ours
    # then moves, as one made here since the copy (never lost, at worst undone once); and
    # where a third copy moved that same review already, it takes that one's id
    # (an undo of one of ours in the journal of its own file, not in one the other copy
    # wrote: the other copy may have given that number to a review of its own, undone;
    # a sync tool replacing one copy's file by the other's leaves just that)
    def keeps(seq: int, at: int, rating: int) -> bool:
        if undos.get(seq) is not None:  # (v4) an undo naming the review it undid: of this
            return undos[seq] == (at, rating)  # one, it keeps its id (and is undone)
        if seq in undos:  # the old id's undo of it: it keeps its id (and is undone)
            same = reviews.get(seq) == (at, rating)
            return (same and seq in elsewhere) or (seq not in reviews and seq <= copied)
        return reviews.get(seq) == (at, rating)  # the same review in the old id's journal

    moving = [r for r in rows if not keeps(r[1], r[3], r[4])]
    unsure = sum(1 for r in moving if r[1] in undos and undos[r[1]] is None)
    twins = _twins(root, old_id, {(c, at, rt) for _r, seq, c, at, rt in moving if seq in undos})
    took_in = adopted.known(conn)  # (a review set aside that it took in: still that one)
    for rid, seq, cid, at, rating in moving:
        twin = twins.get((cid, at, rating))
        dn, dseq = (new, seq) if twin is None else (local.device_n(conn, twin[0]), twin[1])
        conn.execute("UPDATE revlog SET dev = ?, seq = ? WHERE id = ?", (dn, dseq, rid))
        moved.setdefault(cid, set()).add(rid)
        if f"{old_id}:{seq}" in took_in and twin is None:
            adopted.note(conn, new_id, seq, took_in[f"{old_id}:{seq}"])
    graves = conn.execute("SELECT seq, card_id FROM review_graves WHERE dev = ?", (old,))
    for seq, cid in graves.fetchall():
        if seq in undos:
            continue  # in the old id's journal: sent already
        what = local.undone(conn, old, seq)  # (v4: the review it undid, when known)
        if cards.get(seq) == cid and (
            reviews.get(seq) == what if what is not None else seq in reviews and seq <= copied
        ):
            # the undo of a review made before the copy: it stays that review's, and goes
            # out from the new id (the old id's journal does not hold it)
            conn.execute(
                "UPDATE review_graves SET by_dev = ? WHERE dev = ? AND seq = ?", (new, old, seq)
            )
            continue
        conn.execute(
            "UPDATE review_graves SET dev = ?, by_dev = ? WHERE dev = ? AND seq = ?",
            (new, new, old, seq),
        )
        local.move_undone(conn, old, seq, new)
        local.take_seq(conn, seq)  # (never a number a review of the new id takes later)
    for rid, name, ran_at in conn.execute(
        "SELECT id, name, ran_at FROM demo_runs WHERE dev = ? AND seq IS NULL", (old,)
    ).fetchall():
        if runs.get(rid) != (name, ran_at):
            conn.execute("UPDATE demo_runs SET dev = ? WHERE id = ?", (new, rid))
    devices = merge._device_ids(conn)
    scheds: dict = {}
    for cid in sorted(moved):  # (a fuzz seeded by the id: replayed from the first moved)
        merge.replay(store, cid, [], devices, scheds, redo=moved[cid])
    # what stays the old id's is in its journal: nothing of it to pass on (no "o", as a
    # restore has), and the rows written again just now are not another device's news ("x")
    top = conn.execute("SELECT coalesce(max(id), 0) FROM revlog").fetchone()[0]
    pending = (local.json_meta(conn, "sync_sent") or {}).get("p", [])
    store.set_meta("sync_sent", json.dumps({"x": top, "p": pending}))
    return new_id, unsure
