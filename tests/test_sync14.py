"""Sync and backup messages a user can act on (sync14): an entry of the sync folder skipped is
said once, not at every sync (`prep sync --status` lists it); a file of this device's own
folder it may not read is said as that at once; a symbolic link to a device's folder is
followed, safely; `prep sync DIR` at a missing database checks DIR before it makes one;
backup names printed escaped; a read-only file system said as one; backup days are study
days."""

from __future__ import annotations

import os
import threading
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import BinaryIO

import pytest
from click.testing import CliRunner

from prep.engine.store import Store, backup, dbfile
from prep.engine.store import devices as local
from prep.engine.sync import lines
from prep.engine.sync.run import SyncError, apply_journals, read_pending, sync, sync_out
from prep.tui.cli import main
from tests.syncfaults import (
    cards,
    copied_then_written,
    each_review_once,
    refuse_listing,
    three,
    three_with_c_unlisted,
)
from tests.test_sync import T0, rate


def _cli(*args: str) -> tuple[int, str, str]:
    out = CliRunner().invoke(main, list(args))
    return out.exit_code, out.stdout, out.stderr


def _apps_sync(db: Path, folder: Path) -> list[str]:
    """The lines the app's background sync shows (sync_out, read_pending, apply_journals)."""
    with Store.open(db) as store:
        out = sync_out(store, folder)
        journals = read_pending(store, folder)
        applied = apply_journals(store, journals)
    return [x for x in (out.set_aside, out.held, *out.refused) if x] + applied.notes


# --- 1. an entry skipped: said once, listed by --status -------------------------------------


def test_an_entry_named_like_a_device_is_said_once_until_it_changes(tmp_path: Path) -> None:
    a, b, c, folder = three(tmp_path)
    for s in (a, b, c):
        s.close()
    odd = folder / "0123456789abcdef"
    os.mkfifo(odd)
    db = tmp_path / "b.db"
    first = _apps_sync(db, folder)
    assert first == [f"{odd}: a FIFO (named pipe), not a device's journal folder: skipped"]
    assert _apps_sync(db, folder) == []  # (before: the same warning at every sync)
    code, out, _err = _cli("--db", str(db), "sync", str(folder))
    assert code == 0 and out.splitlines() == [
        "sent 0 reviews, received no review, 0 cards rescheduled"
    ]
    code, out, _err = _cli("--db", str(db), "sync", "--status", str(folder))
    assert code == 0 and f"{odd}: a FIFO (named pipe)" in out and "(at every sync)" in out
    odd.unlink()  # it changes: said again
    odd.write_text("x\n")
    assert _apps_sync(db, folder) == [f"{odd}: a file, not a device's journal folder: skipped"]
    odd.unlink()  # gone, then back: said again
    assert _apps_sync(db, folder) == []
    os.mkfifo(odd)
    assert len(_apps_sync(db, folder)) == 1
    code, out, _err = _cli("--db", str(db), "sync", "--status", "--json", str(folder))
    assert '"skipped": [' in out


def test_a_device_folder_that_cannot_be_listed_is_said_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, denied, allow = three_with_c_unlisted(tmp_path, monkeypatch)
    db = tmp_path / "b.db"
    said = _apps_sync(db, folder)
    assert len(said) == 1 and said[0].startswith(f"{denied}: cannot list it (Permission denied)")
    assert _apps_sync(db, folder) == []
    code, out, _err = _cli("--db", str(db), "sync", "--status", str(folder))
    assert f"{denied}: cannot list it (Permission denied)" in out
    allow()
    assert cards(db) == ["x"]
    assert "received 1 review" in _cli("--db", str(db), "sync", str(folder))[1]
    assert cards(db) == ["x", "z"]


# --- 2. this device's own file it may not read ----------------------------------------------


