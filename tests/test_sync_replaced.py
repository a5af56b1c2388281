"""A sync tool that keeps a folder in step peer to peer (Syncthing-like) may replace a file by
another version of it: two copies of one database (one device id) both wrote their journal
file number N, one version wins everywhere, and a third device may have applied the losing
version first. Each device here has its own copy of the folder; ``deliver`` is the tool."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from datetime import timedelta
from pathlib import Path
from unittest import mock

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from prep.engine.store import Mark, Store
from prep.engine.store import devices as local
from prep.engine.sync import adopted
from prep.engine.sync.journal import JournalError
from prep.engine.sync.run import status, sync
from tests.test_sync import T0, rate, view
from tests.test_sync_fork import _converged, _copy, _ids


def files(folder: Path) -> dict[str, bytes]:
    """Every journal file of a folder, by its path inside it."""
    out = {}
    for dev in sorted(os.listdir(folder)):
        if (folder / dev).is_dir():
            for name in sorted(os.listdir(folder / dev)):
                if name.endswith(".jsonl"):
                    out[f"{dev}/{name}"] = (folder / dev / name).read_bytes()
    return out


def put(folder: Path, rel: str, data: bytes) -> None:
    """The sync tool puts a version of a file in place (atomically, replacing one there)."""
    path = folder / rel
    path.parent.mkdir(exist_ok=True)
    tmp = path.parent / ".syncthing.tmp"
    tmp.write_bytes(data)
    os.replace(tmp, path)


def whole(data: bytes) -> bool:
    """Whether ``data`` is a whole journal file (a tool passes on no half-arrived file)."""
    lines = data.split(b"\n")
    try:
        return lines[-1] == b"" and json.loads(lines[0])["entries"] == len(lines) - 2
    except (ValueError, KeyError, TypeError):
        return False


def deliver(src: Path, dst: Path) -> None:
    """Every file of ``src`` arrives in ``dst``: a version there of the same name is replaced."""
    for rel, data in files(src).items():
        if whole(data):
            put(dst, rel, data)


def settle(*folders: Path) -> None:
    """The tool settles: one version of each file (the same rule everywhere) in every folder."""
    won: dict[str, bytes] = {}
    for f in folders:
        for rel, data in files(f).items():
            if whole(data):
                won[rel] = max(won.get(rel, data), data)
    for f in folders:
        have = files(f)
        for rel, data in won.items():
            if have.get(rel) != data:
                put(f, rel, data)


def test_a_third_device_that_applied_the_losing_version_first(tmp_path: Path) -> None:
    """c applies the losing version of the shared id's file 2, then the winner: it takes the
    winner's review and keeps the loser's aside until the loser, finding the copy, sends it
    under its new id: each held once, none lost (before: z twice, y missing)."""
    f1, f2, f3 = (tmp_path / n for n in ("f1", "f2", "f3"))
    for f in (f1, f2, f3):
        f.mkdir()
    cp1, c = Store.open(tmp_path / "cp1.db"), Store.open(tmp_path / "c.db")
    rate(cp1, "x", 3, T0)
    sync(cp1, f1)
    deliver(f1, f3)
    sync(c, f3)
    cp2 = _copy(tmp_path, cp1, "cp2.db")
    shutil.copytree(f1, f2, dirs_exist_ok=True)
    rate(cp1, "y", 3, T0 + timedelta(days=1))  # A: file 2 of the shared id on cp1
    rate(cp2, "z", 1, T0 + timedelta(days=1, minutes=1))  # B: file 2 on cp2, same number
    sync(cp1, f1)
    sync(cp2, f2)
    a, b = files(f1), files(f2)
    (rel,) = [r for r in a if a[r] != b.get(r, a[r])]
    deliver(f2, f3)  # the losing version reaches c first
    sync(c, f3)
    put(f3, rel, a[rel])  # then the winner replaces it everywhere
    put(f2, rel, a[rel])
    said = sync(c, f3).applied.notes  # c reads the winner before the loser finds the copy
    assert len(said) == 1 and "set aside until their copy sends them again" in said[0]
    assert {r[2] for r in _ids(c)} == {"x", "y"}  # z no longer held under y's id
    assert status(c, f3)["reviews_set_aside"] == 1  # (not lost: kept in the database)
    for _ in range(3):
        for s, f in ((cp2, f2), (cp1, f1), (c, f3)):
            said += sync(s, f).applied.notes
            settle(f1, f2, f3)
    _converged(cp1, cp2, c)
    assert len(said) == 1 and status(c, f3)["reviews_set_aside"] == 0
    assert {r[2] for r in _ids(c)} == {"x", "y", "z"} and len(_ids(c)) == 3
    assert local.device_id(cp1.conn) != local.device_id(cp2.conn)
    assert view(c) == view(cp1)


# --- any device, any order of arrivals ---------------------------------------------------

LONG = bool(os.environ.get("PREP_LONG_FUZZ"))
# (weighted: a review, a sync and a delivery are what make two versions of one file; "one"
# delivers one device's folder only, so a copy's new id can arrive before the winning
# version of an older file; "partial" leaves half of a file in place, an older one too)
# ("late": a sync past adopted.ADOPT_S, when a review set aside is taken as the device's own)
KINDS = ["rate"] * 3 + ["sync"] * 3 + ["deliver"] * 2 + ["one"] * 2
KINDS += ["undo", "mark", "partial", "late"]
# (kind, device, device or card, whose folder: a device's id now, 4 the id the copies shared)
step = st.tuples(st.sampled_from(KINDS), st.integers(0, 3), st.integers(0, 3), st.integers(0, 4))
# the copies 1 and 2 write the shared id's files 2 (2: z0, then 3: z1, then 1: y, whose
# version of file 2 wins: written last); 3 applies 2's; 2 finds the copy and sends z0 under
# its new id, which reaches 3 before the winning file 2 does (rev10's reproductions)
LATE_WINNER = [
    ("rate", 2, 2, 0),
    ("sync", 2, 0, 0),
    ("rate", 2, 1, 0),
    ("sync", 2, 0, 0),
    ("rate", 1, 0, 0),
    ("sync", 1, 0, 0),
    ("deliver", 2, 3, 0),
    ("sync", 3, 0, 0),
    ("one", 1, 2, 4),
    ("sync", 2, 0, 0),
    ("one", 2, 3, 2),
    ("sync", 3, 0, 0),
]


@settings(
    max_examples=300 if LONG else 25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@example(before=[("rate", 0, 0, 0), ("sync", 0, 0, 0)], after=LATE_WINNER)
@example(  # the same, the winning file 2 half rewritten at 3 when the new id arrives there
    before=[("rate", 0, 0, 0), ("sync", 0, 0, 0)],
    after=[*LATE_WINNER[:10], ("partial", 1, 3, 1), *LATE_WINNER[10:]],
)
@example(  # a card's first review displaced, a later one left: its log read before (sync11b)
    before=[],
    after=[
        ("rate", 0, 0, 0),
        ("rate", 1, 1, 0),
        ("rate", 2, 1, 0),
        ("sync", 1, 0, 0),
        ("deliver", 1, 2, 0),
        ("sync", 0, 0, 0),
        ("sync", 2, 0, 0),
    ],
)
@example(  # a copy undoes the review it was made with, then syncs (sync11b's case B)
    before=[("rate", 0, 0, 0)],
    after=[
        ("undo", 1, 0, 0),
        ("sync", 1, 0, 0),
        ("sync", 2, 0, 0),
        ("deliver", 1, 0, 0),
        ("sync", 0, 0, 0),
    ],
)
@given(before=st.lists(step, max_size=4), after=st.lists(step, min_size=4, max_size=20))
def test_any_device_any_order_of_arrivals_converges(tmp_path_factory, before, after) -> None:
    """Devices 0 and 3 (independent), 1 and 2 copies of 0 made after ``before``; each syncs
    with its own copy of the folder, and the tool delivers files between them in any order
    (all of a folder, or one device's files), a version arriving replacing the one there,
    an older file's too. Once the tool settles and every device has synced round, all hold
    the same reviews, each once, and none made is lost."""
    tmp = tmp_path_factory.mktemp("p2p")
    folders = [tmp / f"f{i}" for i in range(4)]
    for f in folders:
        f.mkdir()
    ss: list[Store | None] = [Store.open(tmp / "d0.db"), None, None, Store.open(tmp / "d3.db")]
    clock = iter(range(1, 10_000))
    shared: list[str] = []  # the id the copies were made under

    def act(kind: str, i: int, arg: int, which: int) -> None:
        s = ss[i]
        if kind in ("deliver", "partial", "one"):
            src, dst = i, arg
            if ss[src] is None or ss[dst] is None or src == dst:
                return
            if kind == "deliver":
                deliver(folders[src], folders[dst])
            elif kind == "one":  # one device's files only (its id now, or the shared one)
                owner = ss[which] if which < 4 else None
                dev = local.device_id(owner.conn) if owner is not None else shared[:1]
                for rel, data in files(folders[src]).items():
                    if rel.split("/")[0] in dev and whole(data):
                        put(folders[dst], rel, data)
            elif have := files(folders[src]):  # the tool has brought half of one file
                rel = sorted(have, key=lambda r: r.split("/")[1])[-1 - which % len(have)]
                put(folders[dst], rel, have[rel][: len(have[rel]) // 2])
        elif s is None:
            return
        elif kind == "rate":
            rate(s, "xyz"[arg % 3], 1 + next(clock) % 4, T0 + timedelta(minutes=next(clock)))
        elif kind == "undo":
            s.undo_last()
        elif kind == "mark":
            n = next(clock)
            s.set_mark(
                "xyz"[arg % 3],
                Mark(suspended=n % 2 == 0, flagged=n % 3 == 0),
                at=T0 + timedelta(minutes=n),
            )
        else:  # ("late": every review set aside is taken in, as after ADOPT_S)
            late = mock.patch.object(adopted, "ADOPT_S", -1 if kind == "late" else adopted.ADOPT_S)
            with late, contextlib.suppress(JournalError):  # another's file half arrived: refused
                sync(s, folders[i])

    for kind, i, arg, which in before:
        act(kind, i, arg, which)
    shared.append(local.device_id(ss[0].conn))  # type: ignore[union-attr]
    for i in (1, 2):
        ss[i] = _copy(tmp, ss[0], f"d{i}.db")  # type: ignore[arg-type]
        shutil.copytree(folders[0], folders[i], dirs_exist_ok=True)
    live = [s for s in ss if s is not None]
    held_before = {(r[2], r[3], r[4]) for r in _ids(live[0])}
    for kind, i, arg, which in after:
        act(kind, i, arg, which)
    made = set().union(
        *(
            {(r[2], r[3], r[4]) for r in _ids(s) if r[0] == local.device_id(s.conn)} - held_before
            for s in live
        )
    )
    settle(*folders)
    for _ in range(3):
        for i, s in enumerate(live):
            sync(s, folders[i])
            settle(*folders)
    _converged(*live)
    assert made <= {(r[2], r[3], r[4]) for r in _ids(live[0])}  # nothing made is lost
    for s in live:  # nothing left aside: every copy synced again
        assert status(s, None)["reviews_set_aside"] == 0


def _relay(folder: Path, about: Store, entry_from: Path, at_shift: int) -> None:
    """A device "e" passes on (an "R" entry) review 1 of ``about``'s id as in ``entry_from``,
    its time moved by ``at_shift`` microseconds (0: as it is)."""
    from prep.engine.sync import journal

    head, *lines = entry_from.read_text().splitlines()
    header = json.loads(head)
    r = next(json.loads(x) for x in lines if json.loads(x)[0] == "r")
    dev = local.device_id(about.conn)
    entry = ["R", dev, r[1], r[2], r[3], r[4] + at_shift, r[5], r[6]]
    header.update(device="e" * 16, name="e", file=None, entries=None)
    journal.write(folder / ("e" * 16), header, [entry])


def test_a_review_passed_on_that_differs_from_its_own_journal_is_said_and_not_taken(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "f"
    folder.mkdir()
    a, c, d = (Store.open(tmp_path / f"{n}.db") for n in "acd")
    rate(a, "x", 3, T0)
    written = sync(a, folder).journal
    assert written is not None
    sync(c, folder)  # c holds a's review 1 as a's journal has it
    _relay(folder, a, written, at_shift=7)  # e passes on another review under that id
    said = sync(c, folder).applied.notes
    assert len(said) == 1 and "differ from the ones held under their ids" in said[0]
    # d reads e's file first (its folder sorts before a's? whichever: the journal decides)
    sync(d, folder)
    assert view(c) == view(d) == view(a)
    assert [r.reviewed_at for r in d.reviews(card_id="x")] == [
        r.reviewed_at for r in a.reviews(card_id="x")
    ]


def test_a_mark_in_the_losing_version_reaches_every_device(tmp_path: Path) -> None:
    f1, f2, f3 = (tmp_path / n for n in ("f1", "f2", "f3"))
    for f in (f1, f2, f3):
        f.mkdir()
    cp1, c = Store.open(tmp_path / "cp1.db"), Store.open(tmp_path / "c.db")
    rate(cp1, "x", 3, T0)
    sync(cp1, f1)
    cp2 = _copy(tmp_path, cp1, "cp2.db")
    shutil.copytree(f1, f2, dirs_exist_ok=True)
    rate(cp1, "y", 3, T0 + timedelta(days=1))
    cp2.set_mark("x", Mark(suspended=True), at=T0 + timedelta(days=1, hours=1))
    sync(cp1, f1)
    sync(cp2, f2)  # its file 2 holds the mark; cp1's file 2 wins
    deliver(f2, f3)
    sync(c, f3)  # c takes the mark from the losing version
    assert c.mark("x").suspended
    deliver(f1, f2)
    deliver(f1, f3)
    for _ in range(3):
        for s, f in ((cp2, f2), (cp1, f1), (c, f3)):
            sync(s, f)
            settle(f1, f2, f3)
    _converged(cp1, cp2, c)
    assert cp1.mark("x").suspended  # the loser's mark, sent again under its new id


def test_a_copy_finds_an_older_file_of_its_own_replaced(tmp_path: Path) -> None:
    """cp1 wrote files 1 and 2; its copy cp2 wrote its own file 1 (a folder not in step
    yet); the tool keeps cp2's file 1. cp1's last file is as it wrote it, yet it must find
    the copy (before: it went on as if file 1 were its own; its review there was lost)."""
    f1, f2 = tmp_path / "f1", tmp_path / "f2"
    f1.mkdir()
    f2.mkdir()
    cp1 = Store.open(tmp_path / "cp1.db")
    cp2 = _copy(tmp_path, cp1, "cp2.db")
    rate(cp1, "x", 3, T0)
    sync(cp1, f1)
    rate(cp1, "y", 3, T0 + timedelta(hours=1))
    sync(cp1, f1)
    rate(cp2, "z", 2, T0 + timedelta(hours=2))
    sync(cp2, f2)
    (rel,) = files(f2)
    put(f1, rel, files(f2)[rel])  # cp2's version of file 1 wins
    deliver(f1, f2)
    assert sync(cp1, f1).forked is not None
    for _ in range(2):
        for s, f in ((cp2, f2), (cp1, f1)):
            sync(s, f)
            settle(f1, f2)
    _converged(cp1, cp2)
    assert sorted(r[2] for r in _ids(cp1)) == ["x", "y", "z"]
