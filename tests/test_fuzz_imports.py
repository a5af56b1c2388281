"""Fuzzing import: random JSON, and real exports (JSON and CSV) mutated at random. Every
import either succeeds, leaving only states fsrs can schedule, or fails with one short line
(`prep import`: exit 2) and leaves the database exactly as it was.

Default run: small and derandomized; PREP_LONG_FUZZ=1 runs many more examples.
"""

from __future__ import annotations

import copy
import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prep.engine.decks.deck import ParsedDecks, parse_deck_text
from prep.engine.decks.deckcache import from_parsed
from prep.engine.store import Store
from prep.engine.study.scheduler import state_problem
from prep.engine.transfer import export as ex
from prep.engine.transfer import importer
from prep.engine.transfer.export import ExportError
from prep.tui.cli import main
from tests.conftest import SMALL_DECK, reviewed_store

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _reviewed_store() -> Store:
    info, cards, errors = parse_deck_text(SMALL_DECK, "small.yaml", "small")
    assert info is not None and not errors
    store = reviewed_store(from_parsed(ParsedDecks(cards=cards)), days=((0, 3), (2, 1), (5, 4)))
    store.record_demo_run(
        name="block-diagonal", device="cpu", passed=True, seconds=0.5, metrics={"x": 1.0}, ran_at=T0
    )
    return store


_SOURCE = _reviewed_store()
REAL = json.loads(ex.to_json(_SOURCE, T0))
REAL_CSV = ex.to_csv(_SOURCE)

JSON_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=False, allow_infinity=False),
        st.sampled_from([0, -5, 1e300, -1e-300, 11, 0.0005, 2**63, "2026-03-02T09:00:00Z"]),
        st.text(max_size=20),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def mutated_export(draw: st.DrawFn) -> str:
    data = copy.deepcopy(REAL)
    for _ in range(draw(st.integers(1, 3))):
        table = draw(st.sampled_from(["cards", "reviews", "demo_runs"]))
        rows = data[table]
        row = rows[draw(st.integers(0, len(rows) - 1))]
        target = row
        if table == "reviews" and draw(st.booleans()) and isinstance(row.get("next"), dict):
            prev = row.get("prev")
            target = row["next"] if not isinstance(prev, dict) or draw(st.booleans()) else prev
        key = draw(st.sampled_from(sorted(target) + ["extra"]))
        if draw(st.integers(0, 5)) == 0:
            target.pop(key, None)
        else:
            target[key] = draw(JSON_VALUES)
    text = json.dumps(data)
    if draw(st.integers(0, 3)) == 0:  # and damage the text itself now and then
        at = draw(st.integers(0, len(text)))
        text = (
            text[:at]
            + draw(st.sampled_from(["", "]", "{", "NaN", "1e999", "9" * 5000]))
            + text[at + draw(st.integers(0, 20)) :]
        )
    return text


@st.composite
def mutated_csv(draw: st.DrawFn) -> dict[str, str]:
    parts = dict(REAL_CSV)
    part = draw(st.sampled_from(["reviews", "cards", "demo_runs", "settings"]))
    text = parts[part]
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        insert = draw(st.sampled_from(["", ",", '"', "\n", "=1+1", "'", "-5", "nan", "{", "0"]))
        text = text[:at] + insert + text[at + draw(st.integers(0, 8)) :]
    parts[part] = text
    return parts


def assert_all_or_nothing(path: Path) -> None:
    store = Store.memory()
    before = store.dump()
    try:
        importer.import_file(store, path)
    except ExportError as exc:
        message = str(exc)
        assert "\n" not in message and len(message) < 500, message[:600]
        assert store.dump() == before
        return
    # imported: every state is one fsrs can schedule (no session can crash on it)
    for state in store.cards().values():
        assert state_problem(state) is None, state
    for review in store.reviews():
        for state in (review.prev, review.next):
            assert state is None or state_problem(state) is None, state


FAST = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
LONG = pytest.mark.skipif(not os.environ.get("PREP_LONG_FUZZ"), reason="set PREP_LONG_FUZZ=1")


@FAST
@given(value=JSON_VALUES)
def test_random_json(tmp_path: Path, value: object) -> None:
    path = tmp_path / "x.json"
    header = {"format": "prep-export", "version": 1}
    if isinstance(value, dict):
        value = {**header, **value}
    path.write_text(json.dumps(value), encoding="utf-8")
    assert_all_or_nothing(path)


@FAST
@given(text=mutated_export())
def test_mutated_json_exports(tmp_path: Path, text: str) -> None:
    path = tmp_path / "x.json"
    path.write_text(text, encoding="utf-8")
    assert_all_or_nothing(path)


@settings(FAST, max_examples=30)
@given(parts=mutated_csv())
def test_mutated_csv_exports(tmp_path: Path, parts: dict[str, str]) -> None:
    paths = ex.csv_paths(tmp_path / "x.csv")
    for key, path in paths.items():
        path.write_text(parts[key], encoding="utf-8")
    assert_all_or_nothing(paths["reviews"])


@settings(FAST, max_examples=10)
@given(text=mutated_export())
def test_prep_import_exits_0_or_2_with_one_line(tmp_path: Path, text: str) -> None:
    db = tmp_path / "p.db"
    db.unlink(missing_ok=True)
    Store.open(db).close()
    with Store.open(db) as store:
        before = store.dump()
    path = tmp_path / "x.json"
    path.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(main, ["--db", str(db), "import", str(path)])
    assert result.exit_code in (0, 2), (result.output, result.exception)
    if result.exit_code == 2:
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("prep: ")
        with Store.open(db) as store:
            assert store.dump() == before


@LONG
@pytest.mark.slow
@settings(FAST, max_examples=2000)
@given(text=mutated_export(), parts=mutated_csv())
def test_fuzz_imports_long(tmp_path: Path, text: str, parts: dict[str, str]) -> None:
    path = tmp_path / "x.json"
    path.write_text(text, encoding="utf-8")
    assert_all_or_nothing(path)
    paths = ex.csv_paths(tmp_path / "x.csv")
    for key, p in paths.items():
        p.write_text(parts[key], encoding="utf-8")
    assert_all_or_nothing(paths["reviews"])
