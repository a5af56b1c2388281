"""`prep sync` (engine/sync/): databases sharing one folder converge, whatever the order."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prep.engine.store import Mark, Store
from prep.engine.study.scheduler import CardState, Scheduler
from prep.engine.sync import journal
from prep.engine.sync.run import sync
from prep.tui.cli import main

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
LOCAL = ("deck", "content_hash", "removed", "changed")  # this machine's decks, not progress


def rate(store: Store, cid: str, rating: int, at: datetime) -> CardState:
    """Rate as a session does: the saved settings' scheduler, its parameters stored."""
    sched = Scheduler(store.settings())

    def decide(prev: CardState) -> CardState:
        when = at if prev.last_review is None else max(at, prev.last_review + timedelta.resolution)
        return sched.review(prev, rating, when, store.next_review_key()).state

    return store.rate_card(CardState(id=cid), decide, rating, at, None, sched.replay_params())[2]


def view(store: Store) -> tuple:
    """What every database that applied the same journals must hold alike."""
    d = store.dump()
    cards = [{k: v for k, v in c.items() if k not in LOCAL} for c in d["cards"]]
    for r in d["reviews"]:  # the states in the log carry the deck flags of their time too
        r["params"] = d["params"][r["params"]]  # (numbered per database)
        for side in ("prev", "next"):
            if r[side] is not None:
                r[side] = {k: v for k, v in r[side].items() if k not in LOCAL}
    reviews = sorted(json.dumps(r, sort_keys=True) for r in d["reviews"])
    runs = sorted(
        json.dumps({k: v for k, v in r.items() if k != "id"}, sort_keys=True)
        for r in d["demo_runs"]
    )
    return cards, reviews, d["marks"], d["settings"], runs


def stores(tmp_path: Path, n: int) -> tuple[list[Store], Path]:
    folder = tmp_path / "shared"
    folder.mkdir()
    return [Store.open(tmp_path / f"{i}.db") for i in range(n)], folder


def test_two_machines_converge(tmp_path: Path) -> None:
    (a, b), folder = stores(tmp_path, 2)
    rate(a, "x", 3, T0)
    rate(a, "x", 3, T0 + timedelta(days=3))
    rate(a, "y", 1, T0)
    rate(b, "x", 4, T0 + timedelta(days=1))  # between a's two: x is replayed on both
    rate(b, "z", 3, T0)
    assert a.undo_last() is not None  # y: undone on a, so nowhere
    a.set_mark("z", Mark(suspended=True), at=T0)
    first = sync(a, folder)
    assert first.sent_reviews == 2
    second = sync(b, folder)
    assert second.applied.reviews == 2 and second.applied.marks == 1
    assert "rescheduled" in second.summary()
    sync(a, folder)
    assert view(a) == view(b)
    assert a.card("y") is None and b.card("y") is None
    assert b.mark("z").suspended
    assert [r.rating for r in b.reviews(card_id="x")] == [3, 4, 3]  # in time order
    # nothing new: a sync again changes nothing
    before = view(a)
    again = sync(a, folder)
    assert again.sent_reviews == 0 and not again.applied.anything and view(a) == before


def test_replay_equals_rating_one_by_one(tmp_path: Path) -> None:
    """A database that only receives computes exactly the states the ratings gave."""
    (a, c), folder = stores(tmp_path, 2)
    a.save_settings(Scheduler().settings.__class__(desired_retention=0.85), at=T0)
    t = T0
    for i, rating in enumerate([3, 1, 3, 4, 2, 3, 3, 1, 3]):
        rate(a, "x", rating, t)
        rate(a, f"c{i % 3}", rating, t)
        t += timedelta(days=1 + i)
    sync(a, folder)
    sync(c, folder)
    assert view(a) == view(c)
    assert c.settings().desired_retention == 0.85


