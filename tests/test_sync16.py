"""Sync's remaining edges (sync16): a device's next journal file missing while later ones are
there is named, by `prep sync` (exit 2) and the app's sync line; every device's label is its
own, whatever the names; the authority check of a replaced file reads a device's folder that
is a link as the applier does; two links to one folder elsewhere: the one named as its files'
device is read, the other said in one line."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from prep.engine.store import Store
from prep.engine.store import devices as local
from prep.engine.sync.replaced import Clashes
from prep.engine.sync.run import read_pending, sync, sync_out
from prep.tui.cli import main
from tests.test_sync import T0, rate


def _cli(*args: str) -> tuple[int, str, str]:
    out = CliRunner().invoke(main, list(args))
    return out.exit_code, out.stdout, out.stderr


# --- 1. a gap at an existing database -------------------------------------------------------


def _laptop_with_a_gap(tmp_path: Path, *, applied: bool) -> tuple[Path, Path, Path]:
    """ "laptop" sent files 1, 2 and 3; the database b.db applied file 1 (``applied``) or
    nothing of it; file 2 then goes missing from the folder: (folder, file 2, where it is)."""
    folder = tmp_path / "shared"
    folder.mkdir()
    with Store.open(tmp_path / "a.db") as a, Store.open(tmp_path / "b.db") as b:
        local.set_name(a.conn, "laptop")
        rate(b, "mine", 3, T0)
        sync(b, folder)
        for i in range(3):
            rate(a, f"x{i}", 3, T0 + timedelta(days=i))
            sync(a, folder)
            if i == 0 and applied:
                sync(b, folder)
        second = folder / local.device_id(a.conn) / "00000002.jsonl"
    return folder, second, second.rename(tmp_path / "kept.jsonl")


@pytest.mark.parametrize("applied", [True, False], ids=["after file 1", "none applied yet"])
def test_a_missing_file_with_later_ones_is_named_and_the_sync_exits_2(
    tmp_path: Path, applied: bool
) -> None:
    folder, second, kept = _laptop_with_a_gap(tmp_path, applied=applied)
    with Store.open(tmp_path / "c.db") as c:  # a third device whose reviews still arrive
        local.set_name(c.conn, "desk")
        rate(c, "z", 3, T0)
        sync_out(c, folder)  # (only sends: a sync would find the gap too)
    db = str(tmp_path / "b.db")
    code, out, err = _cli("--db", db, "sync", str(folder))
    # (before: exit 0, nothing said; only --status counted "1 journal file(s) not applied")
    assert code == 2, out + err
    assert out.startswith("sent 0 reviews, received ") and "1 review from desk" in out, out
    assert ("1 review from laptop" in out) is not applied  # (its file 1, when not applied yet)
    assert err == (
        f"prep: {second}: missing, and the 1 journal file of laptop after it wait for it: let "
        "the sync tool bring it from laptop (that machine on, its sync tool running), or copy "
        "it from that machine's sync folder, then sync again\n"
    )
    again = _cli("--db", db, "sync", str(folder))  # said at every sync while it is so
    assert again[0] == 2 and again[2] == err
    code, out, _err = _cli("--db", db, "sync", "--status", str(folder))
    assert out.endswith(
        "\n1 journal file(s) not applied yet (1 wait for a file missing: prep sync names it): "
        "run prep sync\n"
    ), out
    kept.rename(second)  # it arrives
    code, out, err = _cli("--db", db, "sync", str(folder))
    assert code == 0 and err == "", out + err
    assert out.startswith("sent 0 reviews, received 2 reviews from laptop"), out
    with Store.open(tmp_path / "b.db") as b:
        held = {r[0] for r in b.conn.execute("SELECT card_id FROM reviews")}
        assert held == {"mine", "x0", "x1", "x2", "z"}


def test_a_gap_names_the_device_by_its_label_even_when_two_share_its_name(
    tmp_path: Path,
) -> None:
    folder, second, _kept = _laptop_with_a_gap(tmp_path, applied=True)
    with Store.open(tmp_path / "d.db") as d:
        local.set_name(d.conn, "laptop")  # a second laptop: the line tells them apart
        rate(d, "w", 3, T0)
        sync_out(d, folder)
        short = local.device_id(d.conn)[:4]
    code, out, err = _cli("--db", str(tmp_path / "b.db"), "sync", str(folder))
    assert code == 2 and f"1 review from laptop ({short})" in out, out + err
    label = f"laptop ({second.parent.name[:4]})"
    assert err.startswith(f"prep: {second}: missing, and the 1 journal file of {label} after")


def test_a_gap_is_read_as_refused_where_the_app_says_it(tmp_path: Path) -> None:
    """The app's thread reads with read_pending: a gap is among what it says (``refused``);
    what the folder holds beyond it is not applied."""
    folder, second, _kept = _laptop_with_a_gap(tmp_path, applied=True)
    with Store.open(tmp_path / "b.db") as b:
        journals = read_pending(b, folder)
        said = [str(exc) for exc in journals.refused]
        assert [j.path.name for j in journals] == []
    assert len(said) == 1 and said[0].startswith(f"{second}: missing, and the 1 journal file")


def test_a_refused_file_before_a_gap_is_said_alone(tmp_path: Path) -> None:
    """File 2 missing behind a damaged file 1 not applied yet: the damaged one is what holds
    the device back; said once, not the gap as well."""
    folder, _second, _kept = _laptop_with_a_gap(tmp_path, applied=False)
    first = _second.parent / "00000001.jsonl"
    first.write_bytes(first.read_bytes()[:-5])  # cut short
    with Store.open(tmp_path / "b.db") as b:
        said = [str(exc) for exc in read_pending(b, folder).refused]
    assert len(said) == 1 and said[0].startswith(str(first)) and "missing" not in said[0]


# --- 2. labels unique by construction -------------------------------------------------------


def test_a_device_named_like_another_devices_label_is_told_apart(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    stores = [Store.open(tmp_path / f"{n}.db") for n in ("vm1", "vm2", "odd", "me")]
    vm1, vm2, odd, me = stores
    local.set_name(vm1.conn, "vm")
    local.set_name(vm2.conn, "vm")
    local.set_name(me.conn, "desk")
    first = local.device_id(vm1.conn)
    local.set_name(odd.conn, f"vm ({first[:4]})")  # literally what vm1's label is
    for i, s in enumerate((vm1, vm2, odd)):
        rate(s, f"c{i}", 3, T0 + timedelta(minutes=i))
        sync(s, folder)
    summary = sync(me, folder).summary()
    second, third = (local.device_id(s.conn)[:4] for s in (vm2, odd))
    labels = [f"vm ({first[:4]})", f"vm ({second})", f"vm ({first[:4]}) ({third})"]
    received = summary.removeprefix("sent 0 reviews, received ").split(", ")[:-1]
    # (before: "1 review from vm (a1b2)" once for vm1 and odd, a review lost from the count)
    assert sorted(received) == sorted(f"1 review from {label}" for label in labels), summary
    for s in stores:
        s.close()


_HEX = "0a"  # (two digits: ids that share long starts)
_ids = st.lists(st.text(_HEX, min_size=16, max_size=16), min_size=1, max_size=7, unique=True)


@st.composite
def _named(draw: st.DrawFn) -> dict[str, str]:
    """Device ids and names: a few plain names, names shared, and names made like another's
    label (a name followed by a start of an id, nested too)."""
    ids = draw(_ids)
    names: dict[str, str] = {}
    for dev in ids:
        kind = draw(st.sampled_from(["plain", "like a label", "its id"]))
        if kind == "plain" or not names:
            names[dev] = draw(st.sampled_from(["vm", "laptop", "vm (0a0a)", "vm (a"]))
        elif kind == "its id":
            names[dev] = dev
        else:
            other = draw(st.sampled_from(sorted(names)))
            start = draw(st.integers(1, 16))
            text = other[:start].upper() if draw(st.booleans()) else other[:start]
            names[dev] = f"{names[other]} ({text})"
    return names


def _reads_as(label: str, dev: str, name: str) -> bool:
    """Whether ``label`` names device ``dev`` called ``name``: its name, or its name followed
    by a start of its id."""
    if label == name:
        return True
    start = label.removeprefix(f"{name} (")
    return (
        label.startswith(f"{name} (")
        and start.endswith(")")
        and len(start) > 1
        and dev.startswith(start[:-1].lower())
    )


@settings(max_examples=300, deadline=None)
@given(_named())
def test_every_label_names_one_device_and_a_name_only_it_could_mean_is_kept(
    names: dict[str, str],
) -> None:
    said = local.labels_of(names)
    assert sorted(said) == sorted(names)
    assert len(set(said.values())) == len(said)  # distinct
    for dev, label in said.items():
        # it names its device, and no other device's name (with a start of its id) reads so
        assert _reads_as(label, dev, names[dev]), (dev, label)
        others = [e for e in names if e != dev and _reads_as(label, e, names[e])]
        assert others == [] or all(said[e] != names[e] for e in others), (label, others)
        shared = [e for e in names if e != dev and names[e] == names[dev]]
        alike = [e for e in names if e != dev and _reads_as(names[dev], e, names[e])]
        if not shared and not alike:  # an unambiguous name is left as it is
            assert label == names[dev]
        else:  # otherwise its id's start follows it, as short as tells it apart
            assert label.startswith(f"{names[dev]} (") and label != names[dev]


def test_labels_of_the_reported_case() -> None:
    a, b, c = "a1b2" + "0" * 12, "ffff" + "0" * 12, "7777" + "0" * 12
    assert local.labels_of({a: "vm", b: "vm", c: "vm (a1b2)"}) == {
        a: "vm (a1b2)",
        b: "vm (ffff)",
        c: "vm (a1b2) (7777)",
    }
    # a name alone, or one that reads as no device's, is as it is
    assert local.labels_of({a: "vm", c: "vm (ffff)"}) == {a: "vm", c: "vm (ffff)"}


# --- 3. the authority check reads a linked folder as the applier does -----------------------


def test_the_authority_of_a_device_whose_folder_is_a_link_is_its_journal(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    with Store.open(tmp_path / "a.db") as a, Store.open(tmp_path / "b.db") as b:
        rate(a, "x", 3, T0)
        rate(a, "y", 4, T0 + timedelta(days=1))
        sync(a, folder)
        dev = local.device_id(a.conn)
        plain = Clashes(b.conn, folder).authority(dev)
        assert plain is not None and sorted(v[0] for v in plain.values()) == ["x", "y"]
        elsewhere = tmp_path / "kept"
        (folder / dev).rename(elsewhere)
        (folder / dev).symlink_to(elsewhere)
        # (before: None, "nothing known", while the applier reads its files through the link)
        assert Clashes(b.conn, folder).authority(dev) == plain
        assert "received 2 reviews" in sync(b, folder).summary()
        # a link the applier skips (to another device's folder here) is not read either
        other = "0" * 16
        (folder / other).symlink_to(folder / local.device_id(b.conn))
        assert Clashes(b.conn, folder).authority(other) is None


# --- 5. two links to one folder elsewhere -----------------------------------------------------


@pytest.mark.parametrize("before", [True, False], ids=["links sorting first", "sorting last"])
def test_two_links_to_one_folder_read_it_once_as_its_devices(tmp_path: Path, before: bool) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    with Store.open(tmp_path / "a.db") as a:
        local.set_name(a.conn, "laptop")
        rate(a, "x", 3, T0)
        sync(a, folder)
        dev = local.device_id(a.conn)
    outside = tmp_path / "outside"
    (folder / dev).rename(outside)
    (folder / dev).symlink_to(outside)
    extra = folder / ("0" * 16 if before else "f" * 16)
    extra.symlink_to(outside)
    code, out, err = _cli("--db", str(tmp_path / "b.db"), "sync", str(folder))
    # (before, sorting first: "…/0000000000000000/00000001.jsonl: line 1: the header names
    # device '…', not its folder's", exit 2; sorting last: "a symbolic link to another
    # device's folder of this sync folder, not a device's journal folder: skipped")
    assert code == 0, out + err
    assert out.splitlines() == [
        f"{extra}: a symbolic link to the same folder as {dev} (read as that device's): skipped.",
        "sent 0 reviews, received 1 review from laptop, 1 card rescheduled",
    ]
    assert os.path.islink(extra)


# --- 4. a share that does not answer --------------------------------------------------------

# os.scandir of the folder named in PREP_TEST_HANG (that one only) never returns, as a listing
# of a network share whose server is gone blocks; each look waits PREP_TEST_ANSWER_S at most
_HANG = """
import os, threading
_real = os.scandir
def _scandir(path="."):
    if os.fspath(path) == os.environ["PREP_TEST_HANG"]:
        threading.Event().wait()
    return _real(path)
