"""What an import took in from another machine is passed on by this machine's sync (a mark,
a cleared mark, the settings; engine/sync/relay.py), and after a restore the old id's unsent
demo runs reach the other machines exactly once."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from prep.engine.store import Mark, Store, backup, devices
from prep.engine.study.scheduler import Settings
from prep.engine.sync import journal
from prep.engine.sync.run import sync
from prep.engine.transfer import importer
from tests.test_sync import T0, rate, stores, view
from tests.test_sync_import import export


def entries(folder: Path, store: Store) -> list[list]:
    """Every entry in ``store``'s journal files, in order."""
    me = devices.device_id(store.conn)
    files = journal.numbered_files(folder / me)
    return [e for n in sorted(files) for e in journal.read(files[n], me).entries]


def test_a_mark_a_cleared_mark_and_settings_go_from_a_by_file_through_b_to_c(
    tmp_path: Path,
) -> None:
    """a never syncs: it exports to b by file; b syncs with c. c gets a's marks (and a's
    clearing of one of them) and a's settings, each with a's own clock."""
    (a, b, c), folder = stores(tmp_path, 3)
    rate(a, "x", 3, T0)
    a.set_mark("x", Mark(suspended=True), at=T0)
    a.set_mark("y", Mark(flagged=True), at=T0)
    a.save_settings(Settings(new_per_day=7), at=T0)
    importer.import_file(b, export(a, tmp_path / "1.json"))
    sent = sync(b, folder)
    assert sent.sent_reviews == 1 and sent.sent_other == 3  # two marks, the settings
    got = sync(c, folder)
    assert got.applied.marks == 2 and got.applied.settings
    assert c.mark("x") == Mark(suspended=True) and c.mark("y") == Mark(flagged=True)
    assert c.settings().new_per_day == 7
    # passed on once: nothing again, from b or (received by a sync) from c
    assert sync(b, folder).sent_other == 0 and sync(c, folder).sent_other == 0
    # a clears x's mark later: the clearing travels the same way
    a.set_mark("x", Mark(), at=T0 + timedelta(hours=1))
    a.save_settings(Settings(new_per_day=8), at=T0 + timedelta(hours=1))
    importer.import_file(b, export(a, tmp_path / "2.json"))
    assert sync(b, folder).sent_other == 2
    sync(c, folder)
    assert c.mark("x") == Mark() and c.mark("y") == Mark(flagged=True)
    assert c.settings().new_per_day == 8
    # every register c holds is a's, with a's clock (the origin, not b)
    a_id = devices.device_id(a.conn)
    relayed = [e for e in entries(folder, b) if e[0] in ("M", "S")]
    assert {e[1] for e in relayed} == {a_id} and len(relayed) == 5
    importer.import_file(a, export(c, tmp_path / "3.json"))
    assert view(a) == view(b) == view(c)


def test_the_origins_clock_decides_not_the_time_of_the_import(tmp_path: Path) -> None:
    """c flagged x after a suspended it, but before b imported a's mark: c's flag stays
    (last writer by a's clock), on c and, after c's sync, on b too."""
    (a, b, c), folder = stores(tmp_path, 3)
    a.set_mark("x", Mark(suspended=True), at=T0)
    c.set_mark("x", Mark(flagged=True), at=T0 + timedelta(minutes=5))
    importer.import_file(b, export(a, tmp_path / "1.json"))  # later than both
    sync(b, folder)
    got = sync(c, folder)
    assert got.applied.marks == 0 and c.mark("x") == Mark(flagged=True)
    sync(b, folder)
    assert b.mark("x") == Mark(flagged=True)


def test_a_mark_changed_here_before_the_sync_is_sent_as_this_machines_own(
    tmp_path: Path,
) -> None:
    """b takes a's mark by file, then unsuspends the card itself: only b's own mark is sent
    (the import's note is stale), and c ends with b's."""
    (a, b, c), folder = stores(tmp_path, 3)
    a.set_mark("x", Mark(suspended=True), at=T0)
    importer.import_file(b, export(a, tmp_path / "1.json"))
    b.set_mark("x", Mark(), at=T0 + timedelta(minutes=1))
    sync(b, folder)
    assert [e[0] for e in entries(folder, b)] == ["m"]
    sync(c, folder)
    assert c.mark("x") == Mark() and view(b) == view(c)