def _deny(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    """Reading ``path`` refused as a file of mode 000 is (the tests may run as root)."""
    real = lines.open_file

    def read_bytes(p: Path) -> BinaryIO:
        if Path(p) == path:
            raise PermissionError(13, "Permission denied", str(p))
        return real(p)

    monkeypatch.setattr(lines, "open_file", read_bytes)


def test_a_file_of_its_own_folder_it_may_not_read_is_said_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: nothing sent for 10 minutes, "cannot be read yet (still arriving from another
    copy of this database?)". Now: the cause and what to do, sending goes on; once it can be
    read (its permissions changed: its change time moves) it is checked: a copy is found."""
    cp1, cp2, other, folder, written = copied_then_written(tmp_path)
    rate(cp2, "z", 2, T0 + timedelta(days=1, hours=2))
    _deny(monkeypatch, written)
    result = sync(cp2, folder)
    assert result.held is None and result.sent_reviews == 1
    assert result.set_aside is not None
    assert result.set_aside.startswith(f"{written}: this device's journal file cannot be read")
    assert "permission denied" in result.set_aside and "chmod u+r" in result.set_aside
    assert "arriving" not in result.set_aside
    monkeypatch.undo()
    time.sleep(0.05)  # (a later tick of the file system's clock than cp2's own file's)
    os.chmod(written, 0o644)  # (what the user does: its change time moves)
    assert sync(cp2, folder).forked is not None
    each_review_once(folder, cp1, cp2, other)


def test_its_own_folder_it_may_not_list_sends_nothing_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: taken as empty, the whole history written again (a new file) at each sync."""
    folder = tmp_path / "shared"
    folder.mkdir()
    store = Store.open(tmp_path / "a.db")
    rate(store, "x", 3, T0)
    sync(store, folder)
    mine = folder / local.device_id(store.conn)
    rate(store, "y", 3, T0 + timedelta(days=1))
    refuse_listing(monkeypatch, mine)
    for _ in range(2):
        with pytest.raises(SyncError) as caught:
            sync(store, folder)
        line = str(caught.value)
        assert line.startswith(f"{mine}: cannot list it (Permission denied)")
        assert "give this user read access" in line
    monkeypatch.undo()
    assert sorted(p.name for p in mine.iterdir()) == ["00000001.jsonl"]
    assert sync(store, folder).sent_reviews == 1
    store.close()


# --- 3. a symbolic link to a device's folder ------------------------------------------------


def test_a_device_folder_kept_elsewhere_through_a_link_is_read(tmp_path: Path) -> None:
    """Before round 13 followed, then skipped: c's reviews never arrived."""
    a, b, c, folder = three(tmp_path)
    cdir = folder / local.device_id(c.conn)
    elsewhere = tmp_path / "elsewhere"
    cdir.rename(elsewhere)
    cdir.symlink_to(elsewhere)
    for s in (a, b, c):
        s.close()
    code, out, err = _cli("--db", str(tmp_path / "b.db"), "sync", str(folder))
    assert code == 0 and err == "", out + err
    assert len(out.splitlines()) == 1 and "received 1 review from" in out
    assert cards(tmp_path / "b.db") == ["x", "z"]


@pytest.mark.parametrize("target", ["fifo", "loop", "nowhere", "file"])
def test_a_link_that_leads_to_no_folder_is_skipped_never_opened(
    tmp_path: Path, target: str
) -> None:
    a, b, c, folder = three(tmp_path)
    for s in (a, b, c):
        s.close()
    odd = folder / "0123456789abcdef"
    end = tmp_path / "end"
    if target == "fifo":
        os.mkfifo(end)
        odd.symlink_to(end)
    elif target == "loop":
        odd.symlink_to(odd)
    elif target == "nowhere":
        odd.symlink_to(end)
    else:
        end.write_text("x\n")
        odd.symlink_to(end)
    done: list[tuple[int, str, str]] = []
    worker = threading.Thread(
        target=lambda: done.append(_cli("--db", str(tmp_path / "b.db"), "sync", str(folder))),
        daemon=True,
    )
    worker.start()
    worker.join(60)
    assert not worker.is_alive(), "the sync waited on what a link leads to"
    code, out, _err = done[0]
    assert code == 0, out
    first = out.splitlines()[0]
    assert first.startswith(f"{odd}: a symbolic link to ") and "skipped" in first
    assert cards(tmp_path / "b.db") == ["x", "z"]


