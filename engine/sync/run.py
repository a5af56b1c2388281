"""`prep sync [DIR]`: write this device's new entries to its journal in DIR, then apply every
other device's entries not applied yet (one transaction: a sync killed midway applied
nothing, and the next one does it all). Its status: the devices seen and when each synced."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prep.engine.paths import expand_user
from prep.engine.store import devices as local
from prep.engine.store.backup import BackupError
from prep.engine.store.schema14 import catch_up_tally
from prep.engine.study.present import count
from prep.engine.sync import (
    adopted,
    applied,
    folders,
    fork,
    journal,
    merge,
    relay,
    replaced,
    stuck,
)
from prep.engine.sync.folders import status
from prep.engine.sync.journal import JournalError
from prep.engine.timeutil import fmt, utcnow

if TYPE_CHECKING:
    from prep.engine.store import Store

__all__ = [
    "JournalError",
    "SyncError",
    "SyncResult",
    "apply_journals",
    "status",
    "sync",
]


class SyncError(Exception):
    """A sync folder that cannot be used (missing, not a folder); one line."""

    after: SyncResult | None = None  # raised after the rest of the sync was done (``sync``)


@dataclass
class SyncResult:
    sent_reviews: int = 0
    sent_other: int = 0  # undos, marks, settings, demo runs
    journal: Path | None = None
    applied: merge.Applied = field(default_factory=merge.Applied)
    backup: Path | None = None
    forked: str | None = None  # a copy of another database found: its new id, in one line
    held: str | None = None  # nothing sent: a file of its own folder not whole yet, one line
    set_aside: str | None = None  # a file of its own folder that stays unreadable, set aside
    adopted: str | None = None  # reviews aside for long taken as this device's own, one line
    # what could not be done while the rest was (this device's journal not written: a folder
    # read-only; another device's file refused: its later files wait), one line each
    refused: list[str] = field(default_factory=list)

    def summary(self) -> str:
        a = self.applied
        parts = [f"sent {count(self.sent_reviews, 'review')}"]
        if self.sent_other:
            parts[0] += f" and {count(self.sent_other, 'other change')}"
        if a.by_device:
            parts.append(
                "received "
                + ", ".join(f"{count(n, 'review')} from {name}" for name, n in a.by_device.items())
            )
        else:
            parts.append("received no review")
        extra = [
            f"{count(a.undone, 'undo')}" if a.undone else "",
            f"{count(a.marks, 'mark')}" if a.marks else "",
            "settings" if a.settings else "",
            f"{count(a.demo_runs, 'demo run')}" if a.demo_runs else "",
        ]
        extra = [x for x in extra if x]
        if extra:
            parts.append("and " + ", ".join(extra))
        parts.append(f"{count(a.rescheduled, 'card')} rescheduled")
        return ", ".join(parts)


# what this device has written to its journal: its reviews ("r", by sequence number), undos
# ("g"), marks ("m"), settings ("s"), demo runs ("d") by their numbers, and "x": the review
# rows (by row id) up to which another device's reviews held here are in the folder already
# (received by a sync) or passed on; one taken in by `prep import` after it is passed on
_SENT_KEYS = ("r", "g", "m", "s", "d", "x")


def _sent(conn) -> dict[str, int]:
    stored = local.json_meta(conn, "sync_sent")
    saved = stored or {}
    if stored is not None and "x" not in saved:  # synced by a prep before "x": all by sync
        saved["x"] = conn.execute("SELECT coalesce(max(id), 0) FROM reviews").fetchone()[0]
    return {k: int(saved.get(k, 0)) for k in _SENT_KEYS}


def _relayed_all(conn, me: int) -> bool:
    """Whether every other device's review held here is in the folder or passed on (none
    taken in by an import since the last sync)."""
    x = _sent(conn)["x"]
    row = conn.execute("SELECT 1 FROM reviews WHERE id > ? AND dev != ? LIMIT 1", (x, me))
    return row.fetchone() is None


def outbox(
    store: Store, *, everything: bool = False
) -> tuple[list[list[Any]], dict[str, dict], dict[str, int], int]:
    """This device's entries not yet written to its journal: (entries, params, the new
    'sent' marks, reviews among them), read in one transaction. ``everything``: the whole
    history, for a folder that holds none of this device's journal (``_folder_is_new``):
    its own entries, the other devices' reviews it holds, and every mark and the settings
    with their own clocks."""
    conn = store.conn
    with store.transaction():
        me = local.device(conn)
        sent = dict.fromkeys(_SENT_KEYS, 0) if everything else _sent(conn)
        new = dict(sent)
        entries: list[list[Any]] = []
        params: dict[str, dict] = {}

        def param_key(pn: int) -> str:
            """The journal's key for parameter set ``pn``, its value read once into params."""
            key = str(pn)
            if key not in params:
                (text,) = conn.execute(
                    "SELECT value FROM sched_params WHERE n = ?", (pn,)
                ).fetchone()
                params[key] = json.loads(text)
            return key

        rows = conn.execute(
            "SELECT id, card_id, rating, at, duration_ms, params FROM reviews "
            "WHERE dev = ? AND seq IS NULL AND id > ? "
            "UNION ALL SELECT seq, card_id, rating, at, duration_ms, params FROM reviews "
            "WHERE dev = ? AND seq > ? ORDER BY 1",
            (me, sent["r"], me, sent["r"]),
        ).fetchall()
        took_in = adopted.known(conn) if rows else {}
        me_id = local.device_id(conn)
        for seq, cid, rating, at, dur, pn in rows:
            key = param_key(pn)  # (one set aside that it took in names its origin: v4)
            entries.append(
                ["r", seq, cid, rating, at, dur, key, *took_in.get(f"{me_id}:{seq}", ())]
            )
            new["r"] = max(new["r"], seq)
        # other devices' reviews taken in by an import since: passed on with their own id
        # (one received by a sync is in the folder already; "x" moves past those)
        for _rid, dev_id, seq, cid, rating, at, dur, pn in conn.execute(
            "SELECT r.id, d.id, coalesce(r.seq, r.id), r.card_id, r.rating, r.at, "
            "r.duration_ms, r.params FROM reviews r JOIN sync_devices d ON d.n = r.dev "
            "WHERE r.id > ? AND r.dev != ? ORDER BY r.id",
            (sent["x"], me),
        ):
            key = param_key(pn)
            entries.append(["R", dev_id, seq, cid, rating, at, dur, key])
        new["x"] = conn.execute("SELECT coalesce(max(id), 0) FROM reviews").fetchone()[0]
        # taken in by an import before this database took a new id (a restore, a copy found)
        # and not passed on then: by their ids (devices.unrelayed)
        relayed = {(e[1], e[2]) for e in entries if e[0] == "R"}
        for dev_id, seq in (local.json_meta(conn, "sync_sent") or {}).get("p", []):
            row = conn.execute(
                "SELECT r.card_id, r.rating, r.at, r.duration_ms, r.params FROM reviews r "
                "JOIN sync_devices d ON d.n = r.dev WHERE d.id = ? AND r.dev != ? AND "
                "(r.seq = ? OR (r.seq IS NULL AND r.id = ?))",
                (dev_id, me, seq, seq),
            ).fetchone()
            if row is not None and (dev_id, seq) not in relayed:
                cid, rating, at, dur, pn = row
                entries.append(["R", dev_id, seq, cid, rating, at, dur, param_key(pn)])
        # after a restore (devices.new_device): the old id's reviews it had not sent yet
        old = (local.json_meta(conn, "sync_sent") or {}).get("o")
        if old:
            for dev_id, seq, cid, rating, at, dur, pn in conn.execute(
                "SELECT d.id, coalesce(r.seq, r.id), r.card_id, r.rating, r.at, r.duration_ms, "
                "r.params FROM reviews r JOIN sync_devices d ON d.n = r.dev WHERE r.dev = ? "
                "AND ((r.seq IS NULL AND r.id > ?) OR r.seq > ?) AND r.id <= ? ORDER BY r.id",
                (old[0], old[1], old[1], sent["x"]),
            ):
                key = param_key(pn)
                entries.append(["R", dev_id, seq, cid, rating, at, dur, key])
        reviews = len(entries)
        for rowid, dn, dev_id, seq, cid, at in conn.execute(
            "SELECT g.rowid, g.dev, d.id, g.seq, g.card_id, g.at FROM review_graves g "
            "JOIN sync_devices d ON d.n = g.dev WHERE g.by_dev = ? AND g.rowid > ? "
            "ORDER BY g.rowid",
            (me, sent["g"]),
        ):
            what = local.undone(conn, dn, seq)  # (the review it undid, when known: v4)
            entries.append(["u", dev_id, seq, cid, at, *(what or ())])
            new["g"] = max(new["g"], rowid)
        for cid, at, stamp, susp, buried, flagged in conn.execute(
            "SELECT c.card_id, c.at, c.seq, m.suspended, m.buried_until, m.flagged "
            "FROM mark_clock c LEFT JOIN card_marks m ON m.card_id = c.card_id "
            "WHERE c.dev = ? AND c.seq > ? ORDER BY c.seq",
            (me, sent["m"]),
        ):
            entries.append(["m", stamp, cid, at, *relay.mark_fields(susp, buried, flagged)])
            new["m"] = max(new["m"], stamp)
        row = conn.execute("SELECT value FROM meta WHERE key = 'settings_clock'").fetchone()
        if row is not None:
            at, dev, stamp = json.loads(row[0])
            if dev == me and stamp > sent["s"]:
                entries.append(["s", stamp, at, store.settings().to_dict()])
                new["s"] = stamp
        for rid, *run in conn.execute(
            "SELECT id, name, device, device_name, dtype, scale, seed, passed, seconds, "
            "metrics, ran_at FROM demo_runs WHERE dev = ? AND seq IS NULL AND id > ? "
            "ORDER BY id",
            (me, sent["d"]),
        ):
            entries.append(["d", rid, _summary(run)])
            new["d"] = rid
        if old:  # the old id's demo runs it had not sent: with the old id (held once anywhere)
            (old_id,) = conn.execute(
                "SELECT id FROM sync_devices WHERE n = ?", (old[0],)
            ).fetchone()
            for rid, *run in conn.execute(
                "SELECT id, name, device, device_name, dtype, scale, seed, passed, seconds, "
                "metrics, ran_at FROM demo_runs WHERE dev = ? AND seq IS NULL AND id > ? "
                "ORDER BY id",
                (old[0], old[2] if len(old) > 2 else 0),
            ):
                entries.append(["D", old_id, rid, _summary(run)])
        if everything:
            entries += relay.every_register(conn, store.settings().to_dict(), me)
        else:
            entries += relay.entries(conn, store.settings().to_dict())
    return entries, params, new, reviews


