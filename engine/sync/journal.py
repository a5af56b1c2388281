"""The journal files in the sync folder: one folder per device, numbered files in it.

    DIR/<device id>/00000001.jsonl, 00000002.jsonl, ...

A device writes only its own folder, and a file once in place is never rewritten: each sync
that has something new puts one more file in place (written to a temporary name, flushed to
disk, then linked to its final name, which fails rather than replace a file of that name).
Other names in DIR (a sync tool's own files, a ``.git``) are left alone.

A file is JSON lines: a header, then one entry a line::

    {"format": "prep-journal", "version": 1, "device": ID, "name": HOST, "file": N,
     "written_at": "...Z", "entries": COUNT, "params": {"P": {replay params}, ...}}
    ["r", SEQ, CARD_ID, RATING, AT_US, DURATION_MS|null, P]   a review
    ["r", SEQ, CARD_ID, RATING, AT_US, DURATION_MS|null, P, ORIGIN_DEVICE_ID, ORIGIN_SEQ]
                                  a review set aside here, taken as this device's own (v4)
    ["R", DEVICE_ID, SEQ, CARD_ID, RATING, AT_US, DURATION_MS|null, P]
                                  another device's review this one holds by an import (v2)
    ["u", DEVICE_ID, SEQ, CARD_ID, AT_US]                      the undo of a review (a tombstone)
    ["u", DEVICE_ID, SEQ, CARD_ID, AT_US, REVIEW_AT_US, RATING]
                                  the same, naming the review it undid (its time, rating) (v4)
    ["m", STAMP, CARD_ID, AT_US, SUSPENDED, BURIED_UNTIL_US|null, FLAGGED]   a card's marks
    ["s", STAMP, AT_US, {study settings}]                      the settings
    ["d", SEQ, {demo run summary}]                             a demo run
    ["M", DEVICE_ID, STAMP, CARD_ID, AT_US, SUSPENDED, BURIED_UNTIL_US|null, FLAGGED]
                                  another device's mark this one took in by an import (v3)
    ["S", DEVICE_ID, STAMP, AT_US, {study settings}]   another device's settings, the same (v3)
    ["D", DEVICE_ID, SEQ, {demo run summary}]
                                  a demo run of this database's id before a restore (v3)

A review's id is its origin (the device that made it, its sequence number there) wherever it
travels: a review one device took in by `prep import` is passed on ("R") with the id it has,
so the same review arriving from its own device is held once. Version 2 added "R" and the
replay parameters' "fuzz_by" (the fuzz seeded by the review's id); version 1 files are read.
A mark, the settings or a demo run passed on the same way keeps its origin's id and clock
(engine/sync/relay.py): version 3 added "M", "S" and "D"; a file holding none of them is
written as version 2, so that a prep of the last version still reads it. Version 4 added the
replay parameters' "fuzz_by": "card" (the fuzz seeded by the card and its history: the same
interval after an undo), and lets an undo say which review it undid (a copy of a database
tells its undo of a review both copies hold from one of a review it made since under the
same number: engine/sync/fork.py) and a review name the id it was made under
(engine/sync/adopted.py); a file holding none of these is written as version 3 or 2, and an
undo of an older file is applied as before. A file of a newer version than this prep reads
is refused in one line, nothing of it applied.

Reading is strict: a file from another machine may be damaged, cut short, hostile or from a
newer prep; every field is checked before anything is applied, and a bad one is refused in
one line naming the file and line.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import stat
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from prep.engine.paths import odd_kind
from prep.engine.study.scheduler import FUZZ_BY_CARD, Scheduler, Settings
from prep.engine.sync import stale
from prep.engine.textsafe import quoted
from prep.engine.timeutil import fmt, parse
from prep.engine.transfer.fields import loads_strict

FORMAT = "prep-journal"
VERSION = 4
RELAYED = frozenset("MSD")  # the entry kinds of version 3
NAMED_UNDO = 7  # the fields of an undo naming the review it undid (version 4)


def version_for(entries: list[list[Any]], params: dict[str, dict[str, Any]]) -> int:
    """The lowest version a file of these entries and params can be written as, so that a
    prep of an older version reads what it can replay and refuses, in one line, what not."""
    if any(p.get("fuzz_by") == FUZZ_BY_CARD for p in params.values()) or any(
        len(e) == NAMED_UNDO if e[0] == "u" else e[0] == "r" and len(e) == 9 for e in entries
    ):
        return 4
    return 3 if any(e[0] in RELAYED for e in entries) else 2


DEVICE_RE = re.compile(r"[0-9a-f]{16}")
FILE_RE = re.compile(r"([0-9]{8})\.jsonl")
LAST_FILE = 99_999_999  # the last number FILE_RE names
MAX_FILE_BYTES = 1 << 30  # a first journal of a million reviews is ~60 MB
# The longest line read: the largest a prep writes is a header with the most scheduler
# parameters the reader takes (10,000, each ~1 KB with 21 weights and 10 steps a list at full
# precision: 10.4 MB measured); an entry is under 1 KB (an "R" with a 200-character id of
# 4-byte characters: 884 bytes). A longer line is refused once this much of it is read.
MAX_LINE = 16 << 20
MAX_ID = 200  # a card id's length
MAX_US = 253_402_300_799_000_000  # 9999-12-31T23:59:59Z in microseconds since the epoch
MAX_SEQ = 1 << 62
# How far after this machine's clock another device's entry is applied: a day, as far as
# `prep import` takes (engine/transfer/importer.AHEAD): a machine whose clock runs hours fast
# (or keeps local time as UTC, at most 14 hours off) syncs; a review of 2280 is no review yet,
# and once taken would be in every export of this database, which no import takes.
AHEAD_US = 86_400_000_000
# the clock of each kind of entry ("R", "M", "S": another device's, passed on: its origin's)
_CLOCK = {
    "r": (4, "a review"),
    "u": (4, "an undo"),
    "m": (3, "a mark"),
    "s": (2, "a settings change"),
}
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class JournalError(Exception):
    """A journal that cannot be applied; the message (one line) names the file."""

    after: Any = None  # raised by run.sync once the rest was done: its SyncResult


class NewerJournal(JournalError):
    """A journal written by a newer prep: readable once this one is upgraded."""


class NotAFile(JournalError):
    """An entry named like a journal file that is no regular file (a FIFO, a symbolic link, a
    folder, a device): never a journal, never opened, whatever a sync tool does later, so it
    holds nothing up; ``kind`` says what it is, in words."""

    def __init__(self, path: Path | str, kind: str) -> None:
        super().__init__(f"{path}: {kind}, not a journal file")
        self.kind = kind


class Denied(JournalError):
    """A journal file this user may not read (permission denied): it never becomes readable
    by itself (a file still arriving is being written, not refused), so it waits for nothing;
    the line says what to do."""

    def __init__(self, path: Path | str, why: str) -> None:
        super().__init__(
            f"{path}: cannot read it ({why}): give this user read access to it "
            f"(chmod u+r, or chown it) and sync again"
        )


class Ahead(JournalError):
    """Another device's file with an entry dated more than AHEAD_US after this machine's
    clock: not applied yet, never set aside; it and its device's later files wait until this
    clock reaches it (read again at every sync), as ``prep import`` refuses such a file.
    ``until_us``: the clock (µs since the epoch, UTC) from which the whole file is taken."""

    until_us = 0


class Missing(JournalError):
    """A device's next journal file not in the folder while later ones are (the sync tool
    has not brought it yet, or lost it): they wait for it; the line names the file, the
    device and what to do."""


@dataclass
class Journal:
    path: Path
    device: str
    name: str
    number: int
    written_at: str
    params: dict[str, dict[str, Any]]
    entries: list[list[Any]] = field(default_factory=list)
    restart: bool = False  # the first file of a series new to this database (run._pending)
    stat: list[int] | None = None  # the file as it was read (engine/sync/applied.py)
    aside: bool = False  # stands for a file that stays unreadable, set aside (no entries)


# opening an entry never waits (a FIFO) nor follows a link (where the system has the flags)
_NO_WAIT = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)


def file_name(number: int) -> str:
    return f"{number:08d}.jsonl"


def numbered_files(folder: Path) -> dict[int, Path]:
    """The journal files of one device's folder, by number (other names ignored)."""
    return {n: Path(entry.path) for n, entry in numbered_entries(folder).items()}


