"""A clock that steps back between showing a card and rating it stores no negative duration,
and every export prep wrote imports back (an older prep's negative duration included)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from prep.engine.decks.collection import CachedCollection
from prep.engine.store import Store
from prep.engine.study import session as session_module
from prep.engine.study.scheduler import Rating
from prep.engine.study.session import ReviewSession
from prep.engine.timeutil import MAX_DURATION_MS
from prep.engine.transfer.export import export_json
from prep.engine.transfer.importer import import_file
from tests.conftest import FIXED_NOW


def test_a_monotonic_clock_stepping_back_stores_zero(
    tmp_path: Path, small_collection: CachedCollection, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [1000.0]
    monkeypatch.setattr(session_module, "time", SimpleNamespace(monotonic=lambda: now[0]))
    with Store.open(tmp_path / "a.db") as store:
        session = ReviewSession(store, small_collection, clock=lambda: FIXED_NOW, requeue=False)
        session.mark_shown()
        now[0] = 400.0  # stepped back 600 s while the card was on screen
        session.rate(Rating.Good)
        session.mark_shown()
        now[0] = 10_000_000.0  # and forward by months
        session.rate(Rating.Good)
        state = store.card(session.done[0])
        store.record_review(state, state, 3, FIXED_NOW, duration_ms=-7)  # any writer: clamped
        durations = [r.duration_ms for r in store.reviews()]
        assert durations == [0, MAX_DURATION_MS, 0]
        assert session.stats.seconds >= 0
        export_json(store, tmp_path / "x.json", FIXED_NOW)
    with Store.open(tmp_path / "b.db") as other:
        import_file(other, tmp_path / "x.json")
        assert other.count_reviews() == 3


def test_an_older_export_with_a_negative_duration_imports(tmp_path: Path) -> None:
    with Store.open(tmp_path / "a.db") as store:
        export_json(store, tmp_path / "empty.json", FIXED_NOW)
    from prep.engine.decks.deckcache import load_collection

    coll = load_collection([])
    with Store.open(tmp_path / "a.db") as store:
        session = ReviewSession(store, coll, clock=lambda: FIXED_NOW, requeue=False)
        session.rate(Rating.Again, duration_ms=1500)
        export_json(store, tmp_path / "x.json", FIXED_NOW)
    data = json.loads((tmp_path / "x.json").read_text())
    data["reviews"][0]["duration_ms"] = -5000  # what an older prep wrote
    (tmp_path / "x.json").write_text(json.dumps(data))
    with Store.open(tmp_path / "b.db") as other:
        import_file(other, tmp_path / "x.json")
        assert [r.duration_ms for r in other.reviews()] == [0]


@pytest.mark.skipif(shutil.which("faketime") is None, reason="faketime not installed")
def test_plain_session_under_a_clock_stepping_back(tmp_path: Path, small_deck_dir: Path) -> None:
    """The real command under libfaketime, whose clock runs backwards (rate -1: every clock,
    the monotonic one included): the rating is stored with a duration of 0 or more, and its
    export imports back."""
    db = tmp_path / "p.db"
    env = {**os.environ, "FAKETIME": "@2026-03-01 12:00:00 x-1", "FAKETIME_DONT_RESET": "1"}
    done = subprocess.run(
        ["faketime", "-f", "@2026-03-01 12:00:00 x-1", sys.executable, "-m", "prep.tui.cli"]
        + ["--db", str(db), "--questions", str(small_deck_dir), "quiz", "--plain"]
        + ["--deck", "small"],
        input="\n3\n\n3\nq\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    with Store.open(db) as store:
        durations = [r.duration_ms for r in store.reviews()]
        assert durations and all(d is not None and d >= 0 for d in durations)
        export_json(store, tmp_path / "x.json", FIXED_NOW)
    with Store.open(tmp_path / "b.db") as other:
        import_file(other, tmp_path / "x.json")
        assert other.count_reviews() == len(durations)