def _summary(run: list[Any]) -> dict[str, Any]:
    """A demo run's row (merge._RUN_COLUMNS) as a journal entry holds it."""
    summary = dict(zip(merge._RUN_COLUMNS, run, strict=True))
    summary["metrics"] = _metrics(summary["metrics"])
    summary["passed"] = int(bool(summary["passed"]))
    return summary


def _metrics(text: str | None) -> dict:
    try:
        value = json.loads(text or "{}", parse_constant=lambda _t: None)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def sync_folder(path: Path) -> Path:
    """DIR as `prep sync` reads it; SyncError (one line) when it is not an existing folder
    (the command asks before it opens, or creates, a database)."""
    path = expand_user(path)
    if not path.exists():
        raise SyncError(f"{path}: no such folder (create it, or let your sync tool make it)")
    if not path.is_dir():
        raise SyncError(
            f"{path}: not a folder; prep sync takes the folder a sync tool keeps in step"
        )
    try:  # (before: one this user may not list was taken as empty, nothing said)
        with os.scandir(path):
            pass
    except OSError as exc:
        raise SyncError(
            f"{path}: cannot list it ({exc.strerror or exc}); give this user read access to it"
        ) from None
    return path


def pending(store: Store, root: Path) -> list[tuple[str, Path]]:
    """(device id, file) of every other device's journal file not applied yet, each device's in
    order, stopping at a gap (a file the sync tool has not brought yet)."""
    notes = applied.Notes.load(store.conn)
    return [(dev, path) for dev, path, _restart, again in _pending(store, root, notes) if not again]