def numbered_entries(folder: Path, odd: list[str] | None = None) -> dict[int, os.DirEntry[str]]:
    """The journal files of one device's folder, by number, as directory entries (their stats
    without a Path made for each file: a sync looks at every file applied, run._pending). A
    folder that cannot be listed (permission denied) holds none, said in ``odd`` (the caller
    says what follows); one gone meanwhile holds none, nothing said."""
    out: dict[int, os.DirEntry[str]] = {}
    try:
        with os.scandir(folder) as found:
            for entry in found:
                m = FILE_RE.fullmatch(entry.name)
                if m:
                    out[int(m.group(1))] = entry
    except FileNotFoundError:
        pass
    except OSError as exc:
        if odd is not None:
            odd.append(f"{folder}: cannot list it ({exc.strerror or exc})")
    return out


# --- writing -------------------------------------------------------------------------------


def write(folder: Path, header: dict[str, Any], entries: list[list[Any]]) -> Path:
    """Put one more journal file in ``folder`` (this device's), numbered after the last one
    there; returns its path. Never replaces a file: a name taken meanwhile (another prep on
    the same database syncing at the same moment) moves on to the next number.

    The file is written under a temporary name, locked while this prep writes it, so that
    another prep cleaning up after a sync killed mid-write removes only a temporary file
    nobody holds (and if it took ours in the instant before our lock, we start again).
    ``folder`` a symbolic link: written through only to a folder of its own (own_link)."""
    from prep.engine.sync.folders import own_link  # (folders.py reads this module's files)

    ours = own_link(folder, header["device"])  # (JournalError: a link leading elsewhere)
    try:
        mode = (os.stat if ours else os.lstat)(folder).st_mode
    except FileNotFoundError:
        mode = stat.S_IFDIR  # (made below)
    if not stat.S_ISDIR(mode):  # (a file, a FIFO of this device's name: "File exists" said)
        kind = odd_kind(mode) or "a file"
        raise JournalError(f"{folder}: {kind}, not a folder; prep writes only a folder of its own")
    folder.mkdir(parents=True, exist_ok=True)
    stale.remove(folder, header["device"], fcntl)
    lines = [json.dumps(e, ensure_ascii=False, separators=(",", ":")) for e in entries]

    def data(number: int) -> bytes:  # the header names the file's number
        head = json.dumps({**header, "file": number, "entries": len(entries)}, ensure_ascii=False)
        return ("\n".join([head, *lines]) + "\n").encode()

    for _attempt in range(100):
        tmp = folder / f".tmp-{secrets.token_hex(8)}"
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(tmp, flags, 0o644)
        try:
            _lock(fd)
            number = max(numbered_files(folder), default=0) + 1
            while True:
                if number > LAST_FILE:  # (a name past it is no journal's: never read)
                    raise JournalError(
                        f"{folder / file_name(LAST_FILE)}: the last number a journal file can "
                        "take is used; nothing can be written after it (remove it if this "
                        "machine did not write it)"
                    )
                _put(fd, data(number))
                target = folder / file_name(number)
                try:
                    os.link(tmp, target)  # fails if the name exists: never replaces a file
                    break
                except FileExistsError:
                    number += 1
        except FileNotFoundError:
            if folder.is_dir():
                continue  # our temporary file was removed by another prep: again
            raise
        finally:
            tmp.unlink(missing_ok=True)
            os.close(fd)
        _fsync_dir(folder)
        return target
    raise JournalError(f"{folder}: cannot put a journal file in place (busy)")