def _scenario(stores_: list[Store]) -> None:
    a, b, c = stores_
    rate(a, "x", 3, T0)
    rate(b, "x", 1, T0 + timedelta(minutes=5))
    rate(c, "x", 3, T0 - timedelta(minutes=10))  # c's clock 10 minutes behind
    rate(b, "y", 3, T0)
    rate(b, "y", 2, T0 + timedelta(days=2))
    assert b.undo_last() is not None
    rate(c, "y", 4, T0 + timedelta(days=1))
    a.set_mark("y", Mark(flagged=True), at=T0 + timedelta(hours=1))
    c.set_mark("y", Mark(suspended=True), at=T0 + timedelta(hours=2))  # the later one wins
    b.record_demo_run(name="rank", device="cpu", passed=True, seconds=1.5, ran_at=T0)


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_three_machines_in_every_order(tmp_path: Path, order: tuple[int, ...]) -> None:
    ss, folder = stores(tmp_path, 3)
    _scenario(ss)
    for i in order + order:  # twice round: everyone has everyone's entries
        sync(ss[i], folder)
    views = [view(s) for s in ss]
    assert views[0] == views[1] == views[2]
    assert ss[order[0]].mark("y") == Mark(suspended=True)
    assert len(ss[order[0]].demo_runs()) == 1
    assert len(ss[order[0]].reviews(card_id="x")) == 3


# --- properties: commutative, associative, idempotent ------------------------------------

op = st.tuples(
    st.integers(0, 2),  # device
    st.sampled_from(["rate", "rate", "rate", "undo", "mark"]),
    st.sampled_from(["p", "q", "r"]),  # card
    st.integers(1, 4),  # rating / mark kind
    st.integers(0, 60 * 24 * 20),  # minutes after T0 (each device's own clock)
)


@settings(
    max_examples=300 if os.environ.get("PREP_LONG_FUZZ") else 25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(ops=st.lists(op, max_size=14), syncs=st.lists(st.integers(0, 2), max_size=6))
def test_merge_properties(tmp_path_factory, ops, syncs) -> None:
    """Whatever each device does and whenever it syncs in between, once every device has
    synced twice round they hold the same cards, reviews, marks, settings and runs; a
    fourth database that applies the same journals in one go holds them too."""
    tmp = tmp_path_factory.mktemp("p")
    ss, folder = stores(tmp, 4)
    for i, (dev, kind, cid, n, minutes) in enumerate(ops):
        s = ss[dev]
        at = T0 + timedelta(minutes=minutes)
        if kind == "rate":
            rate(s, cid, n, at)
        elif kind == "undo":
            s.undo_last()
        else:
            s.set_mark(cid, Mark(suspended=n == 1, flagged=n >= 3), at=at)
        if i < len(syncs):
            sync(ss[syncs[i]], folder)
    for dev in (0, 1, 2, 0, 1, 2):
        sync(ss[dev], folder)
    sync(ss[3], folder)  # everything at once
    views = [view(s) for s in ss]
    assert views[0] == views[1] == views[2] == views[3]
    sync(ss[3], folder)  # idempotent
    assert view(ss[3]) == views[0]


# --- hostile, damaged and newer journals ---------------------------------------------------


def _journal_of(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A folder holding one device's journal, the file, and a fresh database (made: at a
    missing one, a sync that could apply nothing makes none, test_sync14.py)."""
    (a,), folder = stores(tmp_path, 1)
    rate(a, "x", 3, T0)
    path = sync(a, folder).journal
    assert path is not None
    a.close()
    Store.open(tmp_path / "fresh.db").close()
    return folder, path, tmp_path / "fresh.db"


def _lines(path: Path) -> list:
    return [json.loads(x) for x in path.read_text().splitlines()]


def _put(path: Path, lines: list) -> None:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda ls: ls[:1], "counts 1 entries"),
        (lambda ls: [{**ls[0], "version": journal.VERSION + 1}, *ls[1:]], "newer prep"),
        (lambda ls: [{**ls[0], "device": "0" * 16}, *ls[1:]], "not its folder's"),
        (lambda ls: [ls[0], ["r", 1, "x\u001b[2J", 3, 0, None, "1"]], "card id"),
        (lambda ls: [ls[0], ["r", 1, "x", 9, 0, None, "1"]], "rating"),
        (lambda ls: [ls[0], ["r", 1, "x", 3, 0, None, "nope"]], "parameters"),
        (lambda ls: [ls[0], ["s", 1, 0, {"desired_retention": 5}]], "desired_retention"),
        (lambda ls: [ls[0], ["zz"]], "unknown entry"),
        (lambda ls: [{**ls[0], "params": {"1": {"fuzz": "yes"}}}, *ls[1:]], "params"),
    ],
)
def test_bad_journal_refused_in_one_line(tmp_path: Path, damage, message: str) -> None:
    folder, path, fresh = _journal_of(tmp_path)
    _put(path, damage(_lines(path)))
    result = CliRunner().invoke(main, ["--db", str(fresh), "sync", str(folder)])
    assert result.exit_code == 2, result.output
    err = result.stderr.strip().splitlines()  # (the summary of the rest on stdout: nothing)
    assert len(err) == 1 and str(path) in err[0] and message in err[0], err
    assert result.stdout == "sent 0 reviews, received no review, 0 cards rescheduled\n"
    with Store.open(fresh) as s:
        assert s.count_reviews() == 0 and s.card("x") is None  # nothing applied


def test_damaged_bytes_and_cut_short(tmp_path: Path) -> None:
    folder, path, fresh = _journal_of(tmp_path)
    good = path.read_bytes()
    for bad in (good[:-5], b"\xff\xfe" + good, b"{" * 100_000 + b"\n"):
        path.write_bytes(bad)
        result = CliRunner().invoke(main, ["--db", str(fresh), "sync", str(folder)])
        assert result.exit_code == 2 and str(path) in result.output, result.output
    path.write_bytes(good)
    result = CliRunner().invoke(main, ["--db", str(fresh), "sync", str(folder)])
    assert result.exit_code == 0 and "received 1 review" in result.output, result.output


def test_journal_never_makes_prep_write_elsewhere(tmp_path: Path) -> None:
    """Device folders and file names are read, never written; ours is refused as a link."""
    folder, path, fresh = _journal_of(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (folder / "../../etc").mkdir(parents=True, exist_ok=True)  # odd names are ignored
    with Store.open(fresh) as s:
        from prep.engine.store import devices as local

        me = local.device_id(s.conn)
        rate(s, "k", 3, T0)
        (folder / me).symlink_to(outside)
        with pytest.raises(Exception, match="symbolic link"):
            sync(s, folder)
    assert list(outside.iterdir()) == []


# --- kill -9 during the write and during the apply -----------------------------------------

_KILLER = """
import os, signal, sys
from pathlib import Path
from prep.engine.store import Store
from prep.engine.sync import journal, merge, run
where = sys.argv[3]
if where == "write":
    real = os.link
    def link(*a, **k):
        os.kill(os.getpid(), signal.SIGKILL)
    os.link = link
else:
    real = merge.replay
    calls = []
    def replay(*a, **k):
        calls.append(1)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*a, **k)
    merge.replay = replay
