"""A journal file applied here, replaced later by another version (an older file too), is read
again (engine/sync/applied.py); another device's file that stays unreadable is set aside
instead of refusing every sync. Reproductions from the review of sync10 (rev10)."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from prep.engine.store import Store
from prep.engine.store import devices as local
from prep.engine.sync import applied, journal, stuck
from prep.engine.sync.journal import JournalError, file_name
from prep.engine.sync.run import status, sync
from prep.tui.cli import main
from tests.test_sync import T0, rate
from tests.test_sync_fork import _copy, _ids
from tests.test_sync_replaced import deliver, files, put


def _folders(tmp_path: Path) -> tuple[Path, Path, Path]:
    out = tuple(tmp_path / n for n in ("f1", "f2", "f3"))
    for f in out:
        f.mkdir()
    return out  # type: ignore[return-value]


def test_the_winner_of_an_older_file_reaches_a_third_device(tmp_path: Path) -> None:
    """The losing copy wrote files 2 and 3 and is then thrown away; c applied them; the tool
    settles file 2 on the winner's version. c reads file 2 again (before: only the last file
    applied was compared, so c kept the loser's review under the id and missed the winner's)."""
    f1, f2, f3 = _folders(tmp_path)
    cp1, c = Store.open(tmp_path / "cp1.db"), Store.open(tmp_path / "c.db")
    rate(cp1, "x", 3, T0)
    sync(cp1, f1)
    cp2 = _copy(tmp_path, cp1, "cp2.db")
    shutil.copytree(f1, f2, dirs_exist_ok=True)
    me = local.device_id(cp1.conn)
    rate(cp1, "y", 3, T0 + timedelta(days=1))
    sync(cp1, f1)  # cp1: file 2 (y)
    for i in range(2):  # cp2: files 2 (z0) and 3 (z1); then cp2 is thrown away
        rate(cp2, f"z{i}", 1, T0 + timedelta(days=1, minutes=1 + i))
        sync(cp2, f2)
    deliver(f2, f3)
    sync(c, f3)  # c applies cp2's 2 and 3
    rel2 = f"{me}/{file_name(2)}"
    winner = files(f1)[rel2]
    put(f3, rel2, winner)  # the tool settles file 2 on cp1's version
    put(f2, rel2, winner)
    deliver(f2, f1)  # (f1 gets file 3)
    said: list[str] = []
    for _ in range(3):
        sync(cp1, f1)
        deliver(f1, f3)
        said += sync(c, f3).applied.notes
        deliver(f3, f1)
    assert sorted(r[2] for r in _ids(c)) == sorted(r[2] for r in _ids(cp1)) == ["x", "y", "z1"]
    assert _ids(c) == _ids(cp1)
    # z0 is not lost: kept aside at c (its copy never synced again), and c says so once
    assert status(c, f3)["reviews_set_aside"] == 1
    assert sum("set aside" in line for line in said) == 1


def _late(tmp_path: Path, *, damaged: bool, late: bool) -> tuple[Store, Store, Store]:
    """The losing copy wrote files 2, 3, 4 of the shared id; c applied them; the winner's
    file 2 replaces the loser's; the loser finds the copy and sends z0 under its new id.
    ``late``: that new id reaches c before the winning file 2; ``damaged``: c's file 4 is
    being rewritten in place (half there) when c meets the new id's z0."""
    f1, f2, f3 = _folders(tmp_path)
    cp1, c = Store.open(tmp_path / "cp1.db"), Store.open(tmp_path / "c.db")
    rate(cp1, "x", 3, T0)
    sync(cp1, f1)
    deliver(f1, f3)
    sync(c, f3)
    cp2 = _copy(tmp_path, cp1, "cp2.db")
    shutil.copytree(f1, f2, dirs_exist_ok=True)
    me = local.device_id(cp1.conn)
    rate(cp1, "y", 3, T0 + timedelta(days=1))  # the winner: file 2 on cp1
    sync(cp1, f1)
    for i in range(3):  # the loser: files 2, 3, 4 on cp2
        rate(cp2, f"z{i}", 1, T0 + timedelta(days=1, minutes=1 + i))
        sync(cp2, f2)
    deliver(f2, f3)
    sync(c, f3)
    rel2 = f"{me}/{file_name(2)}"
    won = files(f1)[rel2]
    for f in (f2,) if late else (f2, f3):
        put(f, rel2, won)
    deliver(f2, f1)
    sync(cp2, f2)  # the loser finds the copy: z0 sent again under its new id
    sync(cp1, f1)
    if late:  # the loser's new folder reaches c before the winning file 2
        for rel, data in files(f2).items():
            if not rel.startswith(me):
                put(f3, rel, data)
        sync(c, f3)
        put(f3, rel2, won)
    deliver(f2, f3)
    deliver(f1, f3)
    last = f3 / me / file_name(4)
    whole = last.read_bytes()
    if damaged:
        last.write_bytes(whole[:-5])  # the tool rewriting it in place, this instant
    sync(c, f3)  # (an applied file that cannot be read again now: read at the next sync)
    last.write_bytes(whole)
    for _ in range(3):
        for s, f in ((cp1, f1), (cp2, f2), (c, f3)):
            sync(s, f)
            for g in (f1, f2, f3):
                if g != f:
                    deliver(f, g)
    return c, cp1, cp2