def _put(fd: int, data: bytes) -> None:
    """``data`` as the whole content of the open file ``fd``, flushed to disk."""
    os.ftruncate(fd, 0)
    view = memoryview(data)
    done = 0
    while done < len(data):
        done += os.pwrite(fd, view[done:], done)
    os.fsync(fd)


try:
    import fcntl
except ImportError:  # (Windows: no advisory locks; a stale file is then one an hour old)
    fcntl = None  # type: ignore[assignment]


def _lock(fd: int) -> None:
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_EX)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# --- reading -------------------------------------------------------------------------------


def written_at(path: str | Path) -> str | None:
    """The ``written_at`` of a journal file's header (its first line only), or None when it
    cannot be read; what tells two files of one number apart (a folder made again)."""
    value = _head(path).get("written_at")
    return value if isinstance(value, str) else None


def header_name(path: str | Path) -> str | None:
    """The device name a journal file's header gives (its first line only), or None."""
    value = _head(path).get("name")
    return value[:64] if isinstance(value, str) and value.strip() else None


def _head(path: str | Path) -> dict[str, Any]:
    """A journal file's header (its first line), {} when it cannot be read. Read as read()
    reads it (lines.first_line: never a FIFO waited on, never a link followed, a line of
    up to MAX_LINE bytes: a header with many parameter sets is over 1 MiB)."""
    from prep.engine.sync.lines import first_line

    try:
        head = loads_strict(first_line(Path(path)).decode("utf-8"))
    except (OSError, ValueError, JournalError):  # (no regular file, a line too long)
        return {}
    return head if isinstance(head, dict) else {}