run.sync(Store.open(sys.argv[1]), Path(sys.argv[2]))
"""


@pytest.mark.parametrize("where", ["write", "apply"])
def test_kill_9_then_the_next_sync_completes(tmp_path: Path, where: str) -> None:
    (a, b), folder = stores(tmp_path, 2)
    for i in range(5):
        rate(a, f"c{i}", 3, T0)
        rate(b, f"c{i}", 1, T0 + timedelta(hours=1))
    sync(a, folder)
    a.close()
    b.close()
    db = tmp_path / "1.db"
    proc = subprocess.run([sys.executable, "-c", _KILLER, str(db), str(folder), where])
    assert proc.returncode == -signal.SIGKILL
    with Store.open(db) as b, Store.open(tmp_path / "0.db") as a:
        if where == "apply":
            assert b.count_reviews() == 5  # the transaction was rolled back: nothing applied
        sync(b, folder)
        sync(a, folder)
        sync(b, folder)
        assert view(a) == view(b)
        assert a.count_reviews() == 10
    assert not [p for p in folder.rglob(".tmp-*")]


# --- the command ---------------------------------------------------------------------------


def test_sync_dir_setting_status_and_backups(tmp_path: Path) -> None:
    (a, b), folder = stores(tmp_path, 2)
    rate(a, "x", 3, T0)
    a.close()
    b.close()
    run = CliRunner().invoke
    assert run(main, ["--db", str(tmp_path / "0.db"), "sync"]).exit_code == 2
    assert (
        run(main, ["--db", str(tmp_path / "0.db"), "config", "sync_dir", str(folder)]).exit_code
        == 0
    )
    out = run(main, ["--db", str(tmp_path / "0.db"), "sync"])
    assert out.exit_code == 0 and "sent 1 review" in out.output, out.output
    out = run(main, ["--db", str(tmp_path / "1.db"), "sync", str(folder)])
    assert "received 1 review from" in out.output, out.output
    out = run(main, ["--db", str(tmp_path / "1.db"), "sync", str(folder), "--status", "--json"])
    info = json.loads(out.output)
    assert len(info["devices"]) == 1 and info["devices"][0]["applied"] == 1
    # the sync that applied an entry backed the database up first; sync_dir is not synced
    listed = run(main, ["--db", str(tmp_path / "1.db"), "backup", "--list"]).output
    assert "-sync.db" in listed, listed
    with Store.open(tmp_path / "1.db") as s:
        assert s.get_meta("sync_dir") is None
        assert s.count_reviews() == 1
    name = next(line.split()[0] for line in listed.splitlines() if "-sync.db" in line)
    out = run(main, ["--db", str(tmp_path / "1.db"), "backup", "--restore", name])
    assert out.exit_code == 0, out.output
    with Store.open(tmp_path / "1.db") as s:
        assert s.count_reviews() == 0  # as before the sync
    out = run(main, ["--db", str(tmp_path / "1.db"), "sync", str(folder)])
    with Store.open(tmp_path / "1.db") as s:
        assert s.count_reviews() == 1, out.output  # the journal is the truth: it comes back


def test_an_old_database_upgrades_and_syncs_its_history(tmp_path: Path) -> None:
    """A database from before sync (reviews without device or parameters) upgrades, and its
    history goes to the folder like any other."""
    (a, b), folder = stores(tmp_path, 2)
    rate(a, "x", 3, T0)
    rate(a, "x", 1, T0 + timedelta(days=2))
    a.conn.execute("UPDATE reviews SET params = 1")
    a.close()
    b.close()
    with Store.open(tmp_path / "0.db") as a, Store.open(tmp_path / "1.db") as b:
        sync(a, folder)
        sync(b, folder)
        assert view(a) == view(b)
    _ = os  # (imported for the subprocess environment)


# --- cost (scaled down; tests/benchmarks/sync_bench.py has the 1M-review numbers) ----------


def _day_sync_statements(tmp_path: Path, history: int) -> tuple[int, float, float]:
    """SQL statements a day's sync (20 reviews from another machine) runs on a database
    with ``history`` reviews; and the journal's and the database's bytes per review."""
    (a, b), folder = stores(tmp_path, 2)
    cards = [f"c{i:04d}" for i in range(max(1, history // 10))]
    with a.transaction():
        for i in range(history):
            rate(a, cards[i % len(cards)], 3, T0 + timedelta(days=i // len(cards) * 7))
    first = sync(a, folder)
    assert first.journal is not None
    journal_per_review = first.journal.stat().st_size / history
    a.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db_per_review = (tmp_path / "0.db").stat().st_size / history
    sync(b, folder)
    for cid in cards[:20]:
        rate(b, cid, 2, T0 + timedelta(days=400))
    sync(b, folder)
    statements: list[str] = []
    a.conn.set_trace_callback(statements.append)
    # (b's reviews are dated T0 + 400 days: sync16b's rule waits for what is a day ahead)
    got = sync(a, folder, now=T0 + timedelta(days=401))
    a.conn.set_trace_callback(None)
    assert got.applied.reviews == 20 and got.applied.rescheduled == 20
    return len(statements), journal_per_review, db_per_review


def test_a_days_sync_reads_only_what_is_new(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "l").mkdir()
    small, _, _ = _day_sync_statements(tmp_path / "s", 200)
    large, journal_bytes, db_bytes = _day_sync_statements(tmp_path / "l", 2000)
    assert large == small  # the same statements, whatever the size of the history
    assert journal_bytes < db_bytes  # the journal grows by less than the database


def test_a_mark_set_again_under_a_clock_set_back_wins_everywhere(tmp_path: Path) -> None:
    """The last mark set here is the last everywhere, even when the clock went back between
    (found by the property test: the other machines kept the earlier, later-stamped mark)."""
    (a, b), folder = stores(tmp_path, 2)
    a.set_mark("p", Mark(suspended=True), at=T0 + timedelta(minutes=5))
    a.set_mark("p", Mark(), at=T0 + timedelta(minutes=1))
    sync(a, folder)
    sync(b, folder)
    assert a.mark("p") == b.mark("p") == Mark()
