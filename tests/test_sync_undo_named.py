"""Journal v4: an undo names the review it undid (its time and rating), so a copy of a database
tells its twin's undo of a review both hold (made before the copy) from the undo of another
review the twin made since under the same number (sync11b's case B)."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from prep.engine.store import Store
from prep.engine.store import devices as local
from prep.engine.sync import adopted, journal
from prep.engine.sync.journal import JournalError
from prep.engine.sync.run import status, sync
from prep.engine.timeutil import utcnow
from prep.engine.transfer.export import export_json
from prep.engine.transfer.importer import import_file
from prep.tui.cli import main
from tests.test_sync import T0, rate
from tests.test_sync_fork import _converged, _copy, _ids
from tests.test_sync_replaced import deliver, files, put, settle


def _lines(path: Path) -> list:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_an_undo_names_the_review_it_undid_and_only_then_is_v4(tmp_path: Path) -> None:
    folder = tmp_path / "f"
    folder.mkdir()
    a = Store.open(tmp_path / "a.db")
    rate(a, "x", 3, T0)
    plain = sync(a, folder).journal
    assert plain is not None
    # its reviews' parameters seed the fuzz by the card (round 12): v4 for those; its entries
    # alone (no undo naming a review) would be v2, read by older preps
    first, *plain_entries = _lines(plain)
    assert first["version"] == 4 and journal.version_for(plain_entries, {}) == 2
    rate(a, "y", 2, T0 + timedelta(hours=1))
    undone = a.undo_last()
    assert undone is not None
    written = sync(a, folder).journal
    assert written is not None
    head, entry = _lines(written)
    me = local.device_id(a.conn)
    at = int(undone.reviewed_at.timestamp() * 1_000_000)
    assert head["version"] == 4 and entry[:4] == ["u", me, 2, "y"] and entry[5:] == [at, 2]
    assert journal.version_for([entry], {}) == 4  # the named undo alone makes it v4
    b = Store.open(tmp_path / "b.db")
    assert sync(b, folder).applied.reviews == 1 and b.card("y") is None


def test_a_v4_file_is_refused_in_one_line_by_a_prep_that_reads_v3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The existing rule for a newer format: one line, exit 2, nothing applied."""
    folder = tmp_path / "f"
    folder.mkdir()
    a = Store.open(tmp_path / "a.db")
    rate(a, "x", 3, T0)
    rate(a, "y", 3, T0 + timedelta(hours=1))
    a.undo_last()
    written = sync(a, folder).journal
    a.close()
    monkeypatch.setattr(journal, "VERSION", 3)
    result = CliRunner().invoke(main, ["--db", str(tmp_path / "old.db"), "sync", str(folder)])
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.strip().splitlines()  # (stdout: the rest's summary, nothing)
    assert str(written) in line and "newer prep" in line and "v4" in line
    with Store.open(tmp_path / "old.db") as old:
        assert old.count_reviews() == 0


def test_a_named_undo_in_an_older_file_is_refused(tmp_path: Path) -> None:
    """An undo of seven fields exists since v4: in a v3 file it is a damaged entry."""
    folder = tmp_path / "f"
    folder.mkdir()
    a = Store.open(tmp_path / "a.db")
    rate(a, "x", 3, T0)
    path = sync(a, folder).journal
    assert path is not None
    head, entry = _lines(path)
    bad = [{**head, "version": 3, "entries": 2}, entry, ["u", head["device"], 1, "x", 5, 0, 3]]
    path.write_text("".join(json.dumps(x) + "\n" for x in bad))
    with pytest.raises(JournalError, match="unknown entry 'u' with 7 fields"):
        journal.read(path, head["device"])
    path.write_text("".join(json.dumps(x) + "\n" for x in [{**bad[0], "version": 4}, *bad[1:]]))
    assert journal.read(path, head["device"]).entries[1][5:] == [0, 3]