class _Bad(Exception):
    pass


def _int(v: Any, lo: int, hi: int, what: str) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
        raise _Bad(f"{what} must be a whole number between {lo} and {hi}, got {_cut(v)}")
    return v


def _card_id(v: Any) -> str:
    if not isinstance(v, str) or not 0 < len(v) <= MAX_ID or _CONTROL.search(v):
        raise _Bad(f"a card id must be text of 1 to {MAX_ID} printable characters, got {_cut(v)}")
    return v


def _bit(v: Any, what: str) -> int:
    if v not in (0, 1) or isinstance(v, float):
        raise _Bad(f"{what} must be 0 or 1, got {_cut(v)}")
    return int(v)


def _device(v: Any) -> str:
    if not isinstance(v, str) or not DEVICE_RE.fullmatch(v):
        raise _Bad(f"a device id must be 16 hex digits, got {_cut(v)}")
    return v


_PASSED_ON = {"M": 8, "S": 5, "D": 4}  # another device's entry: its origin, then its fields


def _check_entry(e: Any, params: dict[str, Any], version: int = VERSION) -> None:
    if not isinstance(e, list) or not e or not isinstance(e[0], str):
        raise _Bad("an entry must be a list starting with its kind")
    kind, n = e[0], len(e)
    if kind == "r" and n == 9 and version >= 4:  # one set aside, taken in (adopted.py)
        _device(e[7])
        _int(e[8], 1, MAX_SEQ, "a sequence number")
        _check_entry(e[:7], params)
    elif kind == "r" and n == 7:
        _int(e[1], 1, MAX_SEQ, "a sequence number")
        _card_id(e[2])
        _int(e[3], 1, 4, "a rating")
        _int(e[4], 0, MAX_US, "a time")
        if e[5] is not None:
            _int(e[5], 0, MAX_SEQ, "a duration")
        if not isinstance(e[6], str) or e[6] not in params:
            raise _Bad(f"a review names scheduler parameters {_cut(e[6], 20)} the header lacks")
    elif kind == "R" and n == 8:
        _device(e[1])
        _check_entry(["r", *e[2:]], params)
    elif kind == "u" and (n == 5 or (n == NAMED_UNDO and version >= 4)):
        _device(e[1])
        _int(e[2], 1, MAX_SEQ, "a sequence number")
        _card_id(e[3])
        _int(e[4], 0, MAX_US, "a time")
        if n == NAMED_UNDO:
            _int(e[5], 0, MAX_US, "an undone review's time")
            _int(e[6], 1, 4, "an undone review's rating")
    elif kind == "m" and n == 7:
        _int(e[1], 1, MAX_SEQ, "a stamp")
        _card_id(e[2])
        _int(e[3], 0, MAX_US, "a time")
        _bit(e[4], "suspended")
        if e[5] is not None:
            _int(e[5], 0, MAX_US, "a bury's end")
        _bit(e[6], "flagged")
    elif kind == "s" and n == 4:
        _int(e[1], 1, MAX_SEQ, "a stamp")
        _int(e[2], 0, MAX_US, "a time")
        if not isinstance(e[3], dict):
            raise _Bad("settings must be an object")
        try:
            Settings.from_dict(e[3]).validated()
        except (TypeError, ValueError, AttributeError) as exc:
            raise _Bad(f"settings: {str(exc).splitlines()[0]}") from None
        if set(e[3]) - set(Settings.__dataclass_fields__):
            raise _Bad(
                f"settings: unknown keys {sorted(set(e[3]) - set(Settings.__dataclass_fields__))}"
            )
    elif kind == "d" and n == 3:
        _int(e[1], 1, MAX_SEQ, "a sequence number")
        _check_run(e[2])
    elif n == _PASSED_ON.get(kind):
        _device(e[1])  # another device's, passed on: the origin, then its own entry's fields
        _check_entry([kind.lower(), *e[2:]], params)
    else:
        raise _Bad(f"unknown entry {_cut(kind, 20)} with {n} fields")


