"""Backups of the progress database, as Anki makes them: a consistent copy through SQLite's
online backup API (never a file copy of a live WAL database), in ``backups/`` beside the
database, before every sync that applies entries, a schema upgrade, an import, a restore, and
once a day; kept by reason and by age (retained()), and every rescue (RESCUES) until the learner
removes it.

    prep backup --list            the backups, newest first
    prep backup --restore NAME    back up the database as it is, then put NAME in its place

A backup's name is the database's whole file name, its time (UTC) and its reason:
``prep.db.20261202-224100-123456-sync.db``. Before round 13 it was the name without its
suffix (``prep-20261202-...-sync.db``), so `p` and `p.db` in one folder shared their backups
(each listed, pruned and could restore the other's); such a name is still listed and restored
for a database of that stem, and never pruned (no new one is made, and it may be the other
database's).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sqlite3
import time
from collections import defaultdict
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from prep.engine.paths import entry_kind, sqlite_uri
from prep.engine.store import known
from prep.engine.textsafe import quoted
from prep.engine.timeutil import study_day_start, utcnow

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

    from prep.engine.store import Store

# Retention, per reason (daily, sync, import, manual, upgrade, reset...), as Anki thins its
# backups (recent, daily, weekly, monthly) but apart for each reason: a burst of one reason
# (a day of syncs, a script importing in a loop) rotates only that reason's backups and never
# removes another's. Of each reason are kept the newest RECENT, and the newest of each of its
# last 7 days, 4 ISO weeks and 3 months that have one (study days: local, from 4 am). At most PER_REASON a reason
# (17; about 12 for one a day over months), so some 30-60 files for a learner who syncs, imports
# and opens prep daily, against 20 before; a reason's tiers reach back three months where the
# newest 20 of all reasons reached back as far as the last 20 syncs.
RECENT = 3
TIERS = (("day", 7), ("week", 4), ("month", 3))
PER_REASON = RECENT + sum(n for _tier, n in TIERS)
# Copies of progress the database no longer holds, never pruned by the rotation (the learner
# removes them): the file prep had open when it was removed or replaced under it (ratings that
# are in no other file), and the database as it was before a restore put a backup in its place.
# Any 20 later backups (a sync each, imports, one a day) pushed them out, and with them the
# only copy of those ratings, while the line that made them still said `backup --restore NAME`.
RESCUES = ("replaced", "restore")
_STAMP = r"(\d{8}-\d{6}-\d{6})-([a-z]+)\.db"


def _name(db_path: Path) -> re.Pattern[str]:
    """Backup names of the database at ``db_path``: its whole file name, then ".", the time
    and the reason (two databases in one folder, `p` and `p.db`, keep their backups apart)."""
    return re.compile(re.escape(Path(db_path).name) + r"\." + _STAMP)


def _legacy_name(db_path: Path) -> re.Pattern[str]:
    """Backup names before round 13 (the stem, then "-"): listed and restored, never pruned."""
    return re.compile(re.escape(Path(db_path).stem) + "-" + _STAMP)


def _new_name(db_path: Path, now: datetime, reason: str) -> str:
    return f"{Path(db_path).name}.{now:%Y%m%d-%H%M%S-%f}-{reason}.db"


def _study_date(when: datetime) -> date:
    """The study day ``when`` (UTC, naive or aware) falls in: this machine's local date, rolling
    over at 4 am, as every other "day" of prep counts (timeutil.study_day_start). Before round
    14 backups counted UTC days: a learner at UTC-8 kept a 16:00-and-later backup as the next
    day's, and one at 02:00 local as that day's own."""
    return study_day_start(when).astimezone().date()


def _period(when: datetime, tier: str) -> object:
    day = _study_date(when)
    if tier == "day":
        return day
    if tier == "week":
        return day.isocalendar()[:2]
    return (day.year, day.month)


def retained(backups: Iterable[tuple[datetime, str, Path]]) -> set[Path]:
    """The backups the rotation keeps, of (time, reason, path): for each reason apart, its
    newest RECENT and the newest of each of its last TIERS days, weeks and months."""
    by_reason: dict[str, list[tuple[datetime, Path]]] = defaultdict(list)
    for when, reason, path in backups:
        by_reason[reason].append((when, path))
    keep: set[Path] = set()
    for made in by_reason.values():
        made.sort(key=lambda b: b[0], reverse=True)
        keep.update(p for _w, p in made[:RECENT])
        seen: dict[str, set[object]] = {tier: set() for tier, _n in TIERS}
        for when, path in made:
            for tier, most in TIERS:
                period = _period(when, tier)
                if period not in seen[tier] and len(seen[tier]) < most:
                    seen[tier].add(period)
                    keep.add(path)
    return keep


class BackupError(Exception):
    """A backup that cannot be made, listed or restored; one line."""


class BackupStopped(BackupError):
    """A copy stopped before it finished (q in the app): its half file removed, nothing else
    touched."""


def folder(db_path: Path) -> Path:
    return Path(db_path).parent / "backups"


def _names(db_path: Path) -> list[str]:
    """The names in the database's backups/ folder (none when it cannot be read)."""
    try:
        return os.listdir(folder(db_path))
    except OSError:
        return []


