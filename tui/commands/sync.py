"""`prep sync` and `prep backup`: registered on the `prep` group by tui/cli.py."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from prep.engine.paths import expand_user
from prep.tui.commands.common import EXIT_USAGE, NAMED_PATH, Ctx, UsageError, not_stdin

if TYPE_CHECKING:
    from prep.engine.store import Store


def sync_dir(store: Store) -> str | None:
    """The folder `prep config sync_dir DIR` saved on this machine (never synced)."""
    return store.get_meta("sync_dir")


def _folder_line(path: Path | None, given: bool, configured: str | None) -> str:
    """Which folder --status looked at: the one on the command line, or the configured one
    (and the configured one beside a folder given)."""
    if path is None:
        return "folder: none (prep sync DIR, or prep config sync_dir DIR)"
    state = "" if path.is_dir() else " (no such folder)"
    if not given:
        return f"folder: {path}{state} (prep config sync_dir)"
    also = f"; configured: {configured}" if configured else "; none configured"
    if configured and Path(configured) == path:
        also = " (also the configured one)"
    return f"folder: {path}{state} (given){also}"


def _answers(folder: str) -> None:
    """UsageError (exit 2) naming the folder that did not answer (a network share whose server
    is gone), before anything is written; engine/sync/watch.py."""
    from prep.engine.sync.watch import unanswered

    line = unanswered(expand_user(Path(folder)))
    if line is not None:
        raise UsageError(line)


def _when(text: str | None, unset: str) -> str:
    """A stored UTC time as this machine's local ``2026-12-03 09:11`` (as the demo list shows
    a last run), ``unset`` when there is none."""
    from prep.engine.timeutil import parse

    if not text:
        return unset
    try:
        return f"{parse(text).astimezone():%Y-%m-%d %H:%M}"
    except ValueError:  # not a time (a hand edit): as stored
        return text


@click.command("sync")
@click.argument("folder", type=NAMED_PATH, required=False, metavar="[DIR]")
@click.option("--status", is_flag=True, help="The devices seen and when each last synced.")
@click.option("--json", "as_json", is_flag=True, help="With --status: one JSON object.")
@click.pass_obj
def sync_cmd(obj: Ctx, folder: str | None, status: bool, as_json: bool) -> None:
    """Merge progress with your other machines through DIR, a folder that a sync tool
    (Syncthing, Dropbox, a network share, a git repository you push) keeps in step.

    Each machine writes only its own journal under DIR and applies everyone else's. Reviews
    from every machine are kept (an undo travels as a tombstone), each card is rescheduled
    from its whole history, and the latest mark or settings change wins. Without DIR, the
    folder set by `prep config sync_dir DIR`."""
    from prep.engine.decks.deck import one_line_safe  # a folder's name may hold a newline
    from prep.engine.store import backup, resolve_db_path
    from prep.engine.sync.folders import nothing_to_apply
    from prep.engine.sync.run import JournalError, SyncError, sync, sync_folder
    from prep.engine.sync.run import status as sync_status

    if folder == "-":
        raise not_stdin("sync", "DIR is the sync folder that your machines share")
    if folder is not None and os.path.normpath(folder) == "-":  # ./-: the folder named -,
        folder = os.path.abspath(folder)  # named whole in messages (a Path of it prints "-")
    if not status:  # DIR checked before a database is opened: only a real folder makes one
        try:
            if folder is not None:
                _answers(folder)  # (a share that hangs: said, nothing made)
                root = sync_folder(Path(folder))
                if not resolve_db_path(obj.db).exists():  # (the input checked before one made)
                    problem = nothing_to_apply(root)
                    if problem is not None:
                        raise UsageError(f"{problem}; no database made")
            elif not resolve_db_path(obj.db).exists():  # (so none is configured either)
                raise UsageError("no sync folder: prep sync DIR, or prep config sync_dir DIR once")
        except SyncError as exc:
            raise UsageError(str(exc)) from None
    # --status only reads: it creates nothing; a sync from a folder may make a new machine's
    with obj.store(reading=status, create=not status) as store:
        configured = sync_dir(store)
        where = folder or configured
        if where and (status or folder is None):  # (else looked at above)
            _answers(where)
        if status:
            path = expand_user(where).absolute() if where else None
            info = sync_status(store, path)
            info["configured"] = configured
            if as_json:
                click.echo(json.dumps(info, indent=1))
                return
            click.echo(
                one_line_safe(
                    f"this device: {info['name']} ({info['device']}); "
                    f"last sync: {_when(info['last_sync'], 'never')}"
                )
            )
            click.echo(one_line_safe(_folder_line(path, folder is not None, configured)))
            for d in info["devices"]:
                click.echo(
                    one_line_safe(
                        f"  {d['name'] or '?'} ({d['id']}): {d['applied']} journal file(s) "
                        f"applied, last written {_when(d['wrote_at'], 'unknown')}, "
                        f"applied here {_when(d['applied_at'], 'never')}"
                    )
                )
            if info["reviews_set_aside"]:
                from prep.engine.study.present import count

                click.echo(
                    f"{count(info['reviews_set_aside'], 'review')} set aside (their ids given to "
                    "other reviews by a replaced journal file): kept in this database, "
                    "unscheduled, until the copy that made them syncs again (run prep sync there)"
                )
            if info["journal_files_set_aside"]:
                click.echo(
                    f"{info['journal_files_set_aside']} journal file(s) of other devices set "
                    "aside (no regular file, or unreadable and unchanged for over 10 minutes): "
                    "read again once a whole version arrives"
                )
            for line in info["skipped"]:  # (a sync says each once: listed here always)
                click.echo(one_line_safe(f"{line} (at every sync)"))
            names = {d["id"]: d["name"] for d in info["devices"]}
            for wait in info["files_waiting_for_clock"]:  # (not applied by a sync before then)
                click.echo(
                    one_line_safe(
                        f"{wait['files']} journal file(s) of {names.get(wait['id']) or '?'} "
                        f"({wait['id']}) wait for this machine's clock, until "
                        f"{_when(wait['until'], '?')}: an entry is dated over a day after "
                        "this clock (is that machine's clock right, or is this one's behind?)"
                    )
                )
            clocked = sum(wait["files"] for wait in info["files_waiting_for_clock"])
            if info["files_waiting"] > clocked:
                behind = info["files_behind_a_gap"]
                gap = f" ({behind} wait for a file missing: prep sync names it)" if behind else ""
                click.echo(
                    f"{info['files_waiting'] - clocked} journal file(s) not applied yet{gap}: "
                    "run prep sync"
                )
            return
        if not where:
            raise UsageError("no sync folder: prep sync DIR, or prep config sync_dir DIR once")
        try:
            backup.daily(store)
        except backup.BackupError as exc:
            # said, and the sync goes on, as in the app (and in Anki, whose periodic backup
            # that fails is a warning): what it sends is a copy of this machine's progress
            # elsewhere, and the sync's own backup still comes before anything is applied
            click.echo(one_line_safe(f"prep: warning: daily backup not made: {exc}"), err=True)
        try:
            result = sync(store, Path(where), backup=backup.make)
        except (SyncError, JournalError, backup.BackupError) as exc:
            done = getattr(exc, "after", None)
            if done is None:  # (nothing done)
                raise UsageError(str(exc)) from None
            result = done  # the rest done: said, then what was not, exit 2
    given = str(expand_user(Path(where)))
    for line in (
        result.forked,
        result.set_aside,
        result.held,
        result.adopted,
        *result.applied.notes,
    ):
        if line:  # (one that begins with a file's path keeps it as it is: never "Sync/...")
            first = line if line.startswith(given) else line[0].upper() + line[1:]
            click.echo(one_line_safe(first + "."))
    click.echo(one_line_safe(result.summary()))  # (a device's name as its journal says it)
    for line in result.refused:  # (a file refused holds back only its device's later files)
        UsageError(line).show()
    if result.refused:
        raise SystemExit(EXIT_USAGE)


@click.command("backup")
@click.option("--list", "as_list", is_flag=True, help="The backups, newest first.")
@click.option(
    "--restore", metavar="NAME", help="Restore this backup (the database is backed up first)."
)
@click.pass_obj
def backup_cmd(obj: Ctx, as_list: bool, restore: str | None) -> None:
    """Back up the progress database now, list the backups, or restore one.

    prep also backs up before every sync that applies entries, before a schema upgrade, an
    import or a restore, and once a day, in backups/ beside the database: of each reason the
    newest 3 and the newest of each of its last 7 days, 4 weeks and 3 months are kept."""
    from prep.engine.decks.deck import one_line_safe  # a name may hold a newline or an escape
    from prep.engine.store import backup

    if restore == "-":
        raise not_stdin(  # (a name, not a path: no ./- hint)
            "--restore", "a backup is restored by its name (see `prep backup --list`)", a_path=False
        )
    if restore == "":  # (an unset shell variable: `--restore "$NAME"` is never a new backup)
        raise UsageError("--restore '': an empty name; name a backup (see `prep backup --list`)")
    if as_list and restore is not None:
        raise UsageError("--list and --restore: give one of them")
    with obj.store(reading=as_list) as store:  # --list only reads: it creates nothing
        try:
            if as_list:
                for path in backup.listing(store.path):  # (a name may hold a newline, an ESC)
                    try:
                        size = path.stat().st_size
                    except OSError:  # (removed since it was listed: another prep's rotation)
                        continue
                    click.echo(f"{one_line_safe(path.name)}  {size:,} bytes")
                return
            if restore is not None:
                restored, saved = backup.restore(store, restore)
                click.echo(
                    one_line_safe(
                        f"restored {restored.name}; the database as it was is in "
                        f"{saved.name if saved else 'no backup'}"
                    )
                )
                return
            made = backup.make(store, "manual")
        except backup.BackupError as exc:
            raise UsageError(str(exc)) from None
    click.echo(one_line_safe(f"backed up to {made}"))
