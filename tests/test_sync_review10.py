"""The review of sync10's fork detection (rev10): what is not proof of a copy, a stuck file
whose modification time is ahead, and pending relays kept without a quadratic scan."""

from __future__ import annotations

import json
import os
import shutil
import time
from datetime import timedelta
from pathlib import Path

import pytest

from prep.engine.store import Store
from prep.engine.store import devices as local
from prep.engine.sync import fork, imported, stuck
from prep.engine.sync.journal import file_name
from prep.engine.sync.run import sync
from tests.test_sync import T0, rate
from tests.test_sync_fork import _copy, _ids, _setup
from tests.test_sync_replaced import files, put
from tests.test_sync_stuck import _half_arrived


def _two_files(tmp_path: Path):
    a, folder = _setup(tmp_path)
    me = local.device_id(a.conn)
    rate(a, "x", 3, T0)
    sync(a, folder, now=T0)
    rate(a, "y", 3, T0 + timedelta(days=1))
    sync(a, folder, now=T0 + timedelta(days=1))
    return a, folder, me


def test_own_file_with_a_damaged_header_is_no_proof_of_a_copy(tmp_path: Path) -> None:
    a, folder, me = _two_files(tmp_path)
    p = folder / me / file_name(1)
    whole = p.read_bytes()
    time.sleep(0.05)  # (past the file system's change-time tick)
    p.write_bytes(b"\x00" * 100)  # damaged, or being written again in place
    r = sync(a, folder, now=T0 + timedelta(days=2))
    assert r.forked is None and local.device_id(a.conn) == me
    assert r.held is not None and str(p) in r.held  # waited for, as stuck.py's rule says
    p.write_bytes(whole)
    rate(a, "z", 3, T0 + timedelta(days=3))
    r = sync(a, folder, now=T0 + timedelta(days=3))
    assert r.forked is None and r.held is None and r.sent_reviews == 1
    assert local.device_id(a.conn) == me


def test_own_file_emptied_a_moment_is_no_proof_of_a_copy(tmp_path: Path) -> None:
    a, folder, me = _two_files(tmp_path)
    p = folder / me / file_name(1)
    whole = p.read_bytes()
    time.sleep(0.05)
    p.write_bytes(b"")
    sync(a, folder, now=T0 + timedelta(days=2))
    p.write_bytes(whole)
    r = sync(a, folder, now=T0 + timedelta(days=3))
    assert r.forked is None and local.device_id(a.conn) == me


def test_own_older_version_coming_back_to_a_folder_made_again_is_not_a_copy(
    tmp_path: Path,
) -> None:
    a, folder = _setup(tmp_path)
    me = local.device_id(a.conn)
    rate(a, "x", 3, T0)
    sync(a, folder, now=T0)
    old1 = (folder / me / file_name(1)).read_bytes()
    shutil.rmtree(folder / me)  # the folder made again
    rate(a, "y", 3, T0 + timedelta(days=1))
    assert sync(a, folder, now=T0 + timedelta(days=1)).forked is None
    time.sleep(0.05)
    (folder / me / file_name(1)).write_bytes(old1)  # its own old version comes back
    r = sync(a, folder, now=T0 + timedelta(days=2))
    assert r.forked is None, r.forked
    assert local.device_id(a.conn) == me


def test_another_header_in_the_same_change_time_tick_is_checked(tmp_path: Path) -> None:
    """A file replaced within the change-time tick of the mark (coarse file system clocks):
    its header is not one this database wrote there, so it is checked again."""
    a, folder, me = _two_files(tmp_path)
    p = folder / me / file_name(1)
    text = p.read_text()
    head, _, rest = text.partition("\n")
    header = json.loads(head)
    header["written_at"] = "2030-01-01T00:00:00Z"
    mark = int(local.json_meta(a.conn, fork.CTIME_KEY))
    p.write_text(json.dumps(header) + "\n" + rest)
    ctimes = {n: mark for n in (1, 2)}  # (as a coarse clock would give them)
    files = {1: p, 2: folder / me / file_name(2)}
    wrote_at = fork._wrote(a.conn, folder)
    assert fork._unchecked(a.conn, files, ctimes, wrote_at) == (0, [1, 2])
    p.write_text(text)  # as it wrote it: still known as its own
    assert fork._unchecked(a.conn, files, ctimes, wrote_at) == (2, [])


