"""A sync folder as sync tools leave it (sync13's hostile pass): one device's file damaged
(cut short mid-transfer) or written by a newer prep holds back that device's later files
only; a device's folder removed while another syncs is as if not there yet; a folder this
device cannot write (a read-only mount) still brings in what the others sent. Each says
what it could not do in one line (exit 2) after doing the rest."""

from __future__ import annotations

import errno
import json
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from prep.engine.store import Store
from prep.engine.store import devices as local
from prep.engine.sync import journal
from prep.engine.sync.run import read_pending, sync
from prep.tui.cli import main
from tests.syncfaults import three
from tests.test_sync import T0, rate


def _three(tmp_path: Path) -> tuple[Path, dict[str, str], Path]:
    """b applied a's file 1; then c sent its file 1 and a its file 2 (``second``), and b
    rated a card of its own: what b's next sync has to do."""
    a, b, c, folder = three(tmp_path)
    rate(a, "y", 3, T0 + timedelta(days=1))
    second = sync(a, folder).journal
    assert second is not None
    rate(b, "w", 3, T0 + timedelta(days=2))
    ids = {n: local.device_id(s.conn) for n, s in zip("abc", (a, b, c), strict=True)}
    for s in (a, b, c):
        s.close()
    return folder, ids, second


def _cli(tmp_path: Path, folder: Path) -> Result:
    return CliRunner().invoke(main, ["--db", str(tmp_path / "b.db"), "sync", str(folder)])


def _cards(db: Path) -> list[str]:
    with Store.open(db) as s:
        return [r[0] for r in s.conn.execute("SELECT DISTINCT card_id FROM reviews ORDER BY 1")]


def _cut_short(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-7])


def _newer(path: Path) -> None:
    head, *rest = path.read_text().splitlines()
    path.write_text("\n".join([json.dumps({**json.loads(head), "version": 5}), *rest]) + "\n")


@pytest.mark.parametrize(
    "damage, said",
    [
        (_cut_short, "damaged (cut short: no end of line at the end); nothing of it applied"),
        (_newer, "written by a newer prep (journal v5; this prep reads v4); upgrade prep"),
    ],
    ids=["cut short mid-transfer", "a newer prep's (v5)"],
)
def test_one_devices_bad_file_holds_back_only_that_device(
    tmp_path: Path, damage, said: str
) -> None:
    """Before: exit 2 and nothing applied, c's review too (for ten minutes and two syncs
    when cut short, for good when newer), while b's own went out."""
    folder, _ids, second = _three(tmp_path)
    whole = second.read_bytes()
    damage(second)
    out = _cli(tmp_path, folder)
    assert out.exit_code == 2, out.output
    assert out.stdout.startswith("sent 1 review, received 1 review from ")
    (line,) = out.stderr.splitlines()  # one line, after the summary of the rest
    assert line.startswith(f"prep: {second}: {said}")
    assert line.endswith("its device's later files wait for it")
    assert _cards(tmp_path / "b.db") == ["w", "x", "z"]  # c's applied, b's sent
    with Store.open(tmp_path / "c.db") as third:  # the engine: raised once the rest is done
        with pytest.raises(journal.JournalError) as refused:
            sync(third, folder)
        done = refused.value.after
        assert done is not None and done.applied.reviews == 1 and third.card("w") is not None
        assert done.refused == [f"{refused.value}; its device's later files wait for it"]
    second.write_bytes(whole)  # a whole version (or an upgraded prep): a's file applied
    again = _cli(tmp_path, folder)
    assert again.exit_code == 0 and "received 1 review from" in again.output, again.output
    assert _cards(tmp_path / "b.db") == ["w", "x", "y", "z"]


def test_a_later_file_of_that_device_waits_for_it(tmp_path: Path) -> None:
    """Its later files wait, as for a file not arrived yet: none applied past it."""
    folder, ids, second = _three(tmp_path)
    with Store.open(tmp_path / "a.db") as a:
        rate(a, "v", 3, T0 + timedelta(days=3))
        assert sync(a, folder).journal == second.with_name("00000003.jsonl")
    _cut_short(second)
    with Store.open(tmp_path / "b.db") as b:
        pending = read_pending(b, folder)
        assert [(j.device, j.number) for j in pending] == [(ids["c"], 1)]
        assert [str(e) for e in pending.refused] == [
            f"{second}: damaged (cut short: no end of line at the end); nothing of it applied"
        ]


def test_a_device_folder_removed_while_another_syncs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """a's folder is removed (its owner made the folder again, a sync tool's delete) between
    b's listing and b's read: as if b had listed the folder a moment later. Before: exit 2,
    'cannot read it (No such file or directory)', nothing applied."""
    folder, ids, _second = _three(tmp_path)
    real = journal.read

    def read(path: Path, dev: str, now_us: int | None = None) -> journal.Journal:
        if dev == ids["a"] and (folder / dev).exists():
            shutil.rmtree(folder / dev)
        return real(path, dev, now_us)

    monkeypatch.setattr(journal, "read", read)
    out = _cli(tmp_path, folder)
    assert out.exit_code == 0, out.output
    assert out.output.startswith("sent 1 review, received 1 review from ")
    assert out.output.count("\n") == 1  # nothing to say: nothing was wrong
    assert _cards(tmp_path / "b.db") == ["w", "x", "z"]


