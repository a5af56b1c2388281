"""Shared fixtures: a fresh in-memory store, a temp database, a fixed UTC clock, a small deck."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from prep.engine.decks.collection import CachedCollection
from prep.engine.decks.deckcache import load_collection
from prep.engine.store import Store

FIXED_NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)

SMALL_DECK = """\
deck: small
title: A small test deck
cards:
  - id: roles
    kind: recall
    prompt: Name two roles of W_O beyond shape preservation.
    answer: Cross-head mixing and per-head weighting.
    explain: It is the only place heads mix before the residual add.
    bullets: [mixing, weighting]
  - id: pick-one
    kind: choice
    prompt: Which operation mixes heads?
    answer: W_O (b); concat only stacks slices.
    choices: [concat, W_O, softmax]
    correct: b
  - id: roles-follow
    kind: follow-up
    parent: roles
    prompt: Could W_O be block-diagonal?
    answer: Yes, but heads then never share a write direction.
  - id: flag
    kind: red-flag
    prompt: "'W_O is just shape preservation.' What is wrong?"
    answer: It ignores mixing (a).
    choices: [It ignores mixing, Nothing, It is too slow]
    correct: a
"""


@pytest.fixture(autouse=True)
def _isolated_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Never touch the user's real database or decks from a test."""
    monkeypatch.setenv("PREP_DB", str(tmp_path_factory.mktemp("db") / "default.db"))
    monkeypatch.delenv("PREP_QUESTIONS", raising=False)


def _pin_local_time(monkeypatch: pytest.MonkeyPatch, zone: str):
    """Set the process's local time zone for one test, and restore it afterwards."""
    monkeypatch.setenv("TZ", zone)
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture
def utc_local_time(monkeypatch: pytest.MonkeyPatch):
    """Study days are local days; pin local time to UTC so dates are the same everywhere."""
    yield from _pin_local_time(monkeypatch, "UTC")


@pytest.fixture
def new_york_local_time(monkeypatch: pytest.MonkeyPatch):
    """Local time with DST changes (2026: EST->EDT on Mar 8, EDT->EST on Nov 1)."""
    yield from _pin_local_time(monkeypatch, "America/New_York")


@pytest.fixture(scope="session")
def minilm():
    """The shipped all-MiniLM-L6-v2, loaded once per test session (the real-weight demos and
    the grader share it; nothing here changes its weights: edits happen on float64 copies)."""
    from prep.demos.pretrained import extra

    if extra.missing():
        pytest.skip(extra.missing())
    from prep.demos._torch import torch
    from prep.demos.pretrained import pretrained

    return pretrained.load(None, torch.device("cpu"))


@pytest.fixture
def fresh_store() -> Store:
    store = Store.memory()
    yield store
    store.close()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "prep.db"


@pytest.fixture
def small_deck_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "decks"
    folder.mkdir()
    (folder / "small.yaml").write_text(SMALL_DECK, encoding="utf-8")
    return folder


@pytest.fixture
def small_collection(small_deck_dir: Path) -> CachedCollection:
    coll = load_collection([small_deck_dir], include_bundled=False)
    assert not coll.errors, coll.errors
    return coll


def recall_deck(tmp_path: Path, n: int, deck: str = "many", prefix: str = "c") -> CachedCollection:
    """A deck of ``n`` recall cards (ids ``c00``, ``c01``, ...) in one file under
    ``tmp_path``/decks, loaded (the answer and queue tests' collection)."""
    folder = tmp_path / "decks"
    folder.mkdir()
    cards = "".join(
        f"  - id: {prefix}{i:02d}\n    kind: recall\n    prompt: Question {i}?\n"
        f"    answer: Answer {i}.\n"
        for i in range(n)
    )
    title = deck.capitalize()
    (folder / f"{deck}.yaml").write_text(f"deck: {deck}\ntitle: {title}\ncards:\n{cards}", "utf-8")
    coll = load_collection([folder], include_bundled=False)
    assert not coll.errors, coll.errors
    return coll


class Clock:
    """A settable clock for sessions: ``clock.now`` is returned; ``advance`` moves it."""

    def __init__(self, now: datetime = FIXED_NOW) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kwargs: float) -> None:
        from datetime import timedelta

        self.now = self.now + timedelta(**kwargs)


@pytest.fixture
def clock() -> Clock:
    return Clock()


def reviewed_store(
    collection: CachedCollection, days: tuple[tuple[int, int], ...] = ((0, 3), (3, 3))
) -> Store:
    """An in-memory store where every card of ``collection`` was reviewed once on each of
    ``days`` ((day after FIXED_NOW, rating), fuzz off), so some cards are in review state."""
    from datetime import timedelta

    from prep.engine.study.scheduler import Rating, Scheduler
    from prep.engine.study.session import ReviewSession

    store = Store.memory()
    for day, rating in days:
        now = FIXED_NOW + timedelta(days=day)
        session = ReviewSession(
            store,
            collection,
            scheduler=Scheduler(store.settings(), enable_fuzzing=False),
            clock=lambda now=now: now,
            requeue=False,
        )
        while not session.finished:
            session.rate(Rating(rating), duration_ms=500)
    return store
