"""The devices' folders of a sync folder (split from journal.py): which entries named like a
device's folder are read, and, before a sync makes a new database, whether the folder holds
anything it could apply."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from prep.engine.sync import journal
from prep.engine.sync.journal import DEVICE_RE, JournalError, odd_kind

__all__ = ["device_folders", "nothing_to_apply"]


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
        real = set()
        for name in out:
            with contextlib.suppress(OSError):
                st = os.stat(root / name)
                real.add((st.st_dev, st.st_ino))
        for name, st in sorted(links.items()):
            if (st.st_dev, st.st_ino) in real:
                if odd is not None:
                    odd[name] = (
                        f"{root / name}: a symbolic link to another device's folder of this "
                        "sync folder, not a device's journal folder: skipped"
                    )
                continue
            real.add((st.st_dev, st.st_ino))
            out[name] = root / name
    return out


def nothing_to_apply(root: Path) -> str | None:
    """Before a sync makes a new database: the line refusing it when a journal file of the
    folder would be refused (damaged, of a newer prep, another device's) and none holds an
    entry to apply, so the sync would end in that error with an empty database made; None
    when it may go on (files to apply, the others waiting as at any sync; or an empty folder,
    where a new machine starts)."""
    refused = None
    for dev, folder in sorted(device_folders(root).items()):
        files = journal.numbered_files(folder)
        k = 1
        while k in files:
            try:
                j = journal.read(files[k], dev)
            except journal.NotAFile:  # (set aside by a sync, its later files read)
                k += 1
                continue
            except JournalError as exc:
                refused = refused or str(exc)
                break
            if j.entries:
                return None
            k += 1
    return refused