def test_a_journal_file_in_a_linked_folder_that_is_a_link_is_not_followed(
    tmp_path: Path,
) -> None:
    """Only regular files are read through a linked folder: a link there (to a file outside
    the folder) is never opened."""
    a, b, c, folder = three(tmp_path)
    cdir = folder / local.device_id(c.conn)
    elsewhere = tmp_path / "elsewhere"
    cdir.rename(elsewhere)
    cdir.symlink_to(elsewhere)
    secret = tmp_path / "secret.jsonl"
    secret.write_bytes((elsewhere / "00000001.jsonl").read_bytes())
    (elsewhere / "00000001.jsonl").unlink()
    (elsewhere / "00000001.jsonl").symlink_to(secret)
    for s in (a, b, c):
        s.close()
    code, out, _err = _cli("--db", str(tmp_path / "b.db"), "sync", str(folder))
    assert code == 0 and "a symbolic link, not a journal file" in out
    assert cards(tmp_path / "b.db") == ["x"]


# --- 4. `prep sync DIR` at a missing database -----------------------------------------------


@pytest.mark.parametrize("bad", ["damaged", "newer"])
def test_a_sync_that_could_apply_nothing_makes_no_database(tmp_path: Path, bad: str) -> None:
    folder = tmp_path / "shared"
    dev = folder / "0123456789abcdef"
    dev.mkdir(parents=True)
    if bad == "damaged":
        (dev / "00000001.jsonl").write_text('{"format": "prep-journal"\n')
    else:
        with Store.open(tmp_path / "a.db") as a:
            rate(a, "x", 3, T0)
            written = sync(a, folder).journal
        assert written is not None
        text = written.read_text().replace('"version": 4', '"version": 5', 1)
        text = text.replace('"version": 3', '"version": 5', 1)
        written.write_text(text)
    db = tmp_path / "new" / "p.db"
    code, out, err = _cli("--db", str(db), "sync", str(folder))
    assert code == 2, out + err
    assert err.startswith("prep: ") and err.rstrip().endswith("; no database made")
    assert len(err.splitlines()) == 1
    assert not db.exists() and not db.parent.exists()


def test_a_bad_file_beside_good_ones_still_brings_the_good(tmp_path: Path) -> None:
    """A new machine's first sync where one device's file is damaged: the others' reviews
    are applied (the database holds them), the bad file named, exit 2, as at any sync."""
    a, b, c, folder = three(tmp_path)
    for s in (a, b, c):
        s.close()
    bad = folder / "0123456789abcdef"
    bad.mkdir()
    (bad / "00000001.jsonl").write_text("not json\n")
    db = tmp_path / "new.db"
    code, out, err = _cli("--db", str(db), "sync", str(folder))
    assert code == 2 and "received" in out and str(bad / "00000001.jsonl") in err
    assert cards(db) == ["x", "z"]


# --- 5. backup --list escapes a name --------------------------------------------------------


def test_backup_list_escapes_a_newline_in_a_name(tmp_path: Path) -> None:
    db = tmp_path / "p\nq\x1b[31m.db"
    Store.open(db).close()
    code, out, _err = _cli("--db", str(db), "backup")
    assert code == 0 and out.count("\n") == 1 and "\x1b" not in out and "p\\nq" in out
    code, out, _err = _cli("--db", str(db), "backup", "--list")
    assert code == 0 and len(out.splitlines()) == 1, out
    assert out.startswith("p\\nq\\x1b[31m.db.") and "\x1b" not in out


# --- 6. a read-only file system -------------------------------------------------------------


def test_a_read_only_file_system_is_said_as_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "prep.db"
    Store.open(db).close()
    real = os.statvfs

    class Ro:
        def __init__(self, st: os.statvfs_result) -> None:
            self.f_flag = st.f_flag | os.ST_RDONLY

    monkeypatch.setattr(dbfile.os, "statvfs", lambda p: Ro(real(p)))
    assert (
        dbfile._not_writable(db) == f"the file system holding {db} is read-only (mounted read-only)"
    )
    assert dbfile._not_writable(tmp_path / "new.db") == (
        f"the file system holding {tmp_path} is read-only (mounted read-only)"
    )
    assert dbfile._fix(dbfile._not_writable(db) or "").startswith("Remount it read-write")
    monkeypatch.undo()
    assert dbfile._not_writable(db) is None