@pytest.mark.parametrize(("damaged", "late"), [(False, False), (True, False), (False, True)])
def test_any_order_of_arrivals_converges_at_a_third_device(
    tmp_path: Path, damaged: bool, late: bool
) -> None:
    c, cp1, cp2 = _late(tmp_path, damaged=damaged, late=late)
    assert sorted(r[2] for r in _ids(c)) == ["x", "y", "z0", "z1", "z2"]  # each once
    assert _ids(c) == _ids(cp1) == _ids(cp2)
    assert status(c, None)["reviews_set_aside"] == 0


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    read: list[str] = []
    real = journal.read

    def counting(path: Path, device: str, now_us: int | None = None) -> journal.Journal:
        read.append(path.name)
        return real(path, device, now_us)

    monkeypatch.setattr(journal, "read", counting)
    return read


def test_a_sync_with_nothing_replaced_reads_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "f"
    folder.mkdir()
    a, c = Store.open(tmp_path / "a.db"), Store.open(tmp_path / "c.db")
    for day in range(4):
        rate(a, f"k{day}", 3, T0 + timedelta(days=day))
        sync(a, folder)
    read = _reads(monkeypatch)
    sync(c, folder)
    assert sorted(read) == [file_name(n) for n in range(1, 5)]
    read.clear()
    sync(c, folder)
    assert read == []  # (one stat a file applied)
    # the same file put in place again (a tool re-delivering it): its header line only
    me = local.device_id(a.conn)
    rel = f"{me}/{file_name(2)}"
    put(folder, rel, files(folder)[rel])
    sync(c, folder)
    assert read == []
    put(folder, rel, _other_version(files(folder)[rel]))  # another version: read again
    assert sync(c, folder).applied.reviews == 0
    assert read == [file_name(2)]
    read.clear()
    sync(c, folder)
    assert read == []