def test_a_folder_this_device_cannot_write_still_brings_the_others_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only mount (or a full disk): nothing sent, said in one line (exit 2), what the
    others sent applied; the next sync that can write sends what was not sent. Before: exit
    2, nothing received."""
    folder, ids, _second = _three(tmp_path)
    real = journal.write

    def read_only(folder: Path, header: dict, entries: list) -> Path:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(journal, "write", read_only)
    out = _cli(tmp_path, folder)
    assert out.exit_code == 2, out.output
    # (a and c unnamed: both the host's name, told apart by their ids since sync15)
    assert out.stdout.startswith("sent 0 reviews, received 1 review from ")
    assert all(f" ({ids[n][:4]}" in out.stdout for n in "ac"), out.stdout
    (line,) = out.stderr.splitlines()
    assert line.startswith("prep: ") and "cannot write the journal (Read-only file system)" in line
    assert line.endswith("; nothing sent")
    assert _cards(tmp_path / "b.db") == ["w", "x", "y", "z"]
    monkeypatch.setattr(journal, "write", real)
    again = _cli(tmp_path, folder)
    assert again.exit_code == 0 and again.output.startswith("sent 1 review"), again.output
    with Store.open(tmp_path / "c.db") as c:
        sync(c, folder)
        assert c.card("w") is not None


def test_the_apps_first_half_says_it_and_reads_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The app's thread (sync_out, then read_pending): a journal it cannot write is a line
    it shows, not 'Sync failed' with nothing read."""
    from prep.engine.sync.run import sync_out

    folder, _ids, second = _three(tmp_path)
    _cut_short(second)
    monkeypatch.setattr(
        journal, "write", lambda *_a: (_ for _ in ()).throw(OSError(errno.EROFS, "Read-only"))
    )
    with Store.open(tmp_path / "b.db") as b:
        out = sync_out(b, folder)
        assert len(out.refused) == 1 and "cannot write the journal (Read-only)" in out.refused[0]
        pending = read_pending(b, folder)
        assert len(pending) == 1 and len(pending.refused) == 1


def test_the_last_journal_number_taken_sends_nothing_and_says_so(tmp_path: Path) -> None:
    """Something named 99999999.jsonl in this device's folder: the next number has nine
    digits, a name no prep reads. Before: the review was written there and noted sent, so
    it never reached another machine. Now: nothing sent, one line (exit 2); once the thing
    is removed the review goes out."""
    folder, ids, _second = _three(tmp_path)
    mine = folder / ids["b"]
    mine.mkdir()
    last = mine / "99999999.jsonl"
    last.mkdir()  # (no file: set aside at once, said)
    out = _cli(tmp_path, folder)
    assert out.exit_code == 2, out.output
    (line,) = out.stderr.splitlines()
    assert line.startswith(f"prep: {last}: the last number a journal file can take is used")
    assert line.endswith("; nothing sent")
    assert [p.name for p in mine.iterdir()] == ["99999999.jsonl"]
    assert _cards(tmp_path / "b.db") == ["w", "x", "y", "z"]  # the rest applied
    last.rmdir()
    again = _cli(tmp_path, folder)
    assert again.exit_code == 0 and again.output.startswith("sent 1 review"), again.output
    with Store.open(tmp_path / "c.db") as c:
        sync(c, folder)
        assert c.card("w") is not None


@pytest.mark.parametrize("named", [True, False], ids=["v4 undo", "pre-v4 undo"])
def test_case_b_with_an_undo_that_names_no_review_is_said(tmp_path: Path, named: bool) -> None:
    """note12's case B (test_sync_undo_named) when the copy's undo was made by a prep before
    journal v4 (it names no review): 0 cannot tell its review from one the copy made since
    under that number, so it keeps its review under the new id, and the machines that also
    hold it under the old id may hold it twice. Not converged; said once, where it is decided
    (before: nothing said). A v4 undo converges and says nothing of the kind."""
    from tests.test_sync_fork import _copy
    from tests.test_sync_replaced import deliver

    fs = [tmp_path / f"f{i}" for i in range(2)]
    for f in fs:
        f.mkdir()
    d0 = Store.open(tmp_path / "d0.db")
    rate(d0, "x", 2, T0)
    d1 = _copy(tmp_path, d0, "d1.db")
    assert d1.undo_last() is not None
    if not named:  # the undo as a prep before v4 kept it (what it undid not noted)
        with d1.transaction():
            d1.conn.execute("DELETE FROM meta WHERE key LIKE ?", (f"{local.UNDID_KEY}:%",))
    written = sync(d1, fs[1]).journal
    assert written is not None
    undo = json.loads(written.read_text().splitlines()[1])
    assert undo[0] == "u" and len(undo) == (journal.NAMED_UNDO if named else 5)
    deliver(fs[1], fs[0])
    forked = sync(d0, fs[0]).forked
    assert forked is not None
    if named:
        assert "journal v4" not in forked and d0.card("x") is None  # undone here too
    else:
        assert forked.endswith(
            "; 1 review of this database kept under the new id, though the other copy undid a "
            "review under its number with a prep before journal v4 (it does not say which "
            "review): if it undid this one, the machines that hold it under the old id too "
            "may hold it twice"
        )
        assert d0.card("x") is not None
    assert sync(d0, fs[0]).forked is None  # said once