def _prune(db_path: Path) -> None:
    """Remove the backups of ``db_path`` the retention does not keep (retained()): only this
    database's own names, never a rescue (RESCUES) nor a name from before round 13."""
    pattern = _name(db_path)
    routine = []
    for n in _names(db_path):
        m = pattern.fullmatch(n)
        if m is not None and m.group(2) not in RESCUES:
            when = datetime.strptime(m.group(1), "%Y%m%d-%H%M%S-%f")
            routine.append((when, m.group(2), folder(db_path) / n))
    keep = retained(routine)
    for _when_made, _reason, path in routine:
        if path not in keep:
            path.unlink(missing_ok=True)


def listing(db_path: Path) -> list[Path]:
    """The backups of the database at ``db_path``, newest first (those named before round 13
    by its stem too)."""
    names = _names(db_path)
    patterns = (_name(db_path), _legacy_name(db_path))
    found = [(folder(db_path) / n, m) for n in names for m in _matches(patterns, n)]
    found.sort(key=lambda pm: pm[1].group(1), reverse=True)
    # only regular files: prep makes no other kind, and a FIFO of such a name made the
    # restore wait for ever, a dangling link stopped --list, and one stamped ahead of the
    # clock stopped the daily backup
    return [p for p, _m in found if entry_kind(p, gone="gone") is None]


def _matches(patterns: tuple[re.Pattern[str], ...], name: str) -> list[re.Match[str]]:
    """The first of ``patterns`` that ``name`` matches whole, as a list of none or one."""
    for pattern in patterns:
        m = pattern.fullmatch(name)
        if m is not None:
            return [m]
    return []


# Pages copied a step (4 MB at SQLite's default page size): a copy of gigabytes is stopped (q,
# Ctrl-C) within one step; one step in all (-1) could not be stopped until it ended
STEP_PAGES = 1024


def _stop_check(stop: Callable[[], bool] | None, target: Path) -> Callable[[int, int, int], None]:
    """The copy's progress callable, after each step: ``stop()`` true stops it (and a pending
    Ctrl-C is raised here, between two steps, instead of after the whole copy)."""

    def step(_status: int, _remaining: int, _total: int) -> None:
        if stop is not None and stop():
            raise BackupStopped(f"{target.parent}: the backup copy was stopped; nothing written")

    return step


@contextlib.contextmanager
def _snapshot(src: sqlite3.Connection) -> Iterator[None]:
    """One read transaction on ``src`` across the copy's steps: the copy is of one moment, and
    another connection's commit meanwhile does not restart it (as one step did not)."""
    if src.in_transaction:
        yield
        return
    src.execute("BEGIN")
    try:
        src.execute("SELECT count(*) FROM sqlite_master").fetchone()  # (the read begins)
        yield
    finally:
        src.execute("COMMIT")


# the files SQLite keeps beside a database: a half copy's go with it (a disk that filled up
# as the copy left WAL mode kept the .part's -wal and -shm in backups/ for good)
SIDE_FILES = ("-wal", "-shm", "-journal")


def _remove_half(tmp: Path) -> None:
    tmp.unlink(missing_ok=True)
    for suffix in SIDE_FILES:
        with contextlib.suppress(OSError):
            tmp.with_name(tmp.name + suffix).unlink(missing_ok=True)


def _copy(src: sqlite3.Connection, target: Path, stop: Callable[[], bool] | None = None) -> None:
    tmp = target.with_name(target.name + ".part")
    _remove_half(tmp)
    try:
        dst = sqlite3.connect(tmp)
        try:
            with _snapshot(src):
                src.backup(dst, pages=STEP_PAGES, progress=_stop_check(stop, target), sleep=0)
            dst.execute("PRAGMA journal_mode = DELETE")
        finally:
            dst.close()
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:  # a full disk, q, Ctrl-C: no half copy left in backups/
        _remove_half(tmp)
        raise