def test_the_last_file_applied_replaced_is_read_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another version of the newest file applied (a new header at the number applied last)
    is that file replaced, not the device's files begun again from 1 (a folder made again,
    where every file is new): only it is read (before: files 1 to 4 again)."""
    folder = tmp_path / "f"
    folder.mkdir()
    a, c = Store.open(tmp_path / "a.db"), Store.open(tmp_path / "c.db")
    for day in range(4):
        rate(a, f"k{day}", 3, T0 + timedelta(days=day))
        sync(a, folder)
    sync(c, folder)
    read = _reads(monkeypatch)
    rel = f"{local.device_id(a.conn)}/{file_name(4)}"
    put(folder, rel, _other_version(files(folder)[rel]))
    assert sync(c, folder).applied.reviews == 0
    assert read == [file_name(4)]
    read.clear()
    sync(c, folder)
    assert read == []
    assert status(c, folder)["devices"][0]["wrote_at"] == "2030-01-01T00:00:00.000000Z"


def _other_version(data: bytes) -> bytes:
    """The same entries under another header (another copy wrote that number)."""
    head, rest = data.split(b"\n", 1)
    header = json.loads(head)
    header["written_at"] = "2030-01-01T00:00:00.000000Z"
    return json.dumps(header).encode() + b"\n" + rest


def test_files_applied_before_the_notes_are_noted_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A database that applied files with a prep before the notes: they are noted as they
    are at its next sync, none read again; a later replacement is seen."""
    folder = tmp_path / "f"
    folder.mkdir()
    a, c = Store.open(tmp_path / "a.db"), Store.open(tmp_path / "c.db")
    for day in range(3):
        rate(a, f"k{day}", 3, T0 + timedelta(days=day))
        sync(a, folder)
    sync(c, folder)
    with c.transaction():
        c.conn.execute(  # (as a prep before them left it)
            "DELETE FROM meta WHERE key LIKE ?", (f"{applied.KEY}:%",)
        )
    read = _reads(monkeypatch)
    sync(c, folder)
    assert read == []
    rel = f"{local.device_id(a.conn)}/{file_name(1)}"
    put(folder, rel, _other_version(files(folder)[rel]))
    sync(c, folder)
    assert read == [file_name(1)]


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_another_devices_file_that_stays_unreadable_is_set_aside(tmp_path: Path) -> None:
    """a's file 2 is damaged (on a's own device it is set aside: stuck.py); c refused it at
    every sync (exit 2), a's later files never applied. Now: refused while it may still be
    arriving (what comes before it applied: sync13), set aside once unchanged across two
    syncs and for over STUCK_S, one line, the later files applied; read again once a whole
    version arrives."""
    folder = tmp_path / "f"
    folder.mkdir()
    a, c = Store.open(tmp_path / "a.db"), Store.open(tmp_path / "c.db")
    written = []
    for day in range(3):
        rate(a, f"k{day}", 3, T0 + timedelta(days=day))
        written.append(sync(a, folder).journal)
    bad = written[1]
    assert bad is not None
    whole = bad.read_bytes()
    bad.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(JournalError):  # just changed: may still be arriving
        sync(c, folder)
    assert sorted(r[2] for r in _ids(c)) == ["k0"]  # (file 1: applied all the same)
    _age(bad, stuck.STUCK_S + 60)
    with pytest.raises(JournalError):  # (first found unchanged now)
        sync(c, folder)
    c.close()
    cli = ["--db", str(tmp_path / "c.db"), "sync", str(folder)]
    out = CliRunner().invoke(main, cli)
    assert out.exit_code == 0, out.output
    line, summary = out.output.splitlines()
    assert line.startswith(str(bad)) and "set aside" in line
    assert summary.startswith("sent 0 reviews, received 1 review from ")  # k2
    c = Store.open(tmp_path / "c.db")
    assert sorted(r[2] for r in _ids(c)) == ["k0", "k2"]
    assert status(c, folder)["journal_files_set_aside"] == 1
    assert sync(c, folder).applied.notes == []  # said once; nothing refused since
    out = CliRunner().invoke(main, [*cli, "--status"])
    assert "1 journal file(s) of other devices set aside" in out.output
    put(folder, f"{bad.parent.name}/{bad.name}", whole)  # a whole version arrives
    sync(c, folder)
    assert sorted(r[2] for r in _ids(c)) == ["k0", "k1", "k2"]
    assert _ids(c) == _ids(a)
    assert status(c, folder)["journal_files_set_aside"] == 0


def test_a_newer_format_file_is_never_set_aside(tmp_path: Path) -> None:
    folder = tmp_path / "f"
    folder.mkdir()
    a, c = Store.open(tmp_path / "a.db"), Store.open(tmp_path / "c.db")
    rate(a, "k", 3, T0)
    path = sync(a, folder).journal
    assert path is not None
    text = path.read_text()  # (version 4: its review's parameters seed the fuzz by the card)
    path.write_text(re.sub(r'"version": \d+', '"version": 99', text, count=1))
    _age(path, stuck.STUCK_S + 60)
    for _ in range(3):
        with pytest.raises(JournalError, match="newer prep"):
            sync(c, folder)


def test_an_applied_file_replaced_by_one_that_stays_unreadable_is_set_aside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file applied here is replaced by a version that never arrives whole: it is tried at
    each sync (no refusal: what it held is held) until the stuck rule sets it aside, said
    once; then no sync reads it; a whole version arriving is read."""
    folder = tmp_path / "f"
    folder.mkdir()
    a, c = Store.open(tmp_path / "a.db"), Store.open(tmp_path / "c.db")
    for day in range(3):
        rate(a, f"k{day}", 3, T0 + timedelta(days=day))
        sync(a, folder)
    sync(c, folder)
    rel = f"{local.device_id(a.conn)}/{file_name(2)}"
    whole = files(folder)[rel]
    other = _other_version(whole)
    put(folder, rel, other[: len(other) // 2])  # another version, half there, and it stays
    read = _reads(monkeypatch)
    assert sync(c, folder).applied.notes == []  # (may still be arriving)
    _age(folder / rel, stuck.STUCK_S + 60)
    assert sync(c, folder).applied.notes == []
    said = sync(c, folder).applied.notes
    assert len(said) == 1 and "set aside" in said[0] and "what it held before kept" in said[0]
    assert read == [file_name(2)] * 3
    assert status(c, folder)["journal_files_set_aside"] == 1
    read.clear()
    assert sync(c, folder).applied.notes == []
    assert read == []
    put(folder, rel, other)
    sync(c, folder)
    assert read == [file_name(2)]
    assert status(c, folder)["journal_files_set_aside"] == 0
    assert _ids(c) == _ids(a)