# --- 7. backup days are study days ----------------------------------------------------------


def test_the_daily_backup_is_made_each_study_day(tmp_path: Path, new_york_local_time: None) -> None:
    """9 pm one evening, 8 am the next morning (New York): two study days. Before: 11 hours
    apart, under the 24 hours it waited, so that day had no daily backup."""
    with Store.open(tmp_path / "p.db") as store:
        evening = datetime(2026, 1, 6, 2, 0, tzinfo=UTC)  # 21:00 on the 5th, New York
        assert backup.daily(store, evening) is not None
        assert backup.daily(store, evening + timedelta(hours=5)) is None  # 02:00: the 5th still
        morning = datetime(2026, 1, 6, 13, 0, tzinfo=UTC)  # 08:00 on the 6th
        assert backup.daily(store, morning) is not None
        assert backup.daily(store, morning + timedelta(hours=12)) is None


def test_retention_counts_study_days(new_york_local_time: None) -> None:
    """20:00 and 22:00 on the 5th in New York are one study day, two UTC dates."""
    early, late = datetime(2026, 1, 6, 1, 0), datetime(2026, 1, 6, 3, 0)
    assert backup._period(early, "day") == backup._period(late, "day") == date(2026, 1, 5)
    assert backup._period(datetime(2026, 1, 6, 10, 0), "day") == date(2026, 1, 6)  # 05:00
    assert backup._period(datetime(2026, 2, 1, 8, 0), "month") == (2026, 1)  # 03:00 Feb 1


# --- hostile pass ---------------------------------------------------------------------------


def test_a_sync_folder_that_cannot_be_listed_is_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: taken as empty: "received no review", exit 0, and nothing said of why."""
    a, b, c, folder = three(tmp_path)
    for s in (a, b, c):
        s.close()
    refuse_listing(monkeypatch, folder)
    code, out, err = _cli("--db", str(tmp_path / "b.db"), "sync", str(folder))
    assert code == 2 and out == ""
    assert err == (
        f"prep: {folder}: cannot list it (Permission denied); give this user read access to it\n"
    )
    monkeypatch.undo()
    assert "received 1 review" in _cli("--db", str(tmp_path / "b.db"), "sync", str(folder))[1]


def test_said_once_whatever_the_folder_is_called(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The app syncs its configured folder by its whole path, `prep sync .` by another
    spelling: the entry is one entry, said once."""
    a, b, c, folder = three(tmp_path)
    for s in (a, b, c):
        s.close()
    os.mkfifo(folder / "0123456789abcdef")
    db = tmp_path / "b.db"
    assert len(_apps_sync(db, folder)) == 1
    monkeypatch.chdir(folder)
    assert _apps_sync(db, Path(".")) == []
    assert _apps_sync(db, folder) == []


def test_nothing_sent_for_a_file_still_arriving_says_what_is_wrong_with_it(
    tmp_path: Path,
) -> None:
    """Before: "(still arriving from another copy of this database?)", not what is wrong nor
    when it stops holding sending back."""
    from tests.test_sync_stuck import _half_arrived

    _cp1, cp2, _other, folder, written, _whole = _half_arrived(tmp_path)
    held = sync(cp2, folder).held
    assert held is not None and held.startswith(f"{written}: this device's journal file")
    assert "(damaged (cut short: no end of line at the end); it may" in held
    assert "once unchanged for 10 minutes it is set aside and sending resumes" in held