def test_case_b_a_copy_undoes_the_review_it_was_made_with(tmp_path: Path) -> None:
    """0 rates x, is copied to 1 and 2; 1 undoes that review and syncs, so does 2 (its own
    file 1 holds the review); 0 reads 1's version first, 2's version wins later. Before: 0
    moved its review to a new id (the undo might be of another review numbered 1), and
    every device but 0 then held it twice (reps 2; 0: reps 1). Now the undo names the
    review: it is the one 0 holds, undone on every device, none held twice."""
    fs = [tmp_path / f"f{i}" for i in range(3)]
    for f in fs:
        f.mkdir()
    d0 = Store.open(tmp_path / "d0.db")
    rate(d0, "x", 2, T0)
    d1, d2 = _copy(tmp_path, d0, "d1.db"), _copy(tmp_path, d0, "d2.db")
    assert d1.undo_last() is not None
    sync(d1, fs[1])
    sync(d2, fs[2])
    deliver(fs[1], fs[0])
    assert sync(d0, fs[0]).forked is not None
    assert d0.card("x") is None  # the undo was of its review: undone here too
    (rel,) = files(fs[2])
    for f in fs:  # 2's version of the shared file 1 wins everywhere
        put(f, rel, files(fs[2])[rel])
    for _ in range(3):
        for s, f in ((d0, fs[0]), (d1, fs[1]), (d2, fs[2])):
            sync(s, f)
            settle(*fs)
    _converged(d0, d1, d2)
    assert _ids(d0) == [] and all(s.card("x") is None for s in (d0, d1, d2))


def test_an_undo_of_another_review_under_the_number_leaves_ours(tmp_path: Path) -> None:
    """The copy is made before 0's review: 1 rates x and undoes it (its number 1), 0 rates x
    at another time (its number 1 too). The undo names 1's review, not 0's: 0's moves to
    its new id and is held everywhere, once."""
    fs = [tmp_path / f"f{i}" for i in range(2)]
    for f in fs:
        f.mkdir()
    d0 = Store.open(tmp_path / "d0.db")
    d1 = _copy(tmp_path, d0, "d1.db")
    rate(d1, "x", 1, T0)
    assert d1.undo_last() is not None
    rate(d0, "x", 3, T0 + timedelta(minutes=5))
    sync(d1, fs[1])
    deliver(fs[1], fs[0])
    assert sync(d0, fs[0]).forked is not None
    assert d0.card("x") is not None and d0.card("x").reps == 1
    for _ in range(3):
        for s, f in ((d0, fs[0]), (d1, fs[1])):
            sync(s, f)
            settle(*fs)
    _converged(d0, d1)
    assert [(r[2], r[4]) for r in _ids(d1)] == [("x", 3)]


def test_an_undo_of_this_ids_review_taken_in_elsewhere_is_never_a_number_it_reaches(
    tmp_path: Path,
) -> None:
    """note11: an undo under this database's id that it did not make (a copy's, taken in by
    `prep import`) names a number its own numbering may not have reached yet: a review made
    here later under that number was buried by it, here at the next replay and on every
    device that applied the undo (before: the new rating of y was lost everywhere)."""
    folder = tmp_path / "f"
    folder.mkdir()
    cp1 = Store.open(tmp_path / "cp1.db")
    rate(cp1, "x", 3, T0)
    cp2 = _copy(tmp_path, cp1, "cp2.db")
    for k in range(3):  # its numbers 2, 3, 4, each undone
        rate(cp2, "x", 3, T0 + timedelta(days=1 + k))
        assert cp2.undo_last() is not None
    export_json(cp2, tmp_path / "cp2.json", T0 + timedelta(days=9))
    import_file(cp1, tmp_path / "cp2.json")
    rate(cp1, "y", 4, T0 + timedelta(days=10))  # made here after the import
    ids = {r[1] for r in _ids(cp1) if r[2] == "y"}
    assert ids and not ids & {2, 3, 4}
    sync(cp1, folder)
    c = Store.open(tmp_path / "c.db")
    sync(c, folder)
    assert c.card("y") is not None and c.card("y").reps == 1


# --- a review set aside whose copy never syncs again (engine/sync/adopted.py) -------------


def _aside_at_c(tmp_path: Path, also: bool = False):
    """test_sync_replaced's first case: c applies the losing version of the shared id's file
    2 (cp2's review z), then the winner (cp1's y): z is set aside at c (and, ``also``, at e,
    a fourth device in the same place with its own folder f4)."""
    f1, f2, f3, f4 = (tmp_path / n for n in ("f1", "f2", "f3", "f4"))
    for f in (f1, f2, f3, f4):
        f.mkdir()
    cp1, c = Store.open(tmp_path / "cp1.db"), Store.open(tmp_path / "c.db")
    thirds = [(c, f3), *([(Store.open(tmp_path / "e.db"), f4)] if also else [])]
    rate(cp1, "x", 3, T0)
    sync(cp1, f1)
    for s, f in thirds:
        deliver(f1, f)
        sync(s, f)
    cp2 = _copy(tmp_path, cp1, "cp2.db")
    shutil.copytree(f1, f2, dirs_exist_ok=True)
    rate(cp1, "y", 3, T0 + timedelta(days=1))
    rate(cp2, "z", 1, T0 + timedelta(days=1, minutes=1))
    sync(cp1, f1)
    sync(cp2, f2)
    a, b = files(f1), files(f2)
    (rel,) = [r for r in a if a[r] != b.get(r, a[r])]
    for s, f in thirds:
        deliver(f2, f)
        sync(s, f)
        put(f, rel, a[rel])
        sync(s, f)
        assert status(s, f)["reviews_set_aside"] == 1 and "z" not in {r[2] for r in _ids(s)}
    put(f2, rel, a[rel])
    return (f1, f2, f3, f4), cp1, cp2, [s for s, _f in thirds]


