"""A review's identity is its origin (device, sequence number) on every path it travels:
export and import carry it, an import keeps it, a sync dedups by it and passes on what an
import brought. And the fuzz of a review is seeded by that id (DESIGN, "Decisions")."""

from __future__ import annotations

import random
from collections import Counter
from datetime import timedelta
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prep.engine.store import Mark, Store, devices
from prep.engine.study.scheduler import CardState, Scheduler, Settings
from prep.engine.sync.run import sync
from prep.engine.transfer import export as ex
from prep.engine.transfer import importer
from tests.test_sync import T0, rate, stores, view


def ids(store: Store) -> Counter:
    """How many times each review (by its id) is held."""
    return Counter((r["device"], r["seq"]) for r in store.dump()["reviews"])


def held_once(store: Store) -> bool:
    return all(n == 1 for n in ids(store).values())


def export(store: Store, path: Path) -> Path:
    ex.export_json(store, path, T0)
    return path


def device_id(store: Store) -> str:
    return devices.device_id(store.conn)


def test_imported_then_synced_is_held_once(tmp_path: Path) -> None:
    (a, b), folder = stores(tmp_path, 2)
    rate(a, "x", 3, T0)
    rate(a, "x", 3, T0 + timedelta(days=2))
    importer.import_file(b, export(a, tmp_path / "a.json"))
    assert {d for d, _ in ids(b)} == {device_id(a)}  # the import kept the origin
    sync(a, folder)
    result = sync(b, folder)
    assert result.applied.reviews == 0  # held already, by its id
    assert len(b.reviews(card_id="x")) == 2 and held_once(b)
    sync(a, folder)
    assert view(a) == view(b)


def test_synced_then_imported_is_held_once(tmp_path: Path) -> None:
    (a, b), folder = stores(tmp_path, 2)
    rate(a, "x", 3, T0)
    rate(b, "x", 1, T0 + timedelta(hours=1))  # b's own history of x: the import diverges
    rate(a, "x", 4, T0 + timedelta(days=1))
    sync(a, folder)
    sync(b, folder)
    result = importer.import_file(b, export(a, tmp_path / "a.json"))
    assert result.reviews_added == 0
    assert len(b.reviews(card_id="x")) == 3 and held_once(b)
    sync(a, folder)
    assert view(a) == view(b)


def test_exported_by_a_third_machine_keeps_the_origin(tmp_path: Path) -> None:
    (a, b, c), folder = stores(tmp_path, 3)
    rate(a, "x", 3, T0)
    rate(a, "y", 2, T0)
    sync(a, folder)
    sync(c, folder)
    importer.import_file(b, export(c, tmp_path / "c.json"))  # a's reviews, by way of c
    assert {d for d, _ in ids(b)} == {device_id(a)}
    sync(b, folder)
    assert len(b.reviews()) == 2 and held_once(b)
    for s in (a, c, b, a, c):
        sync(s, folder)
    assert view(a) == view(b) == view(c)


def test_an_import_is_passed_on_by_a_sync(tmp_path: Path) -> None:
    """a never syncs: what b took in from a's export reaches c through b's journal, with
    a's id, and is held once when a's own journal comes later."""
    (a, b, c), folder = stores(tmp_path, 3)
    rate(a, "x", 3, T0)
    importer.import_file(b, export(a, tmp_path / "a.json"))
    assert sync(b, folder).sent_reviews == 1
    sync(c, folder)
    assert {d for d, _ in ids(c)} == {device_id(a)}
    sync(a, folder)
    sync(c, folder)
    assert held_once(c) and len(c.reviews()) == 1
    assert sync(b, folder).sent_reviews == 0  # passed on once, not again
    assert view(a) == view(b) == view(c)


def test_an_undo_reaches_an_imported_review(tmp_path: Path) -> None:
    (a, b), folder = stores(tmp_path, 2)
    rate(a, "x", 3, T0)
    rate(a, "x", 1, T0 + timedelta(days=2))
    importer.import_file(b, export(a, tmp_path / "a.json"))
    assert a.undo_last() is not None
    sync(a, folder)
    sync(b, folder)
    assert [r.rating for r in b.reviews(card_id="x")] == [3]
    assert view(a) == view(b)
    # and an old export of a, imported again, does not bring the undone review back
    importer.import_file(b, tmp_path / "a.json")
    assert [r.rating for r in b.reviews(card_id="x")] == [3]
    assert view(a) == view(b)


def test_csv_export_carries_the_origin(tmp_path: Path) -> None:
    (a, b), folder = stores(tmp_path, 2)
    rate(a, "x", 3, T0)
    ex.export_csv(a, tmp_path / "a.csv")
    importer.import_file(b, tmp_path / "a.csv")
    sync(a, folder)
    sync(b, folder)
    assert held_once(b) and view(a) == view(b)


