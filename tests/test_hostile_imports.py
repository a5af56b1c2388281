"""Hostile exports: every card state and every review's prev/next is checked the way fsrs
needs it before anything is stored; bad files are one line, exit 2, database unchanged.
And a state the scheduler rejects, already stored, skips its card instead of crashing.

Before the fix, import accepted stability 0 or -5, difficulty -100, NaN, 1e999 and a review
card without stability, and every later session crashed on reveal (issue 10, item 3).
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from prep.engine.decks.collection import CachedCollection
from prep.engine.store import Store, StoreError
from prep.engine.study.scheduler import CardState, Rating
from prep.engine.study.session import ReviewSession
from prep.engine.transfer import export as ex
from prep.engine.transfer import importer
from prep.engine.transfer.export import ExportError
from prep.tui.cli import main
from tests.conftest import reviewed_store

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
def export(small_collection: CachedCollection) -> dict:
    store = reviewed_store(small_collection)
    data = json.loads(ex.to_json(store, T0))
    store.close()
    assert any(c["state"] == 2 for c in data["cards"])
    return data


def review_card(data: dict) -> dict:
    return next(c for c in data["cards"] if c["state"] == 2)


def second_review(data: dict) -> dict:
    return next(r for r in data["reviews"] if r["prev"] is not None)


CARD_CASES = {
    "stability 0": ({"stability": 0}, "stability must be a number of days between 0.001"),
    "stability -5": ({"stability": -5}, "stability must be"),
    "stability 1e999": ({"stability": 1e999}, "stability must be a finite number"),
    "difficulty -100": ({"difficulty": -100}, "difficulty must be between 1 and 10"),
    "difficulty 11": ({"difficulty": 11.5}, "difficulty must be between 1 and 10"),
    "review without stability": (
        {"stability": None, "difficulty": None},
        "a review or relearning card needs stability and difficulty",
    ),
    "review without last_review": ({"last_review": None}, "needs last_review"),
    "state 7": ({"state": 7}, "state must be between 1 and 3"),
    "reps 10**30": ({"reps": 10**30}, "reps must be between 0 and"),
    "step -1": ({"state": 1, "step": -1}, "step must be >= 0"),
    "learning without step": ({"state": 1, "step": None}, "needs its step"),
    "id not a slug": ({"id": "Bad Id\x1b[31m"}, "is not a slug"),
}


def import_text(tmp_path: Path, text: str) -> tuple[Store, str]:
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8")
    store = Store.memory()
    before = store.dump()
    with pytest.raises(ExportError) as info:
        importer.import_file(store, path)
    assert store.dump() == before  # nothing stored
    message = str(info.value)
    assert "\n" not in message and len(message) < 400, message[:500]
    return store, message


@pytest.mark.parametrize("case", list(CARD_CASES))
def test_bad_card_states_are_refused(tmp_path: Path, export: dict, case: str) -> None:
    change, why = CARD_CASES[case]
    card = review_card(export)
    card.update(change)
    text = json.dumps(export).replace("Infinity", "1e999")
    _store, message = import_text(tmp_path, text)
    assert why in message, message


STATE_CASES = {
    "stability 0": ({"stability": 0}, "stability must be"),
    "stability -5": ({"stability": -5}, "stability must be"),
    "difficulty -100": ({"difficulty": -100}, "difficulty must be between 1 and 10"),
    "no stability": ({"stability": None}, "stability and difficulty come together"),
    "review, neither": (
        {"stability": None, "difficulty": None},
        "needs stability and difficulty",
    ),
    "state as text": ({"state": "2"}, "state must be 1 (learning)"),
    "reps huge": ({"reps": 10**30}, "reps must be a whole number between 0 and"),
    "unknown field": ({"evil": 1}, "unknown field 'evil'"),
    "due not a time": ({"due": 5}, "due must be a UTC time"),
    "deck null": ({"deck": None}, "deck must be text, got None"),  # (a traceback before)
    "content_hash a number": ({"content_hash": 5}, "content_hash must be text, got 5"),
}


@pytest.mark.parametrize("side", ["prev", "next"])
@pytest.mark.parametrize("case", list(STATE_CASES))
def test_bad_review_states_are_refused(tmp_path: Path, export: dict, side: str, case: str) -> None:
    change, why = STATE_CASES[case]
    review = second_review(export)
    review[side].update(change)
    if review[side]["state"] == 1 and "needs stability" in why:
        review[side]["state"] = 2
    _store, message = import_text(tmp_path, json.dumps(export))
    assert "reviews[" in message and side in message and why in message, message


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"format": "prep-export", "version": 1, "x": ' + "[" * 100_000, "nested too deeply"),
        ('{"format": "prep-export", "version": ' + "9" * 5000 + "}", "not a prep export"),
        ('{"format": "prep-export", "version": 1, "cards": [], "reviews": [], "x": NaN}', "NaN"),
        (
            '{"format": "prep-export", "version": 1, "cards": [], "reviews": [-Infinity]}',
            "Infinity",
        ),
    ],
)
def test_hostile_json_is_one_line(tmp_path: Path, text: str, why: str) -> None:
    _store, message = import_text(tmp_path, text)
    assert why in message, message


def test_deep_metrics_are_refused(tmp_path: Path, export: dict) -> None:
    deep: object = 1
    for _ in range(100):
        deep = [deep]
    export["demo_runs"] = [
        {
            "name": "block-diagonal",
            "device": "cpu",
            "passed": True,
            "seconds": 1.0,
            "ran_at": "2026-03-02T09:00:00.000000Z",
            "metrics": {"x": deep},
        }
    ]
    _store, message = import_text(tmp_path, json.dumps(export))
    assert "demo_runs[0]: metrics nested more than 64 levels deep" in message, message


def test_5000_digit_number_in_a_card_is_one_line(tmp_path: Path, export: dict) -> None:
    text = json.dumps(export).replace('"reps": 2', '"reps": ' + "7" * 5000, 1)
    _store, message = import_text(tmp_path, text)
    assert "cards[" in message or "not a prep export" in message, message


def test_import_cli_exit_2_and_database_unchanged(tmp_path: Path, export: dict) -> None:
    db = tmp_path / "p.db"
    Store.open(db).close()
    with Store.open(db) as store:
        before = store.dump()
    review_card(export)["stability"] = 0
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(export), encoding="utf-8")
    result = CliRunner().invoke(main, ["--db", str(db), "import", str(bad)])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("prep: ")
    with Store.open(db) as store:
        assert store.dump() == before


def test_good_export_still_imports(tmp_path: Path, export: dict) -> None:
    path = tmp_path / "good.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    with Store.memory() as store:
        result = importer.import_file(store, path)
        assert result.reviews_added == len(export["reviews"]) > 0


# --- defence in depth: a stored state the scheduler rejects --------------------------------


def test_session_skips_a_card_whose_stored_state_fsrs_rejects(
    small_collection: CachedCollection,
) -> None:
    store = reviewed_store(small_collection)
    victim = small_collection.cards[0].id
    state = store.card(victim)
    assert state is not None
    # as a hand-edited database (or an import before validation) could hold it
    store.put_card(CardState(**{**state.__dict__, "stability": 0.0}))
    now = T0 + timedelta(days=400)
    session = ReviewSession(store, small_collection, clock=lambda: now, requeue=False)
    seen = []
    while not session.finished:
        card = session.current
        assert card is not None and card.id != victim
        session.preview()  # what revealing the answer computes: crashed before the fix
        seen.append(card.id)
        session.rate(Rating.Good, duration_ms=1)
    assert len(seen) == len(small_collection) - 1
    assert [cid for cid, _ in session.skipped] == [victim]
    (notice,) = session.take_notices()
    assert notice.startswith(f"Skipped card {victim}:") and "stability" in notice


def test_plain_session_prints_the_skip_and_goes_on(
    tmp_path: Path, small_deck_dir: Path, small_collection: CachedCollection
) -> None:
    db = tmp_path / "p.db"
    with Store.open(db) as store:
        store.reconcile(small_collection.cards)
        first = small_collection.cards[0]
        store.put_card(
            CardState(id=first.id, deck=first.deck, state=2, step=None, reps=3, due=T0)
        )  # a review card without stability: fsrs asserted on it
    args = ["--db", str(db), "--questions", str(small_deck_dir), "quiz", "--plain"]
    result = CliRunner().invoke(main, [*args, "--deck", "small"], input="\n3\nq\n")
    assert result.exit_code == 0, (result.output, result.exception)
    assert f"Skipped card {first.id}: its stored state is unusable" in result.output


def test_plain_session_lets_the_user_retry_when_the_database_is_busy(
    tmp_path: Path, small_deck_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = Store.rate_card
    calls = []

    def busy_once(self, *args, **kwargs):  # noqa: ANN001, ANN202
        calls.append(1)
        if len(calls) == 1:
            raise StoreError(
                "p.db: database is busy (database is locked); try again", retryable=True
            )
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Store, "rate_card", busy_once)
    db = tmp_path / "p.db"
    args = ["--db", str(db), "--questions", str(small_deck_dir), "quiz", "--plain"]
    result = CliRunner().invoke(main, [*args, "--deck", "small"], input="\n3\n3\nq\n")
    assert result.exit_code == 0, (result.output, result.exception)
    assert "Not saved: p.db: database is busy" in result.output
    assert "rate it again" in result.output and "Saved: Good" in result.output
    with Store.open(db) as store:
        assert store.count_reviews() == 1


@pytest.mark.timeout(20)
def test_import_refuses_fifos_and_devices_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)  # no writer: reading it would block forever
    zero = tmp_path / "zero.json"
    zero.symlink_to("/dev/zero")  # reading it would fill the memory
    for path in (fifo, zero):
        with Store.memory() as store, pytest.raises(ExportError) as info:
            importer.import_file(store, path)
        assert str(info.value) == (
            f"{path}: cannot read: not a regular file (a device, FIFO or socket)"
        )


@pytest.mark.parametrize(
    ("name", "head", "says"),
    [
        (
            "deck.apkg",
            b"PK\x03\x04\x14\x00\x00\x00\x08\x00\xff\xfe",
            "a zip archive, e.g. an Anki package",
        ),
        ("collection.anki2", b"SQLite format 3\x00\x10\x00\xff\xfe", "an SQLite database"),
        ("export.json.gz", b"\x1f\x8b\x08\x00\xff\xfe\xfd", "gzip-compressed"),
        ("noise.json", b'{"x\xff\xfe\xfd', "not UTF-8 text"),
    ],
)
def test_a_binary_file_is_named_for_what_it_is(
    tmp_path: Path, name: str, head: bytes, says: str
) -> None:
    """`prep import deck.apkg` said only "not UTF-8 text": it now says what the file is when
    its first bytes tell (one line, exit 2, database unchanged), in the json and csv readers."""
    db = tmp_path / "p.db"
    Store.open(db).close()
    with Store.open(db) as store:
        before = store.dump()
    path = tmp_path / name
    path.write_bytes(head + bytes(range(128, 256)) * 4)
    result = CliRunner().invoke(main, ["--db", str(db), "import", str(path)])
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and says in result.stderr, result.stderr
    with Store.open(db) as store:
        assert store.dump() == before