# the lines said of the sync folder's entries skipped (named like a device's folder and none,
# a device's folder that cannot be listed): each is said by the sync that first finds it so,
# not again while it stays (the app syncs in the background: it warned at each sync);
# `prep sync --status` lists them all (status()'s "skipped")
ODD_KEY = "sync_odd"


class Pending(list[journal.Journal]):
    """The journals read_pending read, what to say of another device's file set aside, and
    the files refused (each holds back its device's later files, not the other devices');
    ``odd``: every entry skipped now (ODD_KEY, noted when applied), None when not looked."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []
        self.refused: list[JournalError] = []
        self.odd: list[str] | None = None


def read_pending(store: Store, root: Path, now: datetime | None = None) -> Pending:
    """The journals to apply, read and checked (JournalError: one line): every other device's
    files not applied yet and the ones applied whose file changed since (another version put
    in place, an older one too). A file that cannot be read is set aside once it stays so
    (engine/sync/applied.py); until then one applied before is tried again at the next sync,
    and one not applied yet is refused (``refused``), as is a file of a newer format: its
    device's later files wait for it (as for a file not arrived yet), the other devices'
    are read, and one dated over a day after ``now`` (journal.Ahead). A file gone since the
    folder was listed (a device's folder removed meanwhile) is as if not there yet."""
    from prep.engine.store.reviewlog import to_us

    conn = store.conn
    notes = applied.Notes.load(conn)
    out = Pending()
    held: set[str] = set()  # the devices with a file refused (or gone) this time
    odd: list[str] = []
    gaps: dict[str, tuple[Path, list[Path]]] = {}
    try:
        found = _pending(store, root, notes, odd, gaps)
        said = set(local.json_meta(conn, ODD_KEY) or ())
        # (noted without the folder's path: the app's `~/Sync` and `prep sync .` are one)
        out.odd = [line.removeprefix(str(root)) for line in odd]
        out.lines += [line for line, key in zip(odd, out.odd, strict=True) if key not in said]
        for dev, path, restart, again in found:
            if dev in held:
                continue
            st = applied.stat(path)
            kept = "what it held before kept" if again else "its later files applied"
            try:
                j = journal.read(path, dev, to_us(now or utcnow()))
            except journal.NotAFile as exc:  # never a journal: set aside at once, said once
                j = _skipped(conn, path, dev, int(path.name.split(".")[0]))
                out.lines.append(f"{exc}: skipped (read once a file takes its place); {kept}")
            except journal.Denied as exc:  # (never arriving: set aside at once, said once)
                j = _skipped(conn, path, dev, int(path.name.split(".")[0]))
                out.lines.append(f"{exc}; set aside meanwhile (read once it changes); {kept}")
            except JournalError as exc:
                if applied.stat(path) is None:  # gone since the folder was listed
                    held.update(() if again else (dev,))
                    continue
                number = int(path.name.split(".")[0])
                newer = isinstance(exc, journal.NewerJournal | journal.Ahead)  # (never aside)
                if newer or not notes.aside(dev, number, path, stuck.STUCK_S):
                    # (being rewritten now? read again next time; an applied file changed
                    # that now holds an entry far ahead: as before, not held for good)
                    if again and not isinstance(exc, journal.NewerJournal):
                        continue
                    held.add(dev)
                    out.refused.append(exc)
                    continue
                j = _skipped(conn, path, dev, number)
                out.lines.append(
                    f"{path}: another device's journal file, unreadable and unchanged for over "
                    f"{stuck.STUCK_S // 60} minutes: set aside (read again once it changes); "
                    f"{kept}"
                )
            j.restart, j.stat = restart, st
            out.append(j)
        # (a file missing with later ones there: they wait, as for a file refused; said)
        names = {j.device: j.name for j in out if not j.aside}  # (as applied: the last)
        for dev, (missing, later) in sorted(gaps.items()):
            if dev not in held:
                line = folders.gap_line(conn, dev, missing, later, names)
                out.refused.append(journal.Missing(line))
    finally:
        if notes.dirty:
            with store.transaction():
                notes.save(conn)
    return out


def _skipped(conn, path: Path, dev: str, number: int) -> journal.Journal:
    """An empty journal standing for file ``number`` of ``dev`` set aside: applying it moves
    the device past it, its name and last header kept."""
    row = conn.execute("SELECT name, wrote_at FROM sync_devices WHERE id = ?", (dev,)).fetchone()
    name, wrote_at = row if row is not None else ("", None)
    return journal.Journal(path, dev, name or "", number, wrote_at or "", {}, aside=True)


def _pending(
    store: Store,
    root: Path,
    notes: applied.Notes,
    odd: list[str] | None = None,
    gaps: dict[str, tuple[Path, list[Path]]] | None = None,
) -> list[tuple[str, Path, bool, bool]]:
    """``pending``, each file with whether it begins a series of files new here: a device
    that moved to this folder (or whose files in it were made again) numbers them from 1
    there, so its files are read from the first when the one numbered as the last applied
    here is another file (another ``written_at``), or when all its files number below that
    and the last was written after it (cheap: one header line a device); and before them,
    flagged, every file applied whose file changed since (``notes``: one stat a file).
    An entry named like a device's folder that is none: said in ``odd``, skipped. A device's
    next file missing while later ones are there: in ``gaps`` (it, and the later ones)."""
    conn = store.conn
    me = local.device_id(conn)
    seen = {
        dev: (done, wrote_at)
        for dev, done, wrote_at in conn.execute("SELECT id, applied, wrote_at FROM sync_devices")
    }
    out = []
    found: dict[str, str] = {}
    devices = folders.device_folders(root, found)
    if odd is not None:  # (this device's own: its write says what is wrong)
        odd += [line for dev, line in sorted(found.items()) if dev != me]
    for dev, folder in sorted(devices.items()):
        if dev == me:
            continue
        unlisted: list[str] = []
        entries = journal.numbered_entries(folder, unlisted)
        if odd is not None:
            odd += [f"{line}: its files skipped until it can be listed" for line in unlisted]
        files = {n: e.path for n, e in entries.items()}  # (no Path made for each)
        done, wrote_at = seen.get(dev, (0, None))
        # (a new header at the number applied last, the files below it as they were read:
        # that file replaced, read again alone)
        restart = _new_series(files, done, wrote_at) and not notes.kept_below(dev, entries, done)
        if not restart:
            again = notes.changed(dev, entries, done)
            out += [(dev, Path(files[n]), False, True) for n in again]
        k = 1 if restart else done + 1
        while k in files:
            out.append((dev, Path(files[k]), restart and k == 1, False))
            k += 1
        if gaps is not None and files and max(files) > k:
            later = [Path(files[n]) for n in sorted(files) if n > k]
            gaps[dev] = (folder / journal.file_name(k), later)
    return out


def _new_series(files: dict[int, str], applied: int, wrote_at: str | None) -> bool:
    if applied <= 0 or wrote_at is None or not files:
        return False
    if applied in files:
        text = journal.written_at(files[applied])
        return text is not None and text != wrote_at
    top = max(files)
    if top > applied:
        return False  # a gap: the file applied last not here (yet); wait for the sync tool
    head = journal.parse_time(journal.written_at(files[top]) or "")
    last = journal.parse_time(wrote_at)
    return head is not None and last is not None and head > last


def _folder_is_new(conn, mine: Path) -> bool:
    """Whether this device's folder in the sync folder lacks the journal it wrote last (a
    folder it never wrote, or one made again): then the whole history goes there."""
    files = journal.numbered_files(mine)
    row = conn.execute("SELECT value FROM meta WHERE key = 'sync_file'").fetchone()
    if row is None:  # never wrote a journal, or wrote it with a prep that did not note it
        sent = _sent(conn)
        return not files and any(sent[k] for k in "rgmsd")
    number, wrote = json.loads(row[0])
    return number not in files or journal.written_at(files[number]) != wrote


def sync_out(store: Store, folder: Path, *, now: datetime | None = None) -> SyncResult:
    """The first half of a sync: this device's new entries written to its journal."""
    return sync(store, folder, now=now, apply=False)


def sync(
    store: Store,
    folder: Path,
    *,
    now: datetime | None = None,
    backup: Any = None,
    apply: bool = True,
) -> SyncResult:
    """One sync through ``folder``. ``backup(store, reason)`` is called before entries are
    applied (engine/backup.py's). Raises SyncError or JournalError: before anything is done (a
    folder that is none), or, with the rest done and committed (``exc.after``: the result, its
    ``refused`` every such line), when this device's journal cannot be written (a read-only
    folder) or another device's file is refused (damaged, of a newer prep: its later files
    wait), or when the backup made before anything is applied cannot be made (SyncError:
    nothing received applied, what was sent is sent). ``apply=False``: such a line is in the
    result's ``refused``, nothing raised."""
    root = sync_folder(folder)
    now = now or utcnow()
    result = SyncResult()
    conn = store.conn
    try:  # (its folder a link to a folder not its own: nothing of it read, nothing sent)
        folders.own_link(root / local.device_id(conn), local.device_id(conn))
        linked = None
    except JournalError as exc:
        linked = str(exc)
    # (checked before anything is written under its id)
    checked = fork.check(store, root) if linked is None else fork.Checked(None, 0, refused=linked)
    result.forked, result.held, result.set_aside = checked.line, checked.waiting, checked.aside
    me = local.device_id(conn)
    took = 0
    if replaced.aside_count(conn):  # (before the outbox: what it takes in goes out now)
        with store.transaction():
            took = adopted.adopt(store, now)
    if took:
        result.adopted = (
            f"{count(took, 'review')} set aside for over {adopted.ADOPT_S // 86400} days (the "
            "copy that made them never sent them again) now held as this device's own; held "
            "once if that copy sends them"
        )
    entries: list[list[Any]] = []
    problems: list[SyncError | JournalError] = []  # raised once the rest is done (the first)
    if checked.refused is not None:
        problems.append(SyncError(checked.refused))
    elif checked.waiting is None:  # (else the other copy's file may be a fork: wait for it)
        entries, params, sent, reviews = outbox(store, everything=_folder_is_new(conn, root / me))
    if entries:
        name = local.name(conn)
        header = {
            "format": journal.FORMAT,
            # (a file without what versions 3 and 4 added stays readable by an older prep)
            "version": journal.version_for(entries, params),
            "device": me,
            "name": name,
            "written_at": fmt(now),
            "params": params,
        }
        planned = max(journal.numbered_files(root / me), default=0) + 1
        fork.intend(store, planned, fmt(now))  # (what check() takes as ours)
        try:
            result.journal = journal.write(root / me, header, entries)
        except OSError as exc:  # (a read-only folder: what was received is still applied)
            why = exc.strerror or exc
            problems.append(SyncError(f"{root / me}: cannot write the journal ({why})"))
        except JournalError as exc:  # (its folder a link to a folder not its own)
            problems.append(exc)
    if entries and result.journal is not None:
        with store.transaction():
            old = _sent(conn)
            merged = {k: max(old[k], sent[k]) for k in _SENT_KEYS}  # ("o": passed on now)
            store.set_meta("sync_sent", json.dumps(merged))
            number = int(result.journal.name.split(".")[0])  # the file written last
            store.set_meta("sync_file", json.dumps([number, header["written_at"]]))
            fork.wrote(store, result.journal, fmt(now), checked.known)
            relay.sent(conn, entries)
        result.sent_reviews, result.sent_other = reviews, len(entries) - reviews
    result.refused = [f"{p}; nothing sent" for p in problems]
    if not apply:
        return result
    journals = read_pending(store, root, now)
    if any(j.entries for j in journals) and backup is not None:
        try:
            result.backup = backup(store, "sync")
        except BackupError as exc:  # (nothing applied without it; what was sent is sent)
            problem = SyncError(f"{exc}; nothing received applied (the next sync does)")
            problem.after = result
            result.refused.append(str(problem))
            raise problem from None
    result.applied = apply_journals(store, journals, now)
    problems += journals.refused
    result.refused += [
        str(p) if isinstance(p, journal.Missing) else f"{p}; its device's later files wait for it"
        for p in journals.refused
    ]
    if problems:  # (the rest done and committed: the first said as the error, with it)
        first = problems[0]
        first.after = result
        raise first
    return result


def apply_journals(
    store: Store, journals: list[journal.Journal], now: datetime | None = None
) -> merge.Applied:
    """The second half of a sync: apply journals read (and checked) from the folder, in one
    transaction (the app calls it between two cards)."""
    conn = store.conn
    now = now or utcnow()
    with store.transaction():
        relayed = _relayed_all(conn, local.device(conn))
        out = merge.apply(store, journals, now)
        if journals:
            notes = applied.Notes.load(conn)
            for j in journals:  # each file as it was read (a later version is read again)
                notes.note(j)
            notes.save(conn)
        out.notes[:0] = getattr(journals, "lines", [])
        odd = getattr(journals, "odd", None)
        if odd is not None and odd != (local.json_meta(conn, ODD_KEY) or []):
            if odd:  # (said now: not again while it stays as it is)
                store.set_meta(ODD_KEY, json.dumps(odd))
            else:
                conn.execute("DELETE FROM meta WHERE key = ?", (ODD_KEY,))
        catch_up_tally(conn)  # many reviews taken in: the counts' tally catches up
        store.set_meta("sync_last", fmt(now))
        if relayed:  # what was received is in the folder: not passed on again
            top = conn.execute("SELECT coalesce(max(id), 0) FROM reviews").fetchone()[0]
            marks = {**(local.json_meta(conn, "sync_sent") or {}), **_sent(conn), "x": top}
            store.set_meta("sync_sent", json.dumps(marks))  # (an "o" or "p" kept for the next)
    return out