def test_a_relayed_mark_arriving_back_at_its_origin_changes_nothing(tmp_path: Path) -> None:
    """a syncs too (later): its own mark, passed on by b, and its own entry are one register;
    no loop (a does not send it again) and every machine agrees."""
    (a, b, c), folder = stores(tmp_path, 3)
    a.set_mark("x", Mark(suspended=True), at=T0)
    a.save_settings(Settings(new_per_day=6), at=T0)
    importer.import_file(b, export(a, tmp_path / "1.json"))
    sync(b, folder)
    first = sync(a, folder)  # sends its own two; receives them back from b: nothing new
    assert first.sent_other == 2 and first.applied.marks == 0 and not first.applied.settings
    assert sync(a, folder).sent_other == 0
    sync(c, folder)
    got = sync(b, folder)  # a's own entries: the same clocks, nothing taken
    assert got.applied.marks == 0 and not got.applied.settings
    assert view(a) == view(b) == view(c)


def test_a_journal_without_relayed_entries_stays_version_2(tmp_path: Path) -> None:
    (a, b), folder = stores(tmp_path, 2)
    a.set_mark("x", Mark(suspended=True), at=T0)
    first = sync(a, folder).journal
    importer.import_file(b, export(a, tmp_path / "1.json"))
    second = sync(b, folder).journal
    assert first is not None and second is not None
    assert json.loads(first.read_text().splitlines()[0])["version"] == 2
    assert json.loads(second.read_text().splitlines()[0])["version"] == 3


def _record(store: Store, name: str) -> None:
    store.record_demo_run(name=name, device="cpu", passed=True, seconds=0.5, ran_at=T0)


def runs_by_id(store: Store) -> list[tuple[str, int]]:
    """Every demo run's id (its device, its number there)."""
    return sorted(
        store.conn.execute(
            "SELECT d.id, coalesce(r.seq, r.id) FROM demo_runs r JOIN sync_devices d ON d.n = r.dev"
        )
    )


def test_after_a_restore_the_old_ids_unsent_demo_runs_arrive_once(tmp_path: Path) -> None:
    """a ran two demos after its backup: one it synced before the restore (in the folder
    under the old id), one it did not (the backup holds it as unsent). After `prep backup
    --restore` both reach b, once each, under the old id; nothing is sent twice."""
    (a, b), folder = stores(tmp_path, 2)
    old = devices.device_id(a.conn)
    _record(a, "first")  # in the backup, unsent there
    saved = backup.make(a, "daily", T0)
    assert saved is not None
    sync(a, folder)  # sent after the backup: "first" is in the folder under the old id
    backup.restore(a, saved.name)
    _record(a, "second")  # the new id's own
    sent = sync(a, folder)
    assert sent.sent_other == 2  # "first" passed on under the old id, "second" as its own
    sync(b, folder)
    assert len(b.demo_runs()) == 2 and len(set(runs_by_id(b))) == 2
    assert (old, 1) in runs_by_id(b)
    assert sync(a, folder).sent_other == 0
    sync(b, folder)
    assert runs_by_id(a) == runs_by_id(b) and view(a) == view(b)


def test_after_a_restore_a_run_never_synced_reaches_the_others(tmp_path: Path) -> None:
    """The old id never sent its run: without the restore's hand-over, b would never get it."""
    (a, b), folder = stores(tmp_path, 2)
    old = devices.device_id(a.conn)
    sync(a, folder)
    _record(a, "unsent")
    with a.transaction():
        devices.new_device(a.conn)
    assert sync(a, folder).sent_other == 1
    sync(b, folder)
    assert runs_by_id(b) == [(old, 1)] and view(a) == view(b)
    assert sync(a, folder).sent_other == 0


def test_a_demo_run_taken_in_by_an_import_is_held_once_everywhere(tmp_path: Path) -> None:
    """b imports a's run (as its own: an export does not carry a run's id) and syncs; a
    syncs too: c, and a itself, hold the run once (they held it twice)."""
    (a, b, c), folder = stores(tmp_path, 3)
    _record(a, "rank")
    importer.import_file(b, export(a, tmp_path / "1.json"))
    for s in (b, a, c, b):
        sync(s, folder)
    assert [len(s.demo_runs()) for s in (a, b, c)] == [1, 1, 1]
    assert view(a) == view(b) == view(c)