STALE_PART = 15 * 60  # seconds: a .part this long untouched was left by a killed prep


def _sweep_parts(db_path: Path) -> None:
    """Remove the half copies a prep killed mid-backup left (SIGKILL skips _copy's cleanup):
    this database's backup names + ".part" (and its SIDE_FILES) not written to for STALE_PART
    seconds. One being written by another prep right now is touched every moment and kept."""
    patterns = (_name(db_path), _legacy_name(db_path))
    where = folder(db_path)
    cutoff = time.time() - STALE_PART
    for n in _names(db_path):
        half = next((n[: -len(s)] for s in SIDE_FILES if n.endswith(".part" + s)), n)
        if half.endswith(".part") and _matches(patterns, half[: -len(".part")]):
            part = where / n
            try:
                if part.stat().st_mtime < cutoff:
                    part.unlink()
            except OSError:
                continue


def make(
    store: Store,
    reason: str,
    now: datetime | None = None,
    *,
    stop: Callable[[], bool] | None = None,
) -> Path | None:
    """Back up ``store``'s database (None for one in memory); then removes what the
    retention (retained(): by reason and age) no longer keeps.
    ``stop``: asked between the copy's steps; true: BackupStopped, the half copy removed.

    Inside the store's write transaction, before its first write (an import, once its file is
    checked), the committed file is copied through a connection of its own: SQLite's backup
    cannot read through a connection that holds the write lock (busy, retried for ever), and
    the lock held keeps every other writer out until the import commits."""
    if store.path is None:
        return None
    now = now or utcnow()
    where = folder(store.path)
    src = _own_reader(store.path) if store.conn.in_transaction else store.conn
    try:
        where.mkdir(parents=True, exist_ok=True)
        target = where / _new_name(store.path, now, reason)
        _sweep_parts(store.path)
        _copy(src, target, stop)
        _prune(store.path)
    except (OSError, sqlite3.Error) as exc:
        raise BackupError(f"{where}: cannot write a backup ({exc})") from None
    finally:
        if src is not store.conn:
            src.close()
    return target


def _own_reader(db_path: Path) -> sqlite3.Connection:
    try:
        return sqlite3.connect(sqlite_uri(db_path, "mode=ro"), uri=True)
    except sqlite3.Error as exc:
        raise BackupError(f"{folder(db_path)}: cannot write a backup ({exc})") from None


def daily(
    store: Store, now: datetime | None = None, *, stop: Callable[[], bool] | None = None
) -> Path | None:
    """A backup when no daily one was made this study day (local, from 4 am, as prep counts
    a day; before round 14: when the newest was more than 24 hours old, so a learner who
    studied at 9 one day and at 8 the next had none that day). Only a daily backup counts: a
    sync's or an import's, kept and rotated apart (retained()), made that day suppressed it,
    and a learner who synced every morning had no daily backups at all."""
    if store.path is None:
        return None
    now = now or utcnow()
    newest = next((p for p in listing(store.path) if _reason(p) == "daily"), None)
    if newest is not None and _when(newest) >= study_day_start(now):
        return None
    return make(store, "daily", now, stop=stop)


def _reason(path: Path) -> str:
    """Why a backup listing() found was made (its name's reason: daily, sync, ...)."""
    m = re.search(_STAMP + "$", path.name)
    assert m is not None
    return m.group(2)


def _when(path: Path) -> datetime:
    """When a backup listing() found was made (its name's time, UTC)."""
    from datetime import UTC

    m = re.search(_STAMP + "$", path.name)
    assert m is not None
    return datetime.strptime(m.group(1), "%Y%m%d-%H%M%S-%f").replace(tzinfo=UTC)


class SpaceError(BackupError):
    """Not enough free space for an upgrade's backup copy and the upgrade itself."""


# Left free beyond what the upgrade's estimate needs (the file system's own margin, the WAL)
SPACE_MARGIN = 16 * 1024 * 1024