_RUN_TEXT = ("name", "device", "device_name", "dtype", "scale")


def _check_run(run: Any) -> None:
    from prep.engine.transfer.fields import _depth_over  # the export's bound on nesting

    if not isinstance(run, dict) or set(run) != {
        *_RUN_TEXT,
        "seed",
        "passed",
        "seconds",
        "metrics",
        "ran_at",
    }:
        raise _Bad(
            "a demo run must have name, device, device_name, dtype, scale, seed, passed, seconds, metrics, ran_at"
        )
    for key in _RUN_TEXT:
        v = run[key]
        if not (v is None and key not in ("name", "device")) and not (
            isinstance(v, str) and len(v) <= 200 and not _CONTROL.search(v)
        ):
            raise _Bad(f"a demo run's {key} must be short printable text, got {_cut(v)}")
    if run["seed"] is not None:
        _int(run["seed"], -(1 << 63), (1 << 63) - 1, "a demo run's seed")
    _bit(run["passed"], "a demo run's passed")
    s = run["seconds"]
    if not isinstance(s, int | float) or isinstance(s, bool) or not 0 <= s <= 1e9:
        raise _Bad(f"a demo run's seconds must be a number of seconds, got {_cut(s)}")
    if not isinstance(run["metrics"], dict) or _depth_over(run["metrics"], 64):
        raise _Bad("a demo run's metrics must be an object (nested at most 64 levels)")
    t = run["ran_at"]
    if not isinstance(t, str) or parse_time(t) is None:
        raise _Bad(f"a demo run's ran_at must be a UTC time, got {_cut(t)}")


def parse_time(text: str) -> datetime | None:
    try:
        value = parse(text)
    except (TypeError, ValueError):
        return None
    return value if value is not None and fmt(value) == text else None


def _cut(value: Any, n: int = 40) -> str:
    """``value`` as textsafe.quoted writes it in at most ``n`` characters: text cut short
    keeps its closing quote ('xxxx'…), a list or mapping is named by its kind and size."""
    return quoted(value, n)