def later() -> datetime:
    """A time past ADOPT_S from now (the clock a review is set aside by)."""
    return utcnow() + timedelta(seconds=adopted.ADOPT_S + 60)


def test_a_review_aside_for_long_is_taken_as_this_devices_own(tmp_path: Path) -> None:
    """Its copy never syncs again: after ADOPT_S, c holds z as its own review (before: aside
    for good, unscheduled), naming the id it was made under; every device gets it once."""
    (f1, _f2, f3, _f4), cp1, _cp2, (c,) = _aside_at_c(tmp_path)
    assert sync(c, f3).adopted is None  # (not yet: the copy may still sync)
    result = sync(c, f3, now=later())
    assert result.adopted is not None and "1 review set aside for over 7 days" in result.adopted
    assert status(c, f3)["reviews_set_aside"] == 0 and c.card("z") is not None
    me = local.device_id(c.conn)
    assert [(r[0], r[2]) for r in _ids(c) if r[2] == "z"] == [(me, "z")]
    entry = _lines(result.journal)[-1]
    assert _lines(result.journal)[0]["version"] == 4 and entry[0] == "r" and entry[2] == "z"
    assert entry[7:] == [local.device_id(cp1.conn), 2]  # the id it was made under
    d = Store.open(tmp_path / "d.db")
    settle(f1, f3)
    for s, f in ((cp1, f1), (d, f3), (c, f3), (cp1, f1)):
        sync(s, f)
        settle(f1, f3)
    _converged(cp1, c, d)
    assert {r[2] for r in _ids(d)} == {"x", "y", "z"}


@pytest.mark.parametrize("copy_first", [True, False])
def test_the_copy_returning_after_its_review_was_taken_in_holds_it_once(
    tmp_path: Path, copy_first: bool
) -> None:
    """c took z in; then the copy syncs after all: it finds the copy, sends z under its new
    id with z's number. Whichever arrives first where, z is held once everywhere, under the
    copy's id (the one taken in stands down)."""
    (f1, f2, f3, _f4), cp1, cp2, (c,) = _aside_at_c(tmp_path)
    sync(c, f3, now=later())
    order = ((cp2, f2), (cp1, f1), (c, f3)) if copy_first else ((cp1, f1), (c, f3), (cp2, f2))
    for _ in range(3):
        for s, f in order:
            sync(s, f)
            settle(f1, f2, f3)
    _converged(cp1, cp2, c)
    zs = [r for r in _ids(c) if r[2] == "z"]
    assert len(zs) == 1 and zs[0][0] == local.device_id(cp2.conn) and zs[0][1] == 2
    assert all(status(s, None)["reviews_set_aside"] == 0 for s in (cp1, cp2, c))


def test_two_devices_that_took_the_same_review_in_hold_it_once(tmp_path: Path) -> None:
    """c and e both set z aside and both take it in: the smaller id's is held, everywhere;
    when the copy returns, its own (under its new id)."""
    (f1, f2, f3, f4), cp1, cp2, (c, e) = _aside_at_c(tmp_path, also=True)
    assert sync(c, f3, now=later()).adopted and sync(e, f4, now=later()).adopted
    for _ in range(3):
        for s, f in ((c, f3), (e, f4), (cp1, f1)):
            sync(s, f)
            settle(f1, f3, f4)
    _converged(cp1, c, e)
    (z,) = [r for r in _ids(c) if r[2] == "z"]
    assert z[0] == min(local.device_id(c.conn), local.device_id(e.conn))
    g = Store.open(tmp_path / "g.db")  # both adoptions arrive in one sync: held once
    sync(g, f3)
    _converged(cp1, c, e, g)
    for _ in range(3):
        for s, f in ((cp2, f2), (c, f3), (e, f4), (cp1, f1)):
            sync(s, f)
            settle(f1, f2, f3, f4)
    _converged(cp1, cp2, c, e)
    (z,) = [r for r in _ids(c) if r[2] == "z"]
    assert z[0] == local.device_id(cp2.conn)
    h = Store.open(tmp_path / "h.db")  # the adoptions and the copy's own in one sync
    sync(h, f3)
    _converged(cp1, cp2, c, e, h)
