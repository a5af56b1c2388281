"""What `prep sync` says: cards rescheduled on every path, the device's name, --status."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from click.testing import CliRunner

from prep.engine.store import Store
from prep.engine.sync.run import sync
from prep.tui.cli import main
from tests.test_sync import T0, rate, stores


def cli(db: Path, *args: str):
    return CliRunner().invoke(main, ["--db", str(db), *args])


def test_every_received_change_of_a_card_counts_as_rescheduled(tmp_path: Path) -> None:
    (a, b), folder = stores(tmp_path, 2)
    rate(a, "x", 3, T0)
    rate(a, "y", 3, T0)
    sync(a, folder)
    first = sync(b, folder)  # cards first scheduled here
    assert first.applied.rescheduled == 2 and "2 cards rescheduled" in first.summary()
    rate(a, "x", 3, T0 + timedelta(days=2))  # after b's last: appended to the stored state
    sync(a, folder)
    assert sync(b, folder).applied.rescheduled == 1
    rate(b, "y", 4, T0 + timedelta(days=3))
    rate(a, "y", 1, T0 + timedelta(days=1))  # before b's review of y: y replayed on b
    sync(a, folder)
    got = sync(b, folder)
    assert got.applied.reviews == 1 and got.applied.rescheduled == 1
    assert a.undo_last() is not None  # a's review of y: its tombstone reaches b
    sync(a, folder)
    undone = sync(b, folder)
    assert undone.applied.undone == 1 and undone.applied.reviews == 0
    assert undone.applied.rescheduled == 1, undone.summary()
    assert "1 undo" in undone.summary() and "1 card rescheduled" in undone.summary()
    # an undo that takes a card's only review away (the card is new again on b)
    rate(a, "z", 3, T0 + timedelta(days=4))
    sync(a, folder)
    sync(b, folder)
    assert a.undo_last() is not None
    sync(a, folder)
    gone = sync(b, folder)
    assert gone.applied.rescheduled == 1 and b.card("z") is None
    nothing = sync(b, folder)
    assert nothing.applied.rescheduled == 0 and "0 cards rescheduled" in nothing.summary()


def test_the_summary_names_the_device(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    assert cli(a, "config", "device_name", "laptop").output == "device_name = laptop\n"
    with Store.open(a) as store:
        rate(store, "x", 3, T0)
        rate(store, "y", 3, T0)
    assert cli(a, "sync", str(folder)).output.startswith("sent 2 reviews")
    out = cli(b, "sync", str(folder))
    assert out.exit_code == 0
    assert "received 2 reviews from laptop" in out.output and "2 cards rescheduled" in out.output
    status = cli(b, "sync", str(folder), "--status").output
    assert "laptop (" in status
    bad = cli(a, "config", "device_name", "x" * 65)
    assert bad.exit_code == 2 and bad.output.count("\n") == 1 and "64" in bad.output
    assert cli(a, "config", "device_name").output == "device_name = laptop\n"


def test_status_names_the_folder_given_and_the_configured_one(tmp_path: Path) -> None:
    given, configured = tmp_path / "given", tmp_path / "configured"
    given.mkdir()
    configured.mkdir()
    db = tmp_path / "p.db"
    Store.open(db).close()  # (--status only reads: it never creates the database)
    out = cli(db, "sync", str(given), "--status").output
    assert f"folder: {given} (given); none configured" in out
    cli(db, "config", "sync_dir", str(configured))
    out = cli(db, "sync", str(given), "--status").output
    assert f"folder: {given} (given); configured: {configured}" in out
    out = cli(db, "sync", "--status").output
    assert f"folder: {configured} (prep config sync_dir)" in out
    out = cli(db, "sync", str(tmp_path / "missing"), "--status").output
    assert "missing (no such folder) (given)" in out