def test_another_devices_file_it_may_not_read_holds_back_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: refused (exit 2) at every sync for 10 minutes, its device's later files held
    back, then set aside as "unreadable and unchanged". Now: set aside at once, the line
    saying what to do; once it can be read (its change time moves) it is applied."""
    a, b, c, folder = three(tmp_path)
    rate(c, "v", 3, T0 + timedelta(days=1))
    sync(c, folder)
    cdir = folder / local.device_id(c.conn)
    for s in (a, b, c):
        s.close()
    _deny(monkeypatch, cdir / "00000001.jsonl")
    db = tmp_path / "b.db"
    code, out, err = _cli("--db", str(db), "sync", str(folder))
    assert code == 0 and err == "", out + err
    said = out.splitlines()
    assert said[0].startswith(f"{cdir / '00000001.jsonl'}: cannot read it (Permission denied)")
    assert "chmod u+r" in said[0] and len(said) == 2
    assert cards(db) == ["v", "x"]
    assert _cli("--db", str(db), "sync", str(folder))[1].count("\n") == 1  # said once
    monkeypatch.undo()
    time.sleep(0.05)
    os.chmod(cdir / "00000001.jsonl", 0o644)
    assert "received 1 review" in _cli("--db", str(db), "sync", str(folder))[1]
    assert cards(db) == ["v", "x", "z"]


def test_backup_names_that_are_no_file_are_never_opened(tmp_path: Path) -> None:
    """A FIFO named like a backup: `backup --restore` of it waited for ever, and, stamped
    ahead of the clock, it stopped the daily backup; a dangling link of such a name stopped
    `backup --list` (exit 2, the rest unlisted)."""
    db = tmp_path / "p.db"
    with Store.open(db) as store:
        made = backup.make(store, "manual")
    assert made is not None
    fifo = made.parent / "p.db.29990101-000000-000000-daily.db"
    os.mkfifo(fifo)
    (made.parent / "p.db.29990101-000001-000000-daily.db").symlink_to(tmp_path / "nowhere")
    code, out, err = _cli("--db", str(db), "backup", "--list")
    assert code == 0 and out.splitlines() == [f"{made.name}  {made.stat().st_size:,} bytes"]
    done: list[tuple[int, str, str]] = []
    worker = threading.Thread(
        target=lambda: done.append(_cli("--db", str(db), "backup", "--restore", fifo.name)),
        daemon=True,
    )
    worker.start()
    worker.join(60)
    if worker.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("the restore waited on a FIFO")
    code, out, err = done[0]
    assert (
        code == 2
        and err == f"prep: {fifo}: a FIFO (named pipe), not a backup file; nothing restored\n"
    )
    with Store.open(db) as store:
        assert backup.daily(store, datetime(2030, 1, 2, 12, tzinfo=UTC)) is not None


def test_backup_and_sync_name_an_odd_entry_alike(tmp_path: Path, monkeypatch) -> None:
    """One wording (engine/paths.odd_kind) for an entry that is no regular file, wherever it
    is met: a socket named like a backup and one named like a device's folder are both "a
    socket" (before: the backups' own copy of the helper said "not a regular file")."""
    import socket

    db = tmp_path / "p.db"
    with Store.open(db) as store:
        made = backup.make(store, "manual")
    assert made is not None
    a, b, c, folder = three(tmp_path)
    for s in (a, b, c):
        s.close()
    name = "p.db.29990101-000000-000000-daily.db"
    socks = []
    for where, entry in ((made.parent, name), (folder, "0123456789abcdef")):
        monkeypatch.chdir(where)  # (a socket's path is limited to 108 bytes: bound by name)
        socks.append(socket.socket(socket.AF_UNIX))
        socks[-1].bind(entry)
    try:
        code, _out, err = _cli("--db", str(db), "backup", "--restore", name)
        assert (code, err) == (
            2,
            f"prep: {made.parent / name}: a socket, not a backup file; nothing restored\n",
        )
        said = _apps_sync(tmp_path / "b.db", folder)
        assert said == [
            f"{folder / '0123456789abcdef'}: a socket, not a device's journal folder: skipped"
        ]
    finally:
        for sock in socks:
            sock.close()


def test_a_sync_folder_named_with_a_newline_is_printed_escaped(tmp_path: Path) -> None:
    """The lines `prep sync` and `--status` print name the folder: one line each."""
    folder = tmp_path / "sh\nared"
    folder.mkdir()
    os.mkfifo(folder / "0123456789abcdef")
    db = tmp_path / "b.db"
    code, out, _err = _cli("--db", str(db), "sync", str(folder))
    assert code == 0 and len(out.splitlines()) == 2 and "sh\\nared" in out, out
    code, out, _err = _cli("--db", str(db), "sync", "--status", str(folder))
    assert code == 0 and "sh\nared" not in out and out.count("sh\\nared") == 2, out