os.scandir = _scandir
try:
    import prep.engine.sync.watch as _w
    _w.ANSWER_S = float(os.environ["PREP_TEST_ANSWER_S"])
except ImportError:
    pass
"""


def _prep_hanging_at(tmp_path: Path, hang: Path, *args: str) -> subprocess.CompletedProcess:
    shim = tmp_path / "shim"
    shim.mkdir(exist_ok=True)
    (shim / "sitecustomize.py").write_text(_HANG)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(shim), os.environ.get("PYTHONPATH", "")]),
        "PREP_TEST_HANG": str(hang),
        "PREP_TEST_ANSWER_S": "1",
        "HOME": str(tmp_path / "home"),
    }
    # (before: it hung there for good; 120 s is far more than a start under load takes)
    return subprocess.run(
        [sys.executable, "-m", "prep.tui.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _said_unanswered(where: Path) -> str:
    return (
        f"prep: {where}: did not answer for 1 s (a network share whose server is not "
        "reachable?); nothing synced, nothing written: sync again once it answers\n"
    )


def test_a_sync_folder_that_does_not_answer_is_named_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    db = tmp_path / "p.db"
    with Store.open(db) as s:
        rate(s, "x", 3, T0)
        s.set_meta("sync_dir", str(folder))
    before = db.read_bytes()
    out = _prep_hanging_at(tmp_path, folder, "--db", str(db), "sync")  # the configured one
    assert out.returncode == 2 and out.stdout == "", out.stdout + out.stderr
    assert out.stderr == _said_unanswered(folder)
    assert db.read_bytes() == before and not (tmp_path / "backups").exists()
    assert list(folder.iterdir()) == []
    new = tmp_path / "new" / "p.db"  # given, at a missing database: none made
    out = _prep_hanging_at(tmp_path, folder, "--db", str(new), "sync", str(folder))
    assert out.returncode == 2 and out.stderr == _said_unanswered(folder), out.stderr
    assert not new.parent.exists()
    out = _prep_hanging_at(tmp_path, folder, "--db", str(db), "sync", "--status")
    assert out.returncode == 2 and out.stderr == _said_unanswered(folder), out.stderr


def test_a_device_folder_elsewhere_that_does_not_answer_is_the_one_named(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    with Store.open(tmp_path / "a.db") as a:
        rate(a, "x", 3, T0)
        sync(a, folder)
        dev = local.device_id(a.conn)
    share = tmp_path / "share"
    (folder / dev).rename(share)
    (folder / dev).symlink_to(share)  # a device's folder kept on another share
    db = tmp_path / "b.db"
    out = _prep_hanging_at(tmp_path, folder / dev, "--db", str(db), "sync", str(folder))
    assert out.returncode == 2 and out.stderr == _said_unanswered(folder / dev), out.stderr
    assert not db.exists()


def test_a_share_that_answers_slowly_is_waited_for(tmp_path: Path, monkeypatch) -> None:
    """Each look has its own time to answer: a share slow at every listing, the whole over
    the limit, is waited for (as Anki's I/O timeout is reset by each byte)."""
    from prep.engine.sync import watch

    folder = tmp_path / "shared"
    folder.mkdir()
    for i in range(4):
        (folder / f"{i:016x}").mkdir()
    real = os.scandir

    def slow(path="."):  # type: ignore[no-untyped-def]
        time.sleep(0.15)
        return real(path)

    monkeypatch.setattr(os, "scandir", slow)
    started = time.monotonic()
    assert watch.unanswered(folder, timeout=0.5) is None
    assert time.monotonic() - started >= 0.75  # (5 listings: longer than the limit in all)


def test_a_second_link_to_this_devices_own_folder_is_skipped(tmp_path: Path) -> None:
    """This device's folder kept elsewhere and linked (sync15), and a second link to it under
    another device's name: that one is said and skipped, this device's journal written."""
    folder = tmp_path / "shared"
    folder.mkdir()
    with Store.open(tmp_path / "a.db") as a:
        rate(a, "x", 3, T0)
        sync(a, folder)
        dev = local.device_id(a.conn)
        rate(a, "y", 3, T0 + timedelta(days=1))
    outside = tmp_path / "outside"
    (folder / dev).rename(outside)
    (folder / dev).symlink_to(outside)
    extra = folder / ("0" * 16)
    extra.symlink_to(outside)
    code, out, err = _cli("--db", str(tmp_path / "a.db"), "sync", str(folder))
    # (before: "…/0000000000000000/00000001.jsonl: line 1: the header names device '…', not
    # its folder's; …", exit 2)
    assert code == 0, out + err
    assert out.splitlines() == [
        f"{extra}: a symbolic link to the same folder as {dev} (read as that device's): skipped.",
        "sent 1 review, received no review, 0 cards rescheduled",
    ]
    assert sorted(p.name for p in outside.iterdir()) == ["00000001.jsonl", "00000002.jsonl"]