def upgrade_space(db_path: Path, from_version: int) -> list[tuple[Path, int, int]]:
    """(folder, bytes needed there, bytes free there) for upgrading the database at
    ``db_path`` from schema ``from_version``: the backup copy (the database and its WAL) in
    ``backups/`` beside it, and, for an upgrade that rewrites the review log (schema before
    13), about the database's size again beside the database (the rewrite, the VACUUM
    after it); each with SPACE_MARGIN. One entry when both are on one file system."""
    db_path = Path(db_path)
    size = 0
    for suffix in ("", "-wal"):
        with contextlib.suppress(OSError):
            size += os.stat(f"{db_path}{suffix}").st_size
    rewrite = size if 0 < from_version < 13 else 0
    here = db_path.parent
    backups = folder(db_path) if folder(db_path).is_dir() else here
    if os.stat(backups).st_dev == os.stat(here).st_dev:
        return [(here, size + rewrite + SPACE_MARGIN, shutil.disk_usage(here).free)]
    return [
        (backups, size + SPACE_MARGIN, shutil.disk_usage(backups).free),
        (here, rewrite + SPACE_MARGIN, shutil.disk_usage(here).free),
    ]


def check_upgrade_space(db_path: Path, from_version: int) -> None:
    """Raise SpaceError (one line: where, how much is needed, how much is free) when the
    upgrade of ``db_path`` and its backup copy would not fit: checked before anything is
    written, so the database stays as it is."""
    for where, needed, free in upgrade_space(db_path, from_version):
        if free < needed:
            raise SpaceError(
                f"{where}: not enough free space to upgrade the progress database: its backup "
                f"copy and the upgrade need {_bytes(needed)}, {_bytes(free)} are free. Free "
                "some space there (or move the database and name it with --db), then start "
                "prep again; nothing was changed"
            )


def _bytes(n: int) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


def before_upgrade(db_path: Path, stop: Callable[[], bool] | None = None) -> Path | None:
    """Back up a database that is about to be upgraded (opened read-only for the copy)."""
    try:
        conn = sqlite3.connect(sqlite_uri(db_path, "mode=ro"), uri=True)
    except sqlite3.Error:
        return None
    try:
        where = folder(db_path)
        where.mkdir(parents=True, exist_ok=True)
        target = where / _new_name(db_path, utcnow(), "upgrade")
        _copy(conn, target, stop)
        return target
    except (OSError, sqlite3.Error) as exc:
        raise BackupError(f"{folder(db_path)}: cannot write a backup ({exc})") from None
    finally:
        conn.close()


# A database at least this big says that it is being backed up (the copy takes a while)
SAY_BACKUP_BYTES = 50_000_000


def before_upgrading(
    conn: sqlite3.Connection,
    db_path: Path,
    say: Callable[[str], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> int | None:
    """What every open of an older database does before it is upgraded, whoever opens it (a
    review, the app, a command that only reads: stats, export, cram, sync, backup --list):
    the free space for the backup copy and for the upgrade is checked (too little: a
    StoreError of kind "space", one line, and nothing is written), then the backup copy is made. ``conn``: the database
    just opened, before anything was written to it (not yet switched to WAL). A folder where
    no backup can be written is left to the upgrade, which says what is wrong. ``say``: told
    what is copied where, for a big database (a copy of gigabytes takes a minute). ``stop``:
    true stops the copy (q): a StoreError of kind "interrupted", nothing written. Returns
    the schema version it upgrades from, or None when no upgrade is due (a new database, a
    current one, a version that cannot be read: the open says why)."""
    from prep.engine.store.schema import SCHEMA_VERSION

    try:
        if not conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
        ).fetchone():
            return None
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        version = int(row[0]) if row is not None else 0
    except (sqlite3.Error, TypeError, ValueError):
        return None
    if not 0 < version < SCHEMA_VERSION:
        return None
    try:
        check_upgrade_space(db_path, version)
    except SpaceError as exc:
        from prep.engine.store.core import StoreError

        raise StoreError(str(exc), kind="space") from None
    with contextlib.suppress(OSError):
        size = os.stat(db_path).st_size
        if say is not None and size >= SAY_BACKUP_BYTES:
            say(
                f"backing up the progress database ({size / 1e6:,.0f} MB) to "
                f"{folder(db_path)} before the upgrade"
            )
    try:
        before_upgrade(db_path, stop)
    except BackupStopped as exc:
        from prep.engine.store.core import StoreError

        raise StoreError(str(exc), kind="interrupted") from None
    except (BackupError, OSError):  # (an unwritable folder: the upgrade says so)
        pass
    return version


def _version(conn: sqlite3.Connection) -> int | None:
    """The schema version of the database on ``conn`` (None: none to read)."""
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(row[0]) if row is not None else None
    except (sqlite3.Error, TypeError, ValueError):
        return None


def _refuse_not_prep(src: sqlite3.Connection, path: Path) -> None:
    """A BackupError when the file named as a backup holds no prep database: an empty file (a
    copy cut short, a `touch`) or another program's SQLite file. Restored, either replaced the
    whole progress (the rescue copy kept it, but "restored" was said and every setting was
    back at its default)."""
    from prep.engine.store.dbfile import StoreError, _refuse_foreign

    if not src.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]:
        raise BackupError(f"{path.name}: an empty file, not a backup of prep's; nothing restored")
    try:
        _refuse_foreign(src, path)
    except StoreError:
        raise BackupError(
            f"{path.name}: another program's SQLite file, not a backup of prep's; nothing restored"
        ) from None


