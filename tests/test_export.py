"""`prep export --format json|csv` and `prep import`: round trips, idempotence, bad input."""

from __future__ import annotations

import json
import os
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prep.engine.decks.collection import CachedCollection
from prep.engine.store import Store
from prep.engine.study.scheduler import CardState, Rating, Scheduler, Settings
from prep.engine.study.session import ReviewSession
from prep.engine.transfer import export as ex
from prep.engine.transfer import importer
from prep.tui.cli import main

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def review_all(store: Store, coll: CachedCollection, now: datetime, ratings: list[int]) -> None:
    """One pass over today's queue at ``now`` (fuzz off), rating in turn from ``ratings``."""
    session = ReviewSession(
        store, coll, scheduler=Scheduler(store.settings(), enable_fuzzing=False), clock=lambda: now
    )
    i = 0
    while not session.finished and i < len(ratings):
        session.rate(Rating(ratings[i]), duration_ms=1000 + i)
        i += 1


def history(store: Store, coll: CachedCollection, days: int = 3) -> None:
    for d in range(days):
        review_all(store, coll, T0 + timedelta(days=d * 3), [3, 1, 4, 2, 3, 3])
    store.record_demo_run(
        name="block-diagonal",
        device="cpu",
        passed=True,
        seconds=0.25,
        scale="small",
        seed=0,
        metrics={"max_off_block": 0.0, "note": "ünïcode"},
        ran_at=T0,
    )


def snapshot(store: Store) -> dict:
    """Everything stored, comparable across databases."""
    return store.dump()


def cli(db: Path, *args: str, input: str | None = None):
    return CliRunner().invoke(main, ["--db", str(db), *args], input=input)


@pytest.fixture
def filled(tmp_path: Path, small_collection: CachedCollection) -> Store:
    store = Store.open(tmp_path / "src.db")
    history(store, small_collection)
    yield store
    store.close()


# --- round trips ------------------------------------------------------------------------------


def test_json_round_trip_is_lossless(filled: Store, tmp_path: Path) -> None:
    out = tmp_path / "progress.json"
    ex.export_json(filled, out, T0)
    data = json.loads(out.read_text())
    assert data["format"] == "prep-export" and data["version"] == 1
    assert data["exported_at"] == "2026-03-02T09:00:00.000000Z"
    assert len(data["reviews"]) == filled.count_reviews() > 4
    assert set(data["reviews"][0]) == {*ex.REVIEW_COLUMNS, "params"}
    assert isinstance(data["reviews"][-1]["next"], dict)
    assert data["demo_runs"][0]["metrics"]["note"] == "ünïcode"

    with Store.open(tmp_path / "dst.db") as dst:
        result = importer.import_file(dst, out)
        assert result.reviews_added == filled.count_reviews()
        assert snapshot(dst) == snapshot(filled)
        assert dst.reviews() == [r for r in filled.reviews()]  # same ids, states, times
        again = tmp_path / "again.json"
        ex.export_json(dst, again, T0)
    assert again.read_text() == out.read_text()


def test_csv_round_trip_is_lossless(filled: Store, tmp_path: Path) -> None:
    filled.save_settings(Settings(desired_retention=0.85, new_per_day=7))
    out = tmp_path / "log.csv"
    written = ex.export_csv(filled, out)
    assert [p.name for p in written] == [
        "log.csv",
        "log.cards.csv",
        "log.demo_runs.csv",
        "log.marks.csv",
        "log.settings.csv",
        "log.undone.csv",
    ]
    header = out.read_text().splitlines()[0]
    assert header == ",".join(ex.REVIEW_COLUMNS)
    assert (tmp_path / "log.cards.csv").read_text().splitlines()[0] == ",".join(ex.CARD_COLUMNS)

    with Store.open(tmp_path / "dst.db") as dst:
        importer.import_file(dst, out)
        assert snapshot(dst) == snapshot(filled)
        assert dst.settings() == filled.settings()
        second = tmp_path / "second.csv"
        ex.export_csv(dst, second)
    for a, b in zip(written, ex.csv_paths(second).values(), strict=True):
        assert a.read_text() == b.read_text()


def test_import_twice_adds_nothing_twice(filled: Store, tmp_path: Path) -> None:
    out = tmp_path / "p.json"
    ex.export_json(filled, out, T0)
    with Store.open(tmp_path / "dst.db") as dst:
        importer.import_file(dst, out)
        before = snapshot(dst)
        result = importer.import_file(dst, out)
        assert (result.reviews_added, result.cards_added, result.demo_runs_added) == (0, 0, 0)
        assert result.reviews_skipped == filled.count_reviews()
        assert snapshot(dst) == before
        # the CSV form of the same data is recognised as the same too
        ex.export_csv(filled, tmp_path / "p.csv")
        result = importer.import_file(dst, tmp_path / "p.csv")
        assert result.reviews_added == 0
        assert snapshot(dst) == before