# --- the property: any mix of ratings, undos, exports/imports and syncs -----------------

OPS = st.lists(
    st.tuples(
        st.sampled_from(["rate", "rate", "undo", "import", "sync", "mark", "settings", "run"]),
        st.integers(0, 2),  # the machine acting
        st.integers(0, 2),  # the other machine (the export's) / the card
        st.integers(1, 4),  # a rating / a mark / a setting
    ),
    min_size=1,
    max_size=14,
)


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(ops=OPS, finish=st.sampled_from(["sync", "import", "relay"]))
def test_any_path_holds_each_review_once(tmp_path_factory, ops, finish) -> None:
    """Any mix of ratings, undos, marks, settings, demo runs, exports/imports and syncs on 3
    machines with disagreeing clocks; then everyone syncs -- or only exports and imports, so an undo,
    a mark and the settings must travel through an export as through a sync -- or 0 reaches 2
    only through 1 (0 -> file -> 1 -> sync -> 2), so what 1 took in by an import must travel
    on by 1's sync: all agree."""
    tmp = tmp_path_factory.mktemp("paths")
    dbs, folder = stores(tmp, 3)
    clocks = [T0, T0 + timedelta(minutes=3), T0 - timedelta(minutes=10)]  # clocks disagree
    try:
        for step, (op, who, other, n) in enumerate(ops):
            s = dbs[who]
            if op == "rate":
                clocks[who] += timedelta(hours=7 * n)
                rate(s, f"c{other}", n, clocks[who])
            elif op == "undo":
                s.undo_last()
            elif op == "import" and other != who:
                importer.import_file(s, export(dbs[other], tmp / f"e{step}.json"))
            elif op == "sync":
                sync(s, folder)
            elif op == "mark":
                clocks[who] += timedelta(minutes=n)
                mark = Mark(suspended=n == 1, flagged=n >= 3, buried_until=None)
                s.set_mark(f"c{other}", mark, at=clocks[who])
            elif op == "settings":
                s.save_settings(Settings(new_per_day=10 * n + who))
            elif op == "run":  # a demo run (its time names the machine: no two alike)
                clocks[who] += timedelta(seconds=n)
                when = clocks[who] + timedelta(microseconds=who)
                s.record_demo_run(
                    name=f"d{other}", device="cpu", passed=n > 1, seconds=n, ran_at=when
                )
            assert held_once(s)
        if finish == "relay":  # 0 only exports to 1 by file; 1 and 2 sync; 0 imports 1's
            for round_ in range(2):
                importer.import_file(dbs[1], export(dbs[0], tmp / f"r{round_}.json"))
                for s in (dbs[1], dbs[2], dbs[1]):
                    sync(s, folder)
            importer.import_file(dbs[0], export(dbs[1], tmp / "back.json"))
        for round_ in range(2 * (finish != "relay")):  # everyone syncs (or imports the others')
            for i, s in enumerate(dbs):
                if finish == "sync":
                    sync(s, folder)
                    continue
                for j, o in enumerate(dbs):
                    if j != i:
                        importer.import_file(s, export(o, tmp / f"f{round_}{i}{j}.json"))
        views = [view(s) for s in dbs]
        assert views[0] == views[1] == views[2]
        assert all(held_once(s) for s in dbs)
        undone = set()
        for s in dbs:  # nothing undone anywhere is held anywhere
            undone |= {
                (d, q)
                for d, q in s.conn.execute(
                    "SELECT d.id, g.seq FROM review_graves g JOIN sync_devices d ON d.n = g.dev"
                )
            }
        assert not undone & set(ids(dbs[0]))
    finally:
        for s in dbs:
            s.close()


# --- the fuzz is seeded by the review's own id -------------------------------------------


def test_fuzz_seeded_by_the_review_id_replays_as_rated(tmp_path: Path) -> None:
    """Two machines rate the same cards (fuzz on: intervals of weeks), their reviews
    interleave; both compute the same states, and those are what rating the merged log one
    by one gives when each review's fuzz comes from its own id. With the old seeding (card
    id and review count) a review's draw changed when another machine's review landed
    before it, and this last comparison failed."""
    (a, b), folder = stores(tmp_path, 2)
    rng = random.Random(7)
    ta, tb = T0, T0 + timedelta(hours=5)
    for _ in range(12):
        ta += timedelta(days=rng.randint(1, 9))
        tb += timedelta(days=rng.randint(1, 9))
        rate(a, f"c{rng.randint(0, 2)}", rng.choice([2, 3, 3, 4]), ta)
        rate(b, f"c{rng.randint(0, 2)}", rng.choice([1, 3, 3, 4]), tb)
    for s in (a, b, a):
        sync(s, folder)
    assert view(a) == view(b)
    data = a.dump()
    sched = Scheduler(a.settings())
    assert sched.enable_fuzzing
    for cid in ("c0", "c1", "c2"):
        log = sorted(
            (r for r in data["reviews"] if r["card_id"] == cid),
            key=lambda r: (r["reviewed_at"], r["device"], r["seq"]),
        )
        state = CardState(id=cid)
        for r in log:
            at = a.reviews(card_id=cid)[log.index(r)].reviewed_at
            state = sched.review(state, r["rating"], at, f"{r['device']}:{r['seq']}").state
        card = a.card(cid)
        assert card is not None
        assert (card.due, card.stability, card.reps) == (state.due, state.stability, state.reps)
    assert any(c["reps"] >= 4 for c in data["cards"])  # intervals long enough to be fuzzed


