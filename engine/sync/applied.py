"""What this database applied of each other device's journal, file by file: each file's
inode, size, modification and change times as they were when it was read, and its header's
``written_at`` (``KEY``).

A sync tool may put another version of a journal file in place long after this database
applied it (peer to peer: two copies of one database both wrote that number, and the tool
settles on one), an older file as well as the last one, or rewrite one in place. Such a file
is read again (``changed``), by number, before the files new here: an id it gives to a review
other than the one held is settled by engine/sync/replaced.py, so a device converges whatever
order the versions and the copies' new ids arrive in. A sync where nothing changed only
stats the files applied (no file is read). A file whose stat changed but whose header and
size are the ones noted (the same file put in place again: a folder copied, a tool
re-delivering it) costs its header line; two copies' versions of a file never share a
header (each names the microsecond its copy wrote it). A file applied by a prep before
these notes is noted as it is now, its header line read once.

A file applied here that cannot be read when it is read again (half rewritten at that
moment) keeps its old note and is read again at the next sync. Another device's file not
applied yet that stays unreadable and unchanged (engine/sync/stuck.py's rule, by this
machine's clock) is set aside: noted as applied, marked so, the device's later files
applied, one line said; it is read again once it changes (a whole version arriving)."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from prep.engine.store import devices as local
from prep.engine.sync import journal

# KEY:DEVICE ID (one meta row a device: a sync rewrites only the devices it applied files of)
# = {number: [inode, size, mtime_ns, ctime_ns, header's written_at, set aside (0 or 1)]}
KEY = "sync_files"
# {device id: {number: [inode, size, mtime_ns, ctime_ns, first found so (ns, this clock)]}}:
# another device's files found unreadable, not set aside yet
WAIT_KEY = "sync_unread"


def stat(path: Path) -> list[int] | None:
    """The file's [inode, size, mtime_ns, ctime_ns]: any new version put in place (a new
    inode) or a change in place (a new change time) gives other numbers."""
    try:
        return _fields(os.lstat(path))
    except OSError:
        return None


def _fields(st: os.stat_result) -> list[int]:
    return [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


@dataclass
class Notes:
    """The notes of the files applied, loaded once, saved when changed."""

    files: dict[str, dict[str, list]] = field(default_factory=dict)
    waiting: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    dirty: bool = False
    changed_devices: set[str] = field(default_factory=set)

    @classmethod
    def load(cls, conn) -> Notes:
        rows = conn.execute(
            "SELECT substr(key, ?), value FROM meta WHERE key > ? AND key < ?",
            (len(KEY) + 2, f"{KEY}:", f"{KEY};"),
        )
        files = {dev: json.loads(value) for dev, value in rows}
        return cls(files, local.json_meta(conn, WAIT_KEY) or {})

    def changed(self, dev: str, files: dict[int, os.DirEntry[str]], applied: int) -> list[int]:
        """The numbers up to ``applied`` whose file is not the one read when it was applied
        (a file applied before notes were kept: noted as it is now, not read)."""
        mine = self.files.setdefault(dev, {})
        out = []
        for n, entry in files.items():
            if n > applied:
                continue
            old = mine.get(str(n))
            try:
                now = _fields(entry.stat(follow_symlinks=False))
            except OSError:
                continue
            if old is not None and now == old[:4]:
                continue
            head = journal.written_at(entry.path)
            if old is None:  # (applied by a prep before the notes)
                mine[str(n)] = [*now, head or "", 0]
            elif head is not None and [head, now[1], 0] == [old[4], old[1], old[5]]:
                mine[str(n)] = [*now, head, 0]  # the same file put in place again
            else:
                out.append(n)
                continue
            self.dirty = True
            self.changed_devices.add(dev)
        return sorted(out)

    def kept_below(self, dev: str, files: dict[int, os.DirEntry[str]], applied: int) -> bool:
        """Whether a file of ``dev`` numbered below ``applied`` is still the one read when it
        was applied (one stat, the nearest first): then a new header at ``applied`` is that
        file replaced (read again by ``changed``), not the device's files begun again from 1
        (a folder made again or moved holds only new files)."""
        mine = self.files.get(dev) or {}
        for n in sorted((n for n in files if n < applied), reverse=True):
            old = mine.get(str(n))
            if old is None or old[5]:
                continue
            try:
                return _fields(files[n].stat(follow_symlinks=False)) == old[:4]
            except OSError:
                continue
        return False

    def note(self, j: journal.Journal) -> None:
        """Journal ``j`` applied (or set aside: ``j.aside``) as it was when read (``j.stat``;
        ``j.restart``: the first of a new series: the notes of the old one dropped)."""
        mine = self.files.setdefault(j.device, {})
        if j.restart:
            mine.clear()
        if j.stat is not None:
            mine[str(j.number)] = [*j.stat, "" if j.aside else j.written_at, int(j.aside)]
        number = j.number
        self.waiting.get(j.device, {}).pop(str(number), None)
        self.dirty = True
        self.changed_devices.add(j.device)

    def aside(self, dev: str, number: int, path: Path, stuck_s: int) -> bool:
        """Another device's file ``number`` (not applied yet) cannot be read: whether it is
        set aside now (unchanged since the last sync found it so, and for over ``stuck_s``
        seconds by this machine's clock); else noted as found so."""
        now = stat(path)
        if now is None:
            return False
        mine = self.waiting.setdefault(dev, {})
        seen = mine.get(str(number))
        now_ns = time.time_ns()
        still = seen is not None and seen[:4] == now
        first = seen[4] if still and seen is not None else now_ns
        # unchanged since its modification time, or (a time ahead of this clock: the
        # sender's) since a sync here first found it so
        since = now[2] if now[2] <= now_ns else first
        self.dirty = True
        mine[str(number)] = [*now, first]  # (dropped once the file is noted applied)
        return still and now_ns - since > stuck_s * 1_000_000_000

    def save(self, conn) -> None:
        if self.dirty:
            for dev in sorted(self.changed_devices):
                local.set_json_meta(conn, f"{KEY}:{dev}", self.files.get(dev) or None)
            local.set_json_meta(
                conn, WAIT_KEY, {d: f for d, f in self.waiting.items() if f} or None
            )
            self.dirty = False
            self.changed_devices.clear()


def aside_count(conn) -> int:
    """Other devices' journal files set aside here (unreadable, unchanged since)."""
    notes = Notes.load(conn).files
    return sum(1 for f in notes.values() for v in f.values() if v[5])