def test_a_later_export_brings_an_earlier_import_up_to_date(
    tmp_path: Path, small_collection: CachedCollection
) -> None:
    with Store.open(tmp_path / "a.db") as a, Store.open(tmp_path / "b.db") as b:
        review_all(a, small_collection, T0, [3, 3, 3, 3])
        ex.export_json(a, tmp_path / "monday.json", T0)
        review_all(a, small_collection, T0 + timedelta(days=5), [3, 2, 3, 4])
        ex.export_json(a, tmp_path / "friday.json", T0)

        importer.import_file(b, tmp_path / "monday.json")
        result = importer.import_file(b, tmp_path / "friday.json")
        assert result.cards_updated > 0 and result.reviews_added > 0
        assert snapshot(b) == snapshot(a)
        # and the older file, imported again, changes nothing (this database is newer)
        result = importer.import_file(b, tmp_path / "monday.json")
        assert result.reviews_added == 0 and result.cards_updated == 0
        assert snapshot(b) == snapshot(a)


# hypothesis: random review histories survive both formats unchanged.
_event = st.tuples(
    st.integers(0, 3),  # which card
    st.sampled_from([1, 2, 3, 4]),  # rating
    st.integers(1, 60 * 24 * 20),  # minutes since the previous review
    st.one_of(st.none(), st.integers(0, 10**7)),  # duration_ms
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(events=st.lists(_event, max_size=25), retention=st.floats(0.7, 0.99))
def test_round_trip_random_histories(tmp_path_factory, events, retention: float) -> None:
    tmp = tmp_path_factory.mktemp("rt")
    ids = ["alpha", "beta-2", "gamma", "delta-4"]  # slugs, as decks allow (import refuses others)
    src = Store.memory()
    src.save_settings(Settings(desired_retention=retention))
    sched = Scheduler(src.settings(), enable_fuzzing=True, seed=3)
    now = T0
    for which, rating, minutes, duration in events:
        now += timedelta(minutes=minutes)
        prev = src.card(ids[which]) or CardState(id=ids[which], deck="d", content_hash="h")
        out = sched.review(prev, rating, now)
        src.record_review(None if prev.is_new else prev, out.state, rating, now, duration)
    ex.export_json(src, tmp / "a.json", T0)
    ex.export_csv(src, tmp / "a.csv")
    for name in ("a.json", "a.csv"):
        dst = Store.memory()
        importer.import_file(dst, tmp / name)
        assert snapshot(dst) == snapshot(src)
        assert importer.import_file(dst, tmp / name).reviews_added == 0
        dst.close()
    src.close()


def test_settings_are_imported_only_into_a_database_without_its_own(
    filled: Store, tmp_path: Path
) -> None:
    filled.save_settings(Settings(new_per_day=3))
    ex.export_json(filled, tmp_path / "p.json", T0)
    with Store.open(tmp_path / "new.db") as fresh:
        assert importer.import_file(fresh, tmp_path / "p.json").settings == "imported"
        assert fresh.settings().new_per_day == 3
    with Store.open(tmp_path / "own.db") as own:
        own.save_settings(Settings(new_per_day=11))
        assert importer.import_file(own, tmp_path / "p.json").settings == "kept"
        assert own.settings().new_per_day == 11


# --- bad input: clear errors, nothing stored changes -------------------------------------------


def test_export_to_an_unwritable_path_is_a_clear_error(filled: Store, tmp_path: Path) -> None:
    before = snapshot(filled)
    for target in (tmp_path / "no" / "such" / "dir" / "p.json", tmp_path):
        with pytest.raises(ex.ExportError) as err:
            ex.export_json(filled, target, T0)
        assert str(target) in str(err.value)
    assert snapshot(filled) == before
    assert list(tmp_path.glob(".*.tmp")) == []

    result = cli(
        Path(filled.path), "export", "--format", "csv", "-o", str(tmp_path / "nope" / "x.csv")
    )
    assert result.exit_code == 2
    assert result.stderr.startswith("prep: cannot write ")
    assert "nope" in result.stderr and "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write into a read-only folder")