def _dated_ahead(path: Path, entries: list[list[Any]], now_us: int) -> None:
    """Ahead, naming the first entry dated more than AHEAD_US after ``now_us``."""
    from prep.engine.store.reviewlog import from_us

    first = None
    latest = 0  # (the file waits until this clock is a day short of its latest entry)
    for line, e in enumerate(entries, 2):
        kind = e[0].lower() if e[0] in _PASSED_ON or e[0] == "R" else e[0]
        i, what = _CLOCK.get(kind, (0, ""))
        at = e[i + (kind != e[0])] if i else 0
        latest = max(latest, at)
        if first is None and at > now_us + AHEAD_US:
            first = (line, what, at)
    if first is not None:
        line, what, at = first
        ahead = Ahead(
            f"{path}: line {line}: {what} dated {fmt(from_us(at))}, more than a day after "
            f"this machine's clock ({fmt(from_us(now_us))}; is that machine's clock right, or is this one's behind?): "
            "applied once this clock reaches it; nothing of the file applied yet"
        )
        ahead.until_us = latest - AHEAD_US
        raise ahead


def read(path: Path, device: str, now_us: int | None = None) -> Journal:
    """Read and check one journal file of ``device``'s folder; JournalError (one line naming
    the file and line) when it cannot be applied; with ``now_us`` (this machine's clock),
    Ahead for a file with an entry dated more than a day after it (it waits)."""
    from prep.engine.sync.lines import read_lines

    try:
        lines, ended = read_lines(path)
    except PermissionError as exc:
        raise Denied(path, exc.strerror or str(exc)) from None
    except OSError as exc:
        raise JournalError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if not ended:
        raise JournalError(
            f"{path}: damaged (cut short: no end of line at the end); nothing of it applied"
        )
    line = 1
    try:
        if not lines:
            raise _Bad("empty")
        head = loads_strict(lines[0])
        if not isinstance(head, dict) or head.get("format") != FORMAT:
            raise _Bad(f"not a prep journal (format {FORMAT!r} expected)")
        version = head.get("version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise _Bad(f"version must be a whole number, got {_cut(version, 20)}")
        if version > VERSION:
            raise NewerJournal(
                f"{path}: written by a newer prep (journal v{version}; this prep reads "
                f"v{VERSION}); upgrade prep on this machine; nothing of it applied"
            )
        if head.get("device") != device:
            raise _Bad(
                f"the header names device {str(head.get('device'))[:20]!r}, not its folder's"
            )
        number = _int(head.get("file"), 1, LAST_FILE, "the file number")
        if file_name(number) != path.name:
            raise _Bad(f"the header names file {number}, not this one")
        name = head.get("name")
        if not isinstance(name, str) or len(name) > 64 or _CONTROL.search(name):
            raise _Bad("the device name must be short printable text")
        written = head.get("written_at")
        if not isinstance(written, str) or parse_time(written) is None:
            raise _Bad("written_at must be a UTC time")
        params = head.get("params")
        if not isinstance(params, dict) or len(params) > 10_000:
            raise _Bad("params must be an object")
        for key, p in params.items():
            if not isinstance(p, dict):
                raise _Bad(f"params {_cut(key, 20)} must be an object")
            try:
                Scheduler.from_replay_params(p)
            except (TypeError, ValueError, AttributeError) as exc:
                raise _Bad(f"params {_cut(key, 20)}: {str(exc).splitlines()[0]}") from None
        count = head.get("entries")
        if count != len(lines) - 1:
            raise _Bad(
                f"the header counts {_cut(count, 20)} entries, the file has {len(lines) - 1} (cut short?)"
            )
        journal = Journal(path, device, name, number, written, params)
        for i, text_line in enumerate(lines[1:], 2):
            line = i
            entry = loads_strict(text_line)
            _check_entry(entry, params, version)
            journal.entries.append(entry)
        if now_us is not None:
            _dated_ahead(path, journal.entries, now_us)
    except _Bad as exc:
        raise JournalError(f"{path}: line {line}: {exc}; nothing of it applied") from None
    except ValueError as exc:
        raise JournalError(f"{path}: line {line}: damaged ({exc}); nothing of it applied") from None
    return journal