def _rescue(saved: Path | None, exc: sqlite3.Error) -> str:
    """What a restore that failed says of its rescue copy ``saved`` (the database as it was,
    copied just before): on a full disk (SQLITE_FULL) the copy is removed, since SQLite rolled
    the restore's one transaction back and the database holds all the copy does (a 480 KB copy
    on a disk that is already full helps no one); after another error, where what reached
    the file is less sure, the copy is kept and named."""
    if saved is None:
        return "; nothing restored"
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None and code & 0xFF == sqlite3.SQLITE_FULL:
        saved.unlink(missing_ok=True)
        return "; nothing restored, the database is as it was"
    return f"; the database as it was is kept in {saved.name}"


def restore(store: Store, name: str) -> tuple[Path, Path | None]:
    """Put the backup ``name`` (a file name from listing()) in place of ``store``'s content,
    after backing up the database as it is. The restored database gets a new device id for
    syncing (what was made since the backup comes back from the sync folder, under the old
    one). Returns (the backup restored, the backup of what was replaced)."""
    if store.path is None:
        raise BackupError("a database in memory has no backups")
    found = [p for p in listing(store.path) if p.name == name]
    if not found:
        odd = folder(store.path) / name
        kind = (
            entry_kind(odd, gone="gone")
            if "/" not in name and name not in ("", ".", "..")
            else "gone"
        )
        if kind != "gone" and _matches((_name(store.path), _legacy_name(store.path)), name):
            raise BackupError(f"{odd}: {kind}, not a backup file; nothing restored")
        raise BackupError(f"no backup named {quoted(name)} (see `prep backup --list`)")
    from prep.engine.store import samefile

    # the copy below writes through SQLite's backup API, not a transaction: the check a
    # transaction makes before its COMMIT (is the path still the file opened?) is made here
    if store._file is not None and (moved := samefile.changed(store.path, store._file)):
        raise samefile.refuse(store, moved)
    from prep.engine.store.schema import SCHEMA_VERSION

    saved: Path | None = None
    try:
        # quoted: a `#` or `?` in the path would end it, and the URI then names another
        # file (created empty and restored over the database: everything lost); its bytes
        # quoted, not its text (a name that is not UTF-8 raised UnicodeEncodeError)
        src = sqlite3.connect(sqlite_uri(found[0], "mode=ro"), uri=True)
        try:
            _refuse_not_prep(src, found[0])  # (before anything is written)
            older = _version(src)
            if older is not None and older > SCHEMA_VERSION:
                raise BackupError(
                    f"{found[0].name}: made by a newer prep (schema {older}; this one reads up "
                    f"to {SCHEMA_VERSION}); upgrade prep to restore it. Nothing restored"
                )
            if older is not None and older < SCHEMA_VERSION:
                # a backup made before an upgrade is of the older schema: the room for its
                # upgrade is checked before anything is written (too little: nothing changed)
                try:
                    check_upgrade_space(found[0], older)
                except SpaceError as exc:
                    raise BackupError(f"not restored: {exc}") from None
            saved = make(store, "restore")
            src.backup(store.conn)
            known.forget(store)  # (what a rating kept read is of the old content)
        finally:
            src.close()
    except sqlite3.Error as exc:
        raise BackupError(f"{found[0]}: cannot restore it ({exc}){_rescue(saved, exc)}") from None
    from prep.engine.store import devices as local
    from prep.engine.store.core import StoreError

    # then upgraded as every other open upgrades: the room asked again, the backup copy made
    try:
        before_upgrading(store.conn, store.path)
    except StoreError as exc:
        raise BackupError(f"restored {found[0].name}, not yet upgraded: {exc}") from None
    store._migrate()
    with store.transaction():
        local.new_device(store.conn)
    return found[0], saved