def test_export_into_a_read_only_folder(filled: Store, tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(ex.ExportError, match="cannot write"):
            ex.export_json(filled, ro / "p.json", T0)
    finally:
        ro.chmod(0o700)


def test_csv_export_is_all_or_nothing(filled: Store, tmp_path: Path) -> None:
    # the cards file's name is taken by a folder: no file of the export is written
    (tmp_path / "x.cards.csv").mkdir()
    with pytest.raises(ex.ExportError, match=r"x\.cards\.csv"):
        ex.export_csv(filled, tmp_path / "x.csv")
    assert not (tmp_path / "x.csv").exists()
    assert list(tmp_path.glob(".*.tmp")) == []


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "not a prep export (the file is empty)"),
        (
            '{"format": "prep-export", "version": 1, "cards": [',
            "not a prep export (invalid JSON at line 1",
        ),
        ('{"hello": 1}', 'not a prep export (no "format": "prep-export" field)'),
        (
            '{"format": "prep-export", "version": 9, "cards": [], "reviews": []}',
            "export version 9 is newer",
        ),
        ('{"format": "prep-export", "version": 1, "cards": []}', "no 'reviews' list"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "not a prep export (not UTF-8 text)"),
    ],
)
def test_corrupt_json_is_a_clear_error(
    filled: Store, tmp_path: Path, content, message: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(content if isinstance(content, bytes) else content.encode())
    before = snapshot(filled)
    with pytest.raises(ex.ExportError) as err:
        importer.import_file(filled, bad)
    assert str(err.value).startswith(f"{bad}: ")
    assert message in str(err.value)
    assert snapshot(filled) == before


def test_truncated_export_changes_nothing(filled: Store, tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    ex.export_json(filled, good, T0)
    text = good.read_text()
    bad = tmp_path / "bad.json"
    bad.write_text(text[: len(text) * 2 // 3])
    with Store.open(tmp_path / "dst.db") as dst:
        dst.save_settings(Settings(new_per_day=5))
        before = snapshot(dst)
        result = cli(tmp_path / "dst.db", "import", str(bad))
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith(f"prep: {bad}: not a prep export (invalid JSON at line ")
        assert "Traceback" not in result.output
        assert snapshot(dst) == before


def test_bad_value_names_the_row_and_the_value(filled: Store, tmp_path: Path) -> None:
    ex.export_json(filled, tmp_path / "p.json", T0)
    data = json.loads((tmp_path / "p.json").read_text())
    data["reviews"][3]["rating"] = 7
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with Store.open(tmp_path / "dst.db") as dst:
        with pytest.raises(
            ex.ExportError, match=r"bad\.json: reviews\[3\]: rating must be between 1 and 4, got 7"
        ):
            importer.import_file(dst, tmp_path / "bad.json")
        assert dst.count_reviews() == 0 and dst.cards() == {}


@pytest.mark.parametrize(
    ("table", "field", "value", "message"),
    [
        # SQLite holds 64-bit ints; a bigger one was an OverflowError traceback
        ("cards", "reps", 10**20, "reps must be between 0 and"),
        ("reviews", "duration_ms", 2**63, "duration_ms must be between 0 and"),
        ("demo_runs", "seed", -(2**64), "seed must be between"),
        # a time that parses but has no UTC form (year 0 or 10000) was an OverflowError
        ("cards", "due", "0001-01-01T00:00:00+01:00", "due is not a time"),
        ("reviews", "reviewed_at", "9999-12-31T23:59:59-01:00", "reviewed_at is not a time"),
        ("settings", "learning_steps_min", ["a"], "learning_steps_min"),
        ("settings", "review_limit", 10**23, "review_limit"),
    ],
)
def test_out_of_range_values_are_clear_errors(
    filled: Store, tmp_path: Path, table: str, field: str, value, message: str
) -> None:
    ex.export_json(filled, tmp_path / "p.json", T0)
    data = json.loads((tmp_path / "p.json").read_text())
    if table == "settings":
        data["settings"] = {field: value}
    else:
        data[table][0][field] = value
    (tmp_path / "bad.json").write_text(json.dumps(data))
    dst = tmp_path / "dst.db"
    result = cli(dst, "import", str(tmp_path / "bad.json"))
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"prep: {tmp_path / 'bad.json'}: ")
    assert message in result.stderr
    with Store.open(dst) as store:
        empty = {"settings": None, "cards": [], "reviews": [], "demo_runs": [], "marks": []}
        empty["params"] = {}
        assert snapshot(store) == empty


def test_truncated_csv_names_the_line(filled: Store, tmp_path: Path) -> None:
    ex.export_csv(filled, tmp_path / "p.csv")
    lines = (tmp_path / "p.csv").read_text().splitlines()
    cut = lines[:4] + [lines[4][:25]]
    (tmp_path / "p.csv").write_text("\n".join(cut))
    with Store.open(tmp_path / "dst.db") as dst:
        with pytest.raises(ex.ExportError, match=r"p\.csv:5: expected 10 fields, found \d"):
            importer.import_file(dst, tmp_path / "p.csv")
        assert dst.count_reviews() == 0


def test_csv_without_its_cards_file(filled: Store, tmp_path: Path) -> None:
    ex.export_csv(filled, tmp_path / "p.csv")
    (tmp_path / "p.cards.csv").unlink()
    with pytest.raises(ex.ExportError, match=r"p\.cards\.csv: no such file"):
        importer.import_file(Store.memory(), tmp_path / "p.csv")


def test_import_of_a_diverged_history_merges_it(
    filled: Store, tmp_path: Path, small_collection: CachedCollection
) -> None:
    """This database reviewed the same cards at other times: both histories are kept, each
    card replayed from the union in time order (as `prep sync` merges), never refused."""
    out = tmp_path / "p.json"
    ex.export_json(filled, out, T0)
    db = tmp_path / "mine.db"
    with Store.open(db) as mine:
        review_all(mine, small_collection, T0 - timedelta(days=1), [2, 2])
        here = mine.count_reviews()
        result = importer.import_file(mine, out)
        assert result.cards_merged > 0 and "two histories merged" in result.summary()
        assert mine.count_reviews() == here + filled.count_reviews()
        for cid in {r.card_id for r in filled.reviews()}:
            log = mine.reviews(card_id=cid)
            times = [r.reviewed_at for r in log]
            assert times == sorted(times)  # one log, in time order
            assert log[-1].next.reps == len(log)  # replayed: reps counts the merged log
            assert mine.card(cid).reps == len(log)
        merged = snapshot(mine)
        again = importer.import_file(mine, out)  # idempotent
        assert again.reviews_added == 0 and snapshot(mine) == merged
    result = cli(db, "import", str(out))
    assert result.exit_code == 0, result.stderr


def test_same_review_time_with_different_data_is_a_conflict(filled: Store, tmp_path: Path) -> None:
    out = tmp_path / "p.json"
    ex.export_json(filled, out, T0)
    data = json.loads(out.read_text())
    first = data["reviews"][0]
    data["reviews"][0]["duration_ms"] = 999_999
    (tmp_path / "edited.json").write_text(json.dumps(data))
    with Store.open(tmp_path / "dst.db") as dst:
        importer.import_file(dst, out)
        before = snapshot(dst)
        with pytest.raises(
            ex.ExportError,
            match=rf"card {first['card_id']!r} already has a review at .* duration_ms",
        ):
            importer.import_file(dst, tmp_path / "edited.json")
        assert snapshot(dst) == before


def test_import_leaves_no_lock_or_open_transaction(filled: Store, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(
        '{"format": "prep-export", "version": 1, "cards": [{"id": "x", "state": 9}], "reviews": []}'
    )
    db = tmp_path / "dst.db"
    with (
        Store.open(db) as dst,
        pytest.raises(ex.ExportError, match=r"cards\[0\]: state must be between 1 and 3, got 9"),
    ):
        importer.import_file(dst, bad)
    conn = sqlite3.connect(db)
    conn.execute("BEGIN IMMEDIATE")  # would fail if the import had left the database locked
    conn.rollback()
    conn.close()


# --- the command line ---------------------------------------------------------------------------


def test_cli_export_import_round_trip(filled: Store, tmp_path: Path) -> None:
    src = Path(filled.path)
    result = cli(src, "export", "-o", str(tmp_path / "p.json"))
    assert result.exit_code == 0, result.output
    # (what else the file holds is said after the reviews: user13)
    assert f": {filled.count_reviews()} reviews, " in result.output
    result = cli(tmp_path / "new.db", "import", str(tmp_path / "p.json"))
    assert result.exit_code == 0, result.output
    assert f"{filled.count_reviews()} reviews added" in result.output
    result = cli(tmp_path / "new.db", "import", str(tmp_path / "p.json"))
    assert "0 reviews added" in result.output and "already stored" in result.output


def test_cli_format_is_needed_without_a_known_extension(tmp_path: Path) -> None:
    result = cli(tmp_path / "p.db", "export", "-o", str(tmp_path / "p.txt"))
    assert result.exit_code == 2
    assert "give --format json, csv or apkg" in result.stderr


def test_export_and_import_help_document_the_columns() -> None:
    result = CliRunner().invoke(main, ["export", "--help"])
    assert result.exit_code == 0
    for column in (
        "card_id",
        "reviewed_at",
        "rating",
        "duration_ms",
        "prev",
        "next",
        "FILE.cards.csv",
        "FILE.marks.csv",
    ):
        assert column in result.output
    result = CliRunner().invoke(main, ["import", "--help"])
    assert result.exit_code == 0 and "nothing changes" in result.output


# --- prep stats --json / --since: progress the candidate can see ---------------------


@pytest.mark.usefixtures("utc_local_time")
def test_stats_json_has_what_the_stats_screen_shows_and_since_filters(filled: Store) -> None:
    db = Path(filled.path)
    result = cli(db, "stats", "--json")
    assert result.exit_code == 0, result.output
    stats = json.loads(result.output)
    # every key tui/screens/stats.py reads
    for key in (
        "reviews", "true_retention", "due", "cards", "streak_days", "desired_retention",
        "leeches", "per_day", "forecast", "decks", "tags", "demos",
    ):  # fmt: skip
        assert key in stats
    assert stats["reviews"]["total"] == filled.count_reviews()
    cut = T0 + timedelta(days=3)
    later = sum(1 for r in filled.reviews() if r.reviewed_at >= cut)
    assert 0 < later < filled.count_reviews()
    result = cli(db, "stats", "--json", "--since", cut.date().isoformat())
    stats = json.loads(result.output)
    assert stats["since"] == "2026-03-05T00:00:00.000000Z"
    assert stats["reviews"]["total"] == later


@pytest.mark.usefixtures("new_york_local_time")
def test_stats_days_follow_local_study_days_across_a_dst_change(
    small_collection: CachedCollection,
) -> None:
    """Each review is put on its own local study day (4am rollover) with the UTC offset it
    was made under, not today's: New York moved from EST to EDT on 2026-03-08."""
    from prep.engine.study import stats as stats_mod

    store = Store.memory()

    def review(card_id: str, at: datetime, due: datetime | None = None) -> None:
        new = CardState(id=card_id, deck="small", state=2, reps=1, stability=3.0, due=due or at)
        store.record_review(None, new, Rating.Good, at)

    review("roles", datetime(2026, 3, 10, 11, tzinfo=UTC))  # Mar 10, 07:00 EDT
    review("dims", datetime(2026, 3, 9, 13, tzinfo=UTC))  # Mar 9, 09:00 EDT
    review("mix", datetime(2026, 3, 8, 14, tzinfo=UTC))  # Mar 8, 10:00 EDT
    # 03:30 EST on Mar 7: before the 4am rollover, so Mar 6's study day; Mar 7 had none
    review("flag", datetime(2026, 3, 7, 8, 30, tzinfo=UTC))
    now = datetime(2026, 3, 10, 16, tzinfo=UTC)
    result = stats_mod.compute(store, small_collection, now)
    per_day = {d.date: d.reviews for d in result.per_day}
    assert per_day["2026-03-06"] == 1 and per_day["2026-03-07"] == 0
    assert result.streak_days == 3  # Mar 8, 9, 10
    # forecast from EST into EDT: due 04:30 EDT on Mar 9 is Mar 9's, not Mar 8's
    store = Store.memory()
    review(
        "roles",
        datetime(2026, 3, 5, 12, tzinfo=UTC),
        due=datetime(2026, 3, 9, 8, 30, tzinfo=UTC),
    )
    result = stats_mod.compute(store, small_collection, datetime(2026, 3, 5, 13, tzinfo=UTC))
    forecast = {d.date: d.due for d in result.forecast}
    assert forecast["2026-03-09"] == 1 and forecast["2026-03-08"] == 0


def test_export_is_one_snapshot_while_another_session_rates(
    filled: Store, small_collection: CachedCollection
) -> None:
    """`prep export` while the app is rating in another terminal: a rating is in both the
    cards and the reviews of the export, or in neither."""
    other = Store.open(filled.path)
    fired = []

    def meanwhile(sql: str) -> None:  # runs as each of dump's queries starts
        if "FROM reviews ORDER BY id" in sql and not fired:
            fired.append(sql)
            review_all(other, small_collection, T0 + timedelta(days=3650), [3])

    filled.conn.set_trace_callback(meanwhile)
    try:
        data = filled.dump()
    finally:
        filled.conn.set_trace_callback(None)
        other.close()
    assert fired and filled.count_reviews() == len(data["reviews"]) + 1  # the rating happened
    latest = {r["card_id"]: r["next"] for r in data["reviews"]}
    for card in data["cards"]:
        assert card["due"] == latest[card["id"]]["due"], card["id"]
    assert not filled.conn.in_transaction