def test_a_stuck_file_with_a_modification_time_ahead_is_set_aside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _cp1, cp2, _other, folder, written, _whole = _half_arrived(tmp_path)
    ahead = time.time() + 2 * 86400  # the machine that wrote it is two days ahead
    os.utime(written, (ahead, ahead))
    assert sync(cp2, folder).held is not None
    assert sync(cp2, folder).held is not None  # (not unchanged long enough yet)
    later = time.time_ns() + (stuck.STUCK_S + 60) * 1_000_000_000
    monkeypatch.setattr(stuck.time, "time_ns", lambda: later)
    r = sync(cp2, folder)
    assert r.held is None and r.set_aside is not None and r.sent_reviews == 1


def test_many_pending_relays_are_noted_in_linear_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Other devices' reviews imported after a sync are noted ("p") and listed by new_device
    through one merge (devices.with_pending) whose work grows linearly: the comparisons of
    device ids it makes are counted, not seconds timed (a 15 s bound failed at load ~10).
    A list scan (each against every one before it) made 4x the comparisons for 2x the
    reviews."""
    a, folder = _setup(tmp_path)
    rate(a, "c0", 3, T0)
    sync(a, folder, now=T0)
    n = 300

    def export(dev: str) -> dict:
        out: dict[str, list] = {}
        for i in range(n):
            out.setdefault(f"k{i % 50}", []).append(
                {
                    "reviewed_at": (T0 + timedelta(days=1, minutes=i)).isoformat(),
                    "device": dev,
                    "seq": i + 1,
                    "rating": 3,
                    "duration_ms": 1000,
                    "params": None,
                }
            )
        return out

    merged = []
    real = local.with_pending
    monkeypatch.setattr(local, "with_pending", lambda p, r: merged.append(1) or real(p, r))
    for dev in ("a" * 16, "b" * 16):  # (the second one's against the first one's pending)
        with a.transaction():
            imported.merge_reviews(a, export(dev))
    with a.transaction():
        local.new_device(a.conn)
    monkeypatch.undo()
    assert len(merged) == 3  # both imports and the new id go through the one merge
    pending = local.json_meta(a.conn, "sync_sent")["p"]
    assert len(pending) == 2 * n and len({tuple(p) for p in pending}) == 2 * n

    class Dev(str):
        """A device id that counts the comparisons made with it."""

        calls = 0

        def __eq__(self, other: object) -> bool:
            Dev.calls += 1
            return str.__eq__(self, other)

        def __hash__(self) -> int:
            Dev.calls += 1
            return str.__hash__(self)

    def work(k: int) -> int:
        Dev.calls = 0
        old = [[Dev("a" * 16), i] for i in range(k)]
        new = [(Dev("b" * 16), i) for i in range(k)] + [(Dev("a" * 16), i) for i in range(k)]
        assert len(local.with_pending(old, new)) == 2 * k
        return Dev.calls

    small, large = work(2_000), work(4_000)
    assert large <= 2.2 * small and large <= 20 * 4_000, (small, large)


def test_a_file_replaced_while_a_sync_writes_is_checked_by_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sync tool puts the other copy's version of file 2 in place between fork.check and
    the write of file 3: the mark of what was checked does not move past it."""
    f1, f2 = tmp_path / "f1", tmp_path / "f2"
    f1.mkdir()
    f2.mkdir()
    cp1, c = Store.open(tmp_path / "cp1.db"), Store.open(tmp_path / "c.db")
    rate(cp1, "x", 3, T0)
    sync(cp1, f1)
    cp2 = _copy(tmp_path, cp1, "cp2.db")
    shutil.copytree(f1, f2, dirs_exist_ok=True)
    me = local.device_id(cp1.conn)
    rate(cp1, "y", 3, T0 + timedelta(days=1))
    sync(cp1, f1)  # cp1's file 2
    rate(cp2, "z", 1, T0 + timedelta(days=1, minutes=1))
    sync(cp2, f2)  # cp2's file 2
    rel2 = f"{me}/{file_name(2)}"
    theirs = files(f2)[rel2]
    rate(cp1, "w", 3, T0 + timedelta(days=2))
    real = fork.intend

    def intend(store, planned, at):  # the tool replaces file 2 while this sync runs
        put(f1, rel2, theirs)
        return real(store, planned, at)

    monkeypatch.setattr(fork, "intend", intend)
    assert sync(cp1, f1).forked is None  # (not seen yet: it came after the check)
    monkeypatch.undo()
    assert sync(cp1, f1).forked is not None  # the next sync sees it
    for _ in range(2):
        sync(cp1, f1)
        sync(c, f1)
    assert {r[2] for r in _ids(c)} >= {"x", "y", "w", "z"}
