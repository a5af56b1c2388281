"""Sync's remaining rough edges (sync15): two devices of one name told apart in sync's lines;
a file name holding bytes that are not UTF-8 printed escaped; `prep sync` goes on when the
daily backup fails, as the app does; a folder whose devices' histories all start with a
missing file says so and makes no database."""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from prep.engine.store import Store
from prep.engine.store import devices as local
from prep.engine.sync import journal
from prep.engine.sync.run import sync
from prep.engine.sync.stale import STALE_TMP_S
from prep.tui.cli import main
from tests.test_sync import T0, rate


def _cli(*args: str) -> tuple[int, str, str]:
    out = CliRunner().invoke(main, list(args))
    return out.exit_code, out.stdout, out.stderr


# --- 1. two devices of one name -------------------------------------------------------------


def _named(tmp_path: Path, *names: str) -> list[Store]:
    out = []
    for i, name in enumerate(names):
        s = Store.open(tmp_path / f"{i}.db")
        local.set_name(s.conn, name)
        out.append(s)
    return out


def test_two_devices_of_one_name_are_told_apart(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    vm1, vm2, laptop, other = _named(tmp_path, "vm", "vm", "laptop", "desk")
    for i, s in enumerate((vm1, vm2, laptop)):
        rate(s, f"c{i}", 3, T0 + timedelta(minutes=i))
        rate(s, f"d{i}", 3, T0 + timedelta(minutes=i))
        sync(s, folder)
    id1, id2 = (local.device_id(s.conn)[:4] for s in (vm1, vm2))
    assert id1 != id2  # (random ids: 1 in 65536 alike; labels() takes more then, tested below)
    summary = sync(other, folder).summary()
    # (before: "received 4 reviews from vm, 2 reviews from laptop")
    assert f"2 reviews from vm ({id1})" in summary and f"2 reviews from vm ({id2})" in summary
    assert "2 reviews from laptop," in summary  # a name only one device has: as it is
    # the other vm: this device's own name is one of the two
    assert f"2 reviews from vm ({id2})" in sync(vm1, folder).summary()
    code, out, _err = _cli("--db", str(tmp_path / "3.db"), "sync", str(folder))
    assert code == 0 and "received no review" in out
    for s in (vm1, vm2, laptop, other):
        s.close()


def test_a_device_without_a_name_on_a_host_of_that_name_is_told_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two HOMEs of one machine, neither named: both say the host's name."""
    import socket

    monkeypatch.setattr(socket, "gethostname", lambda: "vm")
    folder = tmp_path / "shared"
    folder.mkdir()
    a, b = (Store.open(tmp_path / f"{n}.db") for n in "ab")
    rate(a, "x", 3, T0)
    sync(a, folder)
    summary = sync(b, folder).summary()
    assert summary.startswith(
        f"sent 0 reviews, received 1 review from vm ({local.device_id(a.conn)[:4]}),"
    )
    a.close()
    b.close()


def test_labels_take_as_much_of_the_id_as_tells_them_apart(tmp_path: Path) -> None:
    with Store.open(tmp_path / "p.db") as s:
        local.set_name(s.conn, "desk")
        ids = ["a1b2c3d4e5f60001", "a1b2c3d4e5f60002", "a1b2ffffffffffff", "77ff000000000000"]
        for dev_id, name in zip(ids, ["vm", "vm", "vm", "laptop"], strict=True):
            local.device_n(s.conn, dev_id, name)
        local.device_n(s.conn, "0000111122223333", "desk")  # this device's name too
        local.device_n(s.conn, "4444555566667777", "")  # no name: its id
        got = local.labels(s.conn)
        me = local.device_id(s.conn)
    assert got["a1b2c3d4e5f60001"] == "vm (a1b2c3d4e5f60001)"
    assert got["a1b2c3d4e5f60002"] == "vm (a1b2c3d4e5f60002)"
    assert got["a1b2ffffffffffff"] == "vm (a1b2ffffffffffff)"
    assert got["77ff000000000000"] == "laptop"
    assert got["0000111122223333"] == "desk (0000)" and got[me] == f"desk ({me[:4]})"
    assert got["4444555566667777"] == "4444555566667777"


# --- 2. a file name's bytes that are not UTF-8 ----------------------------------------------

ODD_NAME = os.fsdecode(b"sh\xff\x07ared")  # a byte not UTF-8 (\udcff) and a BEL
SHOWN = "sh\\xff\\x07ared"


def test_a_name_with_bytes_not_utf8_is_escaped_as_those_bytes() -> None:
    from prep.demos import safetext
    from prep.engine.decks import deck

    for escape in (deck.one_line_safe, deck.text_safe, safetext.one_line_safe):
        assert escape(f"{ODD_NAME}: x") == f"{SHOWN}: x"
        assert escape("\ud800 ÿ é") == "\\ud800 ÿ é"  # (a lone surrogate; letters kept)
        escape(f"{ODD_NAME}").encode("ascii")  # (nothing left a terminal must encode)


def test_a_sync_folder_named_with_bytes_not_utf8_is_printed_escaped(tmp_path: Path) -> None:
    folder = tmp_path / ODD_NAME
    folder.mkdir()
    assert os.fsencode(folder).endswith(b"sh\xff\x07ared")  # (a real name of those bytes)
    with Store.open(tmp_path / "a.db") as a:
        rate(a, "x", 3, T0)
        sync(a, folder)
    os.mkfifo(folder / "0123456789abcdef")
    bad = folder / "fedcba9876543210"
    bad.mkdir()
    (bad / "00000001.jsonl").write_text("not json\n")
    db = str(tmp_path / "b.db")
    code, out, err = _cli("--db", db, "sync", str(folder))
    assert code == 2, out + err
    shown = str(tmp_path / SHOWN)
    assert out.startswith(f"{shown}/0123456789abcdef: a FIFO")  # (before: "\udcff" as "?")
    assert err.startswith(f"prep: {shown}/fedcba9876543210/00000001.jsonl: line 1: damaged")
    assert "received 1 review" in out
    code, out, err = _cli("--db", db, "sync", "--status", str(folder))
    assert code == 0 and f"folder: {shown} (given)" in out and "\x07" not in out
    assert "\udcff" not in out + err and "sh?" not in out


@pytest.mark.parametrize("where", ["name", "card"])
def test_a_journal_holding_a_lone_surrogate_is_refused_in_one_line(
    tmp_path: Path, where: str
) -> None:
    """A header's name or an entry's text escaped as "\\udcff" (JSON allows it; no UTF-8 text
    holds it): before, storing it raised UnicodeEncodeError, "internal error", exit 70, at
    every sync (the file stays)."""
    folder = tmp_path / "shared"
    folder.mkdir()
    with Store.open(tmp_path / "a.db") as a:
        local.set_name(a.conn, "vm")
        rate(a, "x", 3, T0)
        written = sync(a, folder).journal
    with Store.open(tmp_path / "c.db") as c:
        rate(c, "z", 3, T0)
        sync(c, folder)
    assert written is not None
    text = written.read_text()
    old = '"name": "vm"' if where == "name" else '"x"'
    assert old in text
    new = '"name": "\\udcff"' if where == "name" else '"x\\udcff"'
    written.write_text(text.replace(old, new, 1))
    code, out, err = _cli("--db", str(tmp_path / "b.db"), "sync", str(folder))
    assert code == 2 and "received 1 review from" in out, out + err
    assert err == (
        f"prep: {written}: line {1 if where == 'name' else 2}: damaged (a lone surrogate "
        "\\udcff (text that is not Unicode)); nothing of it applied; its device's later files "
        "wait for it\n"
    )


def test_a_sync_dir_named_with_bytes_not_utf8_is_refused_in_one_line(tmp_path: Path) -> None:
    folder = tmp_path / ODD_NAME
    folder.mkdir()
    db = str(tmp_path / "p.db")
    code, out, err = _cli("--db", db, "config", "sync_dir", str(folder))
    # (before: "internal error (UnicodeEncodeError ...)")
    assert code == 2 and err.startswith(f"prep: sync_dir: {tmp_path / SHOWN}: its name holds")
    assert len(err.splitlines()) == 1 and out == ""
    code, out, _err = _cli("--db", db, "config", "sync_dir")
    assert code == 0 and out == "sync_dir = none\n"


def test_a_line_that_begins_with_a_relative_folder_keeps_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`prep sync sync` (a folder named in lower case, relative): the line naming a file in
    it begins with the name as it is, not "Sync/..." (another folder)."""
    monkeypatch.chdir(tmp_path)
    Path("sync").mkdir()
    os.mkfifo("sync/0123456789abcdef")
    code, out, _err = _cli("--db", str(tmp_path / "p.db"), "sync", "sync")
    assert code == 0 and out.startswith("sync/0123456789abcdef: a FIFO"), out


# --- 3. the daily backup fails: `prep sync` goes on, as the app does ------------------------


def _broken_backups(home: Path) -> Path:
    """A database in ``home`` whose backups/ cannot be made (a file where the folder goes)."""
    home.mkdir()
    (home / "backups").write_text("a file where the folder goes")
    return home / "p.db"


def test_a_daily_backup_that_fails_is_said_and_the_sync_goes_on(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    db = _broken_backups(tmp_path / "a")
    with Store.open(db) as a:
        rate(a, "x", 3, T0)
    code, out, err = _cli("--db", str(db), "sync", str(folder))
    # (before: exit 2, "…/backups: cannot write a backup (…)", nothing sent)
    assert code == 0, out + err
    assert err.startswith(f"prep: warning: daily backup not made: {db.parent / 'backups'}: ")
    assert "cannot write a backup" in err and len(err.splitlines()) == 1
    assert out == "sent 1 review, received no review, 0 cards rescheduled\n"
    with Store.open(tmp_path / "b.db") as b:
        assert "1 review from" in sync(b, folder).summary()  # (what it sent is there)


def test_the_syncs_own_backup_that_fails_applies_nothing_and_says_what_was_sent(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    with Store.open(tmp_path / "b.db") as b:
        rate(b, "y", 3, T0)
        sync(b, folder)
    db = _broken_backups(tmp_path / "a")
    with Store.open(db) as a:
        rate(a, "x", 3, T0)
    code, out, err = _cli("--db", str(db), "sync", str(folder))
    assert code == 2, out + err
    assert out.startswith("sent 1 review, received no review")  # (before: not said)
    (line,) = [x for x in err.splitlines() if "warning" not in x]
    assert "cannot write a backup" in line and line.endswith(
        "nothing received applied (the next sync does)"
    )
    with Store.open(db) as a:
        assert [r[0] for r in a.conn.execute("SELECT DISTINCT card_id FROM reviews")] == ["x"]
    (db.parent / "backups").unlink()
    code, out, err = _cli("--db", str(db), "sync", str(folder))
    assert code == 0 and "received 1 review from" in out and err == ""


# --- 4. every device's history starts with a missing file -----------------------------------


def _two_files(tmp_path: Path, name: str, folder: Path) -> Path:
    """A device that sent two journal files; its folder."""
    folder.mkdir(exist_ok=True)
    with Store.open(tmp_path / f"{name}.db") as s:
        rate(s, f"{name}1", 3, T0)
        sync(s, folder)
        rate(s, f"{name}2", 3, T0 + timedelta(days=1))
        sync(s, folder)
        return folder / local.device_id(s.conn)


def test_a_folder_whose_histories_start_with_a_missing_file_makes_no_database(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    a = _two_files(tmp_path, "a", folder)
    first = a / "00000001.jsonl"
    kept = first.rename(tmp_path / "kept.jsonl")  # not arrived yet
    db = tmp_path / "new" / "p.db"
    code, out, err = _cli("--db", str(db), "sync", str(folder))
    # (before: "received no review", exit 0, an empty database made)
    assert code == 2 and out == "", out + err
    # (one wording with any later sync's, the device named as its header names it: sync16b)
    vm = journal.header_name(a / "00000002.jsonl")
    assert err == (
        f"prep: {first}: missing, and the 1 journal file of {vm} after it wait for it: let the "
        f"sync tool bring it from {vm} (that machine on, its sync tool running), or copy it "
        "from that machine's sync folder, then sync again; no database made\n"
    )
    assert not db.exists() and not db.parent.exists()
    b = _two_files(tmp_path, "b", tmp_path / "elsewhere")  # a second device, the same
    b.rename(folder / b.name)
    (folder / b.name / "00000001.jsonl").unlink()
    code, out, err = _cli("--db", str(db), "sync", str(folder))
    assert code == 2 and "(and as much for 1 other device)" in err and not db.exists()
    kept.rename(first)  # it arrives: a's reviews, b's wait as at any sync (named: sync16)
    code, out, err = _cli("--db", str(db), "sync", str(folder))
    assert code == 2 and "received 2 reviews from" in out, out + err
    assert err.startswith(f"prep: {folder / b.name / '00000001.jsonl'}: missing, and the 1 ")


def test_a_gap_beside_a_device_with_reviews_still_brings_them(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    a = _two_files(tmp_path, "a", folder)
    _two_files(tmp_path, "b", folder)  # (before a's gap: since sync16 b's sync would name it)
    (a / "00000001.jsonl").unlink()
    db = tmp_path / "p.db"
    code, out, err = _cli("--db", str(db), "sync", str(folder))
    # (the gap named, exit 2, since sync16: a sync that cannot complete; test_sync16.py)
    assert code == 2 and "received 2 reviews from" in out, out + err
    assert err.startswith("prep: ") and "00000001.jsonl: missing, and the 1 journal" in err


# --- 5. this device's own folder kept elsewhere through a link ------------------------------


def _moved_and_linked(tmp_path: Path) -> tuple[Store, Path, Path, Path]:
    """A device that synced once, its folder then moved out of the sync folder and linked."""
    folder = tmp_path / "shared"
    folder.mkdir()
    a = Store.open(tmp_path / "a.db")
    rate(a, "x", 3, T0)
    sync(a, folder)
    mine = folder / local.device_id(a.conn)
    elsewhere = tmp_path / "kept" / "journal"
    elsewhere.parent.mkdir()
    mine.rename(elsewhere)
    mine.symlink_to(elsewhere)
    return a, folder, mine, elsewhere


def test_its_own_folder_moved_elsewhere_and_linked_is_written_through(tmp_path: Path) -> None:
    a, folder, mine, elsewhere = _moved_and_linked(tmp_path)
    rate(a, "y", 3, T0 + timedelta(days=1))
    code, out, err = _cli("--db", str(tmp_path / "a.db"), "sync", str(folder))
    # (before: "…: is a symbolic link; prep writes only a folder of its own", exit 2)
    assert code == 0 and out.startswith("sent 1 review,"), out + err
    assert sorted(p.name for p in elsewhere.iterdir()) == ["00000001.jsonl", "00000002.jsonl"]
    assert mine.is_symlink()
    with Store.open(tmp_path / "b.db") as b:
        assert "received 2 reviews from" in sync(b, folder).summary()
    a.close()


def test_a_stale_temporary_file_is_removed_only_when_it_is_its_own(tmp_path: Path) -> None:
    """The clean-up after a sync killed mid-write removes a temporary file whose header names
    this device; another's (or anything else named so) is left, linked folder or not."""
    a, folder, mine, elsewhere = _moved_and_linked(tmp_path)
    me = local.device_id(a.conn)
    own = elsewhere / ".tmp-00000000000000aa"  # a write of this device cut short
    own.write_bytes(b'{"format": "prep-journal", "version": 4, "device": "%s", "na' % me.encode())
    foreign = elsewhere / ".tmp-00000000000000bb"  # a file that is not prep's
    foreign.write_text("someone's notes\n")
    other = elsewhere / ".tmp-00000000000000cc"  # another device's
    other.write_text('{"format": "prep-journal", "version": 4, "device": "0123456789abcdef"\n')
    rate(a, "y", 3, T0 + timedelta(days=1))
    sync(a, folder)
    assert not own.exists() and foreign.read_text() == "someone's notes\n" and other.exists()
    empty_old = elsewhere / ".tmp-00000000000000dd"  # killed before its first byte, long ago
    empty_old.touch()
    os.utime(empty_old, (time.time() - 2 * STALE_TMP_S,) * 2)
    empty_new = elsewhere / ".tmp-00000000000000ee"  # perhaps being created right now
    empty_new.touch()
    rate(a, "x", 4, T0 + timedelta(days=1, hours=1))
    sync(a, folder)  # (before: an empty one stayed for good, copied to every machine)
    assert not empty_old.exists() and empty_new.exists() and other.exists()
    mine.unlink()  # a folder of its own in place (no link): the same rule
    elsewhere.rename(mine)
    rate(a, "z", 3, T0 + timedelta(days=2))
    sync(a, folder)
    assert (mine / foreign.name).exists() and (mine / other.name).exists()  # (before: removed)
    a.close()


@pytest.mark.parametrize("leads_to", ["a folder of other files", "another device", "nothing"])
def test_a_link_to_a_folder_not_its_own_is_never_written_through(
    tmp_path: Path, leads_to: str
) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    with Store.open(tmp_path / "c.db") as c:
        rate(c, "w", 3, T0)
        sync(c, folder)
        theirs = folder / local.device_id(c.conn)
    a = Store.open(tmp_path / "a.db")
    rate(a, "x", 3, T0)
    mine = folder / local.device_id(a.conn)
    target = {
        "a folder of other files": tmp_path / "documents",
        "another device": theirs,
        "nothing": tmp_path / "gone",
    }[leads_to]
    if leads_to == "a folder of other files":
        target.mkdir()
        (target / "notes.txt").write_text("mine\n")
        (target / ".tmp-00000000000000bb").write_text("not prep's\n")
    before = sorted(p.name for p in target.iterdir()) if target.exists() else None
    mine.symlink_to(target)
    code, out, err = _cli("--db", str(tmp_path / "a.db"), "sync", str(folder))
    assert code == 2 and err.startswith(f"prep: {mine}: this device's folder, a symbolic link")
    assert "; nothing sent" in err and len(err.splitlines()) == 1
    assert "received 1 review from" in out  # (what the others sent still applied)
    after = sorted(p.name for p in target.iterdir()) if target.exists() else None
    assert after == before  # nothing written there, nothing removed
    a.close()