def test_preview_is_what_the_rating_gives(tmp_path: Path) -> None:
    """The interval on a button is seeded by the id the review will get."""
    with Store.open(tmp_path / "p.db") as store:
        t = T0
        for _ in range(5):
            rate(store, "x", 3, t)
            t += timedelta(days=20)
        sched = Scheduler(store.settings())
        shown = sched.preview(store.card("x"), t, store.next_review_key())
        given_ = rate(store, "x", 3, t)
        assert given_.due == shown[3].state.due


def test_a_new_device_id_passes_on_what_the_old_one_had_not_sent(tmp_path: Path) -> None:
    """After a restore (a new device id), the reviews the old id made but never sent reach
    the others, with the old id, once; those it had sent are not sent again."""
    (a, b), folder = stores(tmp_path, 2)
    rate(a, "x", 3, T0)
    sync(a, folder)
    rate(a, "y", 3, T0)  # never sent under the old id
    old = device_id(a)
    with a.transaction():
        devices.new_device(a.conn)
    result = sync(a, folder)
    assert result.sent_reviews == 1  # y, passed on; x is in the folder already
    sync(b, folder)
    assert {d for d, _ in ids(b)} == {old} and len(b.reviews()) == 2 and held_once(b)
    assert sync(a, folder).sent_reviews == 0
    rate(a, "x", 4, T0 + timedelta(days=3))  # the new id's own
    sync(a, folder)
    sync(b, folder)
    assert view(a) == view(b) and held_once(b)


def test_a_hostile_review_id_in_an_export_is_refused_in_one_line(tmp_path: Path) -> None:
    import json

    import pytest

    (a, b), _folder = stores(tmp_path, 2)
    rate(a, "x", 3, T0)
    good = json.loads(ex.to_json(a, T0))
    cases = {
        "device must be 16 hex digits": {"device": "../../etc"},
        "device and seq come together": {"seq": None},
        "seq must be between 1 and": {"seq": 1 << 63},
        "is not in the export's params": {"params": "nope"},
    }
    for message, change in cases.items():
        data = json.loads(json.dumps(good))
        data["reviews"][0].update(change)
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(data))
        with pytest.raises(ex.ExportError, match=message) as err:
            importer.import_file(b, path)
        assert "\n" not in str(err.value) and "bad.json" in str(err.value)
    data = json.loads(json.dumps(good))
    data["params"][good["reviews"][0]["params"]]["fuzz_by"] = "clock"
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(ex.ExportError, match="fuzz_by"):
        importer.import_file(b, tmp_path / "bad.json")
    assert b.count_reviews() == 0
    # the same id with another rating: a conflict, nothing imported
    importer.import_file(b, export(a, tmp_path / "a.json"))
    data = json.loads(json.dumps(good))
    data["reviews"][0]["rating"] = 1
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(ex.ExportError, match="conflict"):
        importer.import_file(b, tmp_path / "bad.json")


def test_a_reviews_fuzz_does_not_depend_on_where_it_lands() -> None:
    """Reviews made with "fuzz_by": "review" (rounds 7-11, replayed so): the draw follows the
    review's id, not the card's review count: a review another machine's review lands before
    (one more rep) keeps its fuzz; another id draws anew. (New reviews are seeded by the card
    and its history: tests/test_fuzz_by_card.py.)"""
    from dataclasses import replace

    from prep.engine.study.scheduler import FUZZ_BY_REVIEW

    sched = Scheduler(fuzz_by=FUZZ_BY_REVIEW)
    card = sched.review(CardState(id="x"), 4, T0, "a:1").state
    for _ in range(3):  # a review state with an interval of weeks: fuzzed
        card = sched.review(card, 3, card.due, "a:2").state
    when = card.due
    draws = {
        sched.review(replace(card, reps=reps), 3, when, "0123456789abcdef:5").interval
        for reps in range(1, 12)
    }
    assert len(draws) == 1
    others = {sched.review(card, 3, when, f"0123456789abcdef:{s}").interval for s in range(40)}
    assert len(others) > 1
    # (without an id, as before: the review count seeds it)
    assert len({sched.review(replace(card, reps=r), 3, when).interval for r in range(40)}) > 1
