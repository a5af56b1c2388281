"""The devices' folders of a sync folder (split from journal.py): which entries named like a
device's folder are read; before a sync makes a new database, whether the folder holds
anything it could apply; and `prep sync --status` (split from run.py)."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prep.engine.paths import odd_kind
from prep.engine.store import devices as local
from prep.engine.study.present import count
from prep.engine.sync import applied, journal, replaced, stale
from prep.engine.sync.journal import DEVICE_RE, JournalError

if TYPE_CHECKING:
    from collections.abc import Iterator

    from prep.engine.store import Store

__all__ = ["device_folders", "gap_line", "nothing_to_apply", "own_link", "status"]

# opening a file never waits (a FIFO) nor follows a link (journal.py's rule)
_NO_WAIT = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)


def device_folders(root: Path, odd: dict[str, str] | None = None) -> dict[str, Path]:
    """Every device's folder in the sync folder, by device id (other names ignored). An entry
    named like one that is no folder (a file, a FIFO: never opened) is left out, and what it
    is said in ``odd`` (by name, one line). A symbolic link to a folder is followed (a user
    may keep one device's folder elsewhere): only its entries named like journal files are
    read, each a regular file opened without following a link or waiting (read()), so a
    link leads nowhere else and never blocks; one that leads to no folder (a FIFO, a device,
    nowhere, a loop) or to another device's folder of this sync folder (its files would name
    that device) is left out, said in ``odd``."""
    out: dict[str, Path] = {}
    links: dict[str, os.stat_result] = {}
    try:
        with os.scandir(root) as found:
            for entry in found:
                if not DEVICE_RE.fullmatch(entry.name):
                    continue
                try:
                    kind = odd_kind(entry.stat(follow_symlinks=False).st_mode)
                except OSError:
                    continue
                if kind == "a symbolic link":
                    try:  # (stat only: a FIFO at its end is never opened)
                        target = os.stat(entry.path)
                    except OSError as exc:
                        kind = f"a symbolic link to nothing readable ({exc.strerror or exc})"
                    else:
                        if stat.S_ISDIR(target.st_mode):
                            links[entry.name] = target
                            continue
                        kind = f"a symbolic link to {odd_kind(target.st_mode) or 'a file'}"
                elif kind is None:
                    kind = "a file"
                elif kind == "a folder":
                    out[entry.name] = root / entry.name
                    continue
                if odd is not None:
                    odd[entry.name] = (
                        f"{entry.path}: {kind}, not a device's journal folder: skipped"
                    )
    except OSError:
        return out
    if links:
        real: dict[tuple[int, int], str] = {}  # the folders of the sync folder
        for name in out:
            with contextlib.suppress(OSError):
                st = os.stat(root / name)
                real[(st.st_dev, st.st_ino)] = name
        targets: dict[tuple[int, int], list[str]] = {}  # the links to one folder elsewhere
        for name, st in sorted(links.items()):
            key = (st.st_dev, st.st_ino)
            if key not in real:
                targets.setdefault(key, []).append(name)
            elif odd is not None:
                odd[name] = (
                    f"{root / name}: a symbolic link to another device's folder of this "
                    "sync folder, not a device's journal folder: skipped"
                )
        for names in targets.values():
            # (two links to one folder: the one named as its files' device is read; the
            # other would read them as its own and refuse each, naming another device)
            read = names[0]
            if len(names) > 1:
                owner = next(_writers(root / names[0]), None)
                read = owner if owner in names else read
            out[read] = root / read
            for name in names:
                if name != read and odd is not None:
                    odd[name] = (
                        f"{root / name}: a symbolic link to the same folder as {read} (read "
                        "as that device's): skipped"
                    )
    return out


def _writers(folder: Path) -> Iterator[str]:
    """The device each journal file of ``folder`` names in its header, in their order (only a
    regular file is opened, never waited on nor followed: a FIFO, a link, a device skipped)."""
    for _n, entry in sorted(journal.numbered_entries(folder).items()):
        with contextlib.suppress(OSError):
            if not entry.is_file(follow_symlinks=False):
                continue
            fd = os.open(entry.path, _NO_WAIT)
            try:
                if stat.S_ISREG(os.fstat(fd).st_mode):
                    dev = stale.written_by(fd)
                    if dev is not None:
                        yield dev
            finally:
                os.close(fd)


def own_link(folder: Path, me: str) -> bool:
    """Whether this device's folder ``folder`` is a symbolic link that journal.write may
    write through: one leading to a folder that holds a journal file whose header names this
    device (the folder prep made, moved elsewhere and linked by the user). Any other link is
    refused (JournalError, the line with what to do): one a sync tool brought from another
    machine, or made by mistake, would have prep write where nobody named. False: no link."""
    if not folder.is_symlink():
        return False
    keep = "put the folder itself in place of the link"
    try:
        mode = os.stat(folder).st_mode  # (stat only: a FIFO at its end is never opened)
    except OSError as exc:
        raise JournalError(
            f"{folder}: this device's folder, a symbolic link to nothing readable "
            f"({exc.strerror or exc}); {keep}"
        ) from None
    if not stat.S_ISDIR(mode):
        kind = odd_kind(mode) or "a file"
        raise JournalError(f"{folder}: this device's folder, a symbolic link to {kind}; {keep}")
    if me in _writers(folder):
        return True
    raise JournalError(
        f"{folder}: this device's folder, a symbolic link to a folder that holds no journal "
        "file of this device; prep writes through a link only into a folder of its own (sync "
        f"once without the link, move the folder it made and link that; or {keep})"
    )


def nothing_to_apply(root: Path) -> str | None:
    """Before a sync makes a new database: the line refusing it when a journal file of the
    folder would be refused (damaged, of a newer prep, another device's, dated over a day
    after this clock), or is missing with files after it (a gap: the sync tool has not
    brought it yet; they wait for it: said as gap_line says it), and none holds an entry to
    apply, so the sync would end in that error, or in an empty database made and exit 0;
    None when it may go on (files to apply, the others waiting as at any sync; or an empty
    folder, where a new machine starts)."""
    from prep.engine.store.reviewlog import to_us
    from prep.engine.timeutil import utcnow

    now_us = to_us(utcnow())
    refused = None
    names: dict[str, str] = {}  # (the names the headers give: labelled as a sync would)
    gaps: list[tuple[str, Path, list[Path]]] = []  # (device, the file missing, those after)
    for dev, folder in sorted(device_folders(root).items()):
        files = journal.numbered_files(folder)
        k = 1
        while k in files:
            try:
                j = journal.read(files[k], dev, now_us)
            except journal.NotAFile:  # (set aside by a sync, its later files read)
                k += 1
                continue
            except JournalError as exc:
                refused = refused or str(exc)
                break
            if j.entries:
                return None
            names[dev] = j.name
            k += 1
        else:
            if files and max(files) > k:
                later = [files[n] for n in sorted(files) if n > k]
                names.setdefault(dev, journal.header_name(later[0]) or "")
                gaps.append((dev, folder / journal.file_name(k), later))
    if refused is not None or not gaps:
        return refused
    (dev, missing, later), others = gaps[0], len(gaps) - 1
    also = f" (and as much for {count(others, 'other device')})" if others else ""
    labels = local.labels_of({d: t or d for d, t in names.items()})
    return gap_text(missing, later, labels[dev], also)


def gap_line(conn: Any, dev: str, missing: Path, later: list[Path], names: dict[str, str]) -> str:
    """The line naming device ``dev``'s journal file ``missing`` that its ``later`` files,
    in the folder, wait for; it is labelled as the summary labels it once the files read now
    are applied (``names``: the names they give), one not known here yet as their header
    names it."""
    given = dict(names)
    if (
        dev not in given
        and not conn.execute("SELECT 1 FROM sync_devices WHERE id = ?", (dev,)).fetchone()
    ):
        given[dev] = journal.header_name(later[0]) or ""
    return gap_text(missing, later, local.labels(conn, given).get(dev, dev))


def gap_text(missing: Path, later: list[Path], label: str, also: str = "") -> str:
    """One wording for a gap, at any sync and at a new machine's first (``also``: the
    other devices whose files wait as well)."""
    return (
        f"{missing}: missing, and the {count(len(later), 'journal file')} of {label} after it "
        f"wait for it{also}: let the sync tool bring it from {label} (that machine on, its sync "
        "tool running), or copy it from that machine's sync folder, then sync again"
    )


def status(store: Store, folder: Path | None, now_us: int | None = None) -> dict[str, Any]:
    """This device and every device seen (in the folder or applied before): name, id, the
    journal files applied, when its last file was written, when this device applied it; the
    files not applied yet, and of those the ones that wait for a file missing before them or
    for this machine's clock (``now_us``: the clock, µs; the wall clock when None)."""
    from prep.engine.store.reviewlog import from_us, to_us
    from prep.engine.timeutil import fmt, utcnow

    now_us = to_us(utcnow()) if now_us is None else now_us
    conn = store.conn
    me = local.device_id(conn)
    rows = conn.execute(
        "SELECT id, name, applied, wrote_at, applied_at FROM sync_devices ORDER BY n"
    ).fetchall()
    devices = {
        r[0]: {"id": r[0], "name": r[1], "applied": r[2], "wrote_at": r[3], "applied_at": r[4]}
        for r in rows
        if r[0] != me
    }
    waiting = behind = 0
    clock: list[dict[str, Any]] = []  # the devices whose next file waits for this clock
    skipped: list[str] = []
    if folder is not None and Path(folder).is_dir():
        found: dict[str, str] = {}
        for dev, f in device_folders(Path(folder), found).items():
            if dev != me and dev not in devices:
                devices[dev] = {
                    "id": dev,
                    "name": "",
                    "applied": 0,
                    "wrote_at": None,
                    "applied_at": None,
                }
            if dev != me:
                unlisted: list[str] = []
                files = journal.numbered_entries(f, unlisted)
                waiting += len([n for n in files if n > devices[dev]["applied"]])
                first = k = devices[dev]["applied"] + 1  # (files first..k-1: the run present)
                while k in files:
                    k += 1
                behind += len([n for n in files if n > k])  # (a file missing before them)
                if first in files:  # (read as a sync reads it: it and those after it wait)
                    until = _waits_for_clock(Path(files[first]), dev, now_us)
                    if until is not None:
                        # ...each until its own entries are due: the latest of them is when
                        # the last is applied (file 2 dated 2280, file 3 2300: 2300)
                        for n in range(first + 1, k):
                            until = max(until, _waits_for_clock(Path(files[n]), dev, now_us) or 0)
                        clock.append({"id": dev, "files": k - first, "until": fmt(from_us(until))})
                skipped += [
                    f"{line}: its files skipped until it can be listed" for line in unlisted
                ]
        skipped[:0] = [line for dev, line in sorted(found.items()) if dev != me]
    last = conn.execute("SELECT value FROM meta WHERE key = 'sync_last'").fetchone()
    return {
        "device": me,
        "name": local.name(conn),
        "folder": None if folder is None else str(folder),
        "last_sync": last[0] if last else None,
        "files_waiting": waiting,
        "files_behind_a_gap": behind,  # of those, the ones that wait for a file missing
        # ...and those that wait for this clock, by device: how many, until when (UTC: the
        # latest date any of them needs, when the last of them is applied)
        "files_waiting_for_clock": clock,
        "reviews_set_aside": replaced.aside_count(conn),
        "journal_files_set_aside": applied.aside_count(conn),
        "skipped": skipped,  # entries of the folder skipped at every sync, one line each
        "devices": list(devices.values()),
    }


def _waits_for_clock(path: Path, dev: str, now_us: int) -> int | None:
    """The clock (µs) from which the journal file at ``path`` is applied when it holds an
    entry dated over a day after ``now_us`` (journal.Ahead: it waits); None otherwise (it is
    applied at the next sync, or refused there, which the sync says)."""
    try:
        journal.read(path, dev, now_us)
    except journal.Ahead as exc:
        return exc.until_us
    except (JournalError, OSError):
        return None
    return None
