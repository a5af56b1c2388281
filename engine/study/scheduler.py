"""FSRS-6 scheduling through the ``fsrs`` package (the scheduler Anki uses).

We never write our own scheduling; this module only adapts fsrs to our stored card state and
makes fuzzing *deterministic*: the fuzz for a review is drawn from a generator seeded by the
card and its history (seed, card id, review count and the time of its last review: Anki seeds
by card id and reps), so the interval previewed on a rating button is the interval the rating
gives, also after an undo and a second rating (the review then gets another id, the card the
same history), every machine that replays the review draws the same fuzz, and tests can fix
the seed. A review stores how its fuzz was seeded in its replay parameters ("fuzz_by") and is
replayed so, bit for bit: "card" (above, since round 12), "review" (by the review's own id,
device and sequence number: rounds 7-11; an undo and a new rating drew another fuzz than the
preview had shown), or no key (the card id and its review count, before v2 of the parameters).
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field, fields
from datetime import date, datetime, timedelta
from typing import Any, TypeGuard

import fsrs

from prep.engine.study import onepass
from prep.engine.study.fuzz import _FirstDraw, _SeededFsrs
from prep.engine.study.onepass import _AGAIN, _LEARNING, _RATINGS, _RELEARNING, _REVIEW
from prep.engine.study.settingtext import (
    _DATE,
    _DECKS,
    _LEVEL,
    _NUMBER,
    _STEPS,
    _WHOLE,
    parse_text,
)
from prep.engine.textsafe import quoted, quoted_all
from prep.engine.timeutil import fmt, to_utc

Rating = fsrs.Rating
State = fsrs.State
RATING_NAMES = {
    Rating.Again: "Again",
    Rating.Hard: "Hard",
    Rating.Good: "Good",
    Rating.Easy: "Easy",
}
MAX_COUNT = 1_000_000_000  # upper bound of the whole-number settings
MAX_STEP_MIN = 36500 * 24 * 60  # a learning step of at most 100 years, in minutes
MAX_INTERVAL_DAYS = 36500  # fsrs's own default maximum: 100 years
LEVELS = ("basics", "core", "advanced")  # the curriculum's levels, in order (a card's `level:`)
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class Settings:
    """User-changeable settings, persisted in the database's meta table. A field with
    ``parse`` metadata is set by `prep config KEY VALUE` (``parse_value``); ``parameters``
    has a command form of its own."""

    desired_retention: float = field(default=0.9, metadata=_NUMBER)
    new_per_day: int = field(default=20, metadata=_WHOLE)
    review_limit: int = field(default=200, metadata=_WHOLE)
    leech_threshold: int = field(default=8, metadata=_WHOLE)
    learning_steps_min: tuple[float, ...] = field(default=(1.0, 10.0), metadata=_STEPS)
    relearning_steps_min: tuple[float, ...] = field(default=(10.0,), metadata=_STEPS)
    maximum_interval: int = field(default=36500, metadata=_WHOLE)
    parameters: tuple[float, ...] | None = None  # None: fsrs defaults
    # Anki's learn-ahead limit: when nothing else is left, a learning card due within this
    # many minutes is shown early (and labelled so) instead of ending the session
    learn_ahead_min: int = field(default=20, metadata=_WHOLE)
    # the study plan (engine/study/plan.py): the interview's date (YYYY-MM-DD, None: no plan), the
    # decks it covers (None: every loaded deck) and the highest level of card it covers;
    # `prep config KEY none` clears the date (and `all` the deck list)
    interview_date: str | None = field(default=None, metadata=_DATE)
    plan_decks: tuple[str, ...] | None = field(default=None, metadata=_DECKS)
    plan_level: str = field(default="advanced", metadata=_LEVEL)

    @classmethod
    def settable(cls) -> list[str]:
        """The settings `prep config KEY VALUE` reads from text, in field order."""
        return [f.name for f in fields(cls) if "parse" in f.metadata]

    @classmethod
    def parse_value(cls, key: str, text: str) -> Any:
        """Setting ``key``'s value read from ``text``; KeyError for a key that is not
        settable, ValueError("KEY: 'TEXT' is not a number") for text that does not parse
        (the range is ``validated``'s)."""
        meta = cls.__dataclass_fields__[key].metadata if key in cls.settable() else None
        if meta is None:
            raise KeyError(key)
        return parse_text(key, text, meta)

    def to_dict(self) -> dict:
        return {
            "desired_retention": self.desired_retention,
            "new_per_day": self.new_per_day,
            "review_limit": self.review_limit,
            "leech_threshold": self.leech_threshold,
            "learning_steps_min": list(self.learning_steps_min),
            "relearning_steps_min": list(self.relearning_steps_min),
            "maximum_interval": self.maximum_interval,
            "parameters": list(self.parameters) if self.parameters is not None else None,
            "learn_ahead_min": self.learn_ahead_min,
            "interview_date": self.interview_date,
            "plan_decks": list(self.plan_decks) if self.plan_decks is not None else None,
            "plan_level": self.plan_level,
        }

    @classmethod
    def from_dict(cls, data: dict) -> Settings:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        for key in ("learning_steps_min", "relearning_steps_min", "parameters", "plan_decks"):
            value = known.get(key)
            if value is not None:
                # a list (JSON's array): a text would be taken letter by letter (plan_decks
                # "wo-core" as the decks w, o, -, ...), a number was "'int' object is not iterable"
                if not isinstance(value, list | tuple):
                    raise ValueError(f"{key} must be a list, got {value!r:.60}")
                known[key] = tuple(value)
        return cls(**known)

    def validated(self) -> Settings:
        """Raise ValueError with a one-line message naming the bad value."""
        if not 0.7 <= self.desired_retention <= 0.99:
            raise ValueError(
                f"desired_retention must be between 0.7 and 0.99, got {self.desired_retention}"
            )
        for key in (
            "new_per_day",
            "review_limit",
            "leech_threshold",
            "maximum_interval",
            "learn_ahead_min",
        ):
            value = getattr(self, key)
            # bounded: the queue passes these to SQLite (LIMIT ?), which holds 64-bit ints
            if not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
                raise ValueError(
                    f"{key} must be a whole number between 0 and {MAX_COUNT}, got {quoted(value)}"
                )
        if self.leech_threshold < 1 or self.maximum_interval < 1:
            raise ValueError("leech_threshold and maximum_interval must be at least 1")
        if self.maximum_interval > MAX_INTERVAL_DAYS:  # past this, due dates overflow
            raise ValueError(
                f"maximum_interval must be at most {MAX_INTERVAL_DAYS} days (100 years), "
                f"got {self.maximum_interval}"
            )
        for key in ("learning_steps_min", "relearning_steps_min"):
            for step in getattr(self, key):
                ok = isinstance(step, int | float) and not isinstance(step, bool)
                if not ok or not 0 < step <= MAX_STEP_MIN:  # (also refuses nan)
                    raise ValueError(
                        f"{key}: each step must be a number of minutes above 0 and at most "
                        f"{MAX_STEP_MIN}, got {quoted(step)}"
                    )
        if self.parameters is not None:
            fsrs.Scheduler(parameters=self.parameters)  # fsrs validates the bounds
        if self.interview_date is not None:
            interview_day(self.interview_date)
        if self.plan_level not in LEVELS:
            raise ValueError(
                f"plan_level must be one of {', '.join(LEVELS)}, got {quoted(self.plan_level)}"
            )
        if self.plan_decks is not None and not all(
            isinstance(d, str) and d for d in self.plan_decks
        ):
            raise ValueError(f"plan_decks must be deck names, got [{quoted_all(self.plan_decks)}]")
        return self


def interview_day(text: object) -> date:
    """The interview's date from its setting (YYYY-MM-DD); ValueError naming the value."""
    if isinstance(text, str) and _ISO_DATE.fullmatch(text):
        try:
            day = date.fromisoformat(text)
        except ValueError:
            pass
        else:
            if not 1900 <= day.year <= 9998:  # local-time arithmetic stays inside datetime's
                raise ValueError(
                    f"interview_date must be in the years 1900 to 9998, got {quoted(text)}"
                )
            return day
    raise ValueError(
        f"interview_date must be a date like 2026-12-11 (YYYY-MM-DD), got {quoted(text)}"
    )


@dataclass(frozen=True)
class CardState:
    """The scheduling state of one card, as stored in the ``cards`` table."""

    id: str
    deck: str = ""
    state: int = int(State.Learning)
    step: int | None = 0
    stability: float | None = None
    difficulty: float | None = None
    due: datetime | None = None
    last_review: datetime | None = None
    reps: int = 0
    lapses: int = 0
    leech: bool = False
    content_hash: str = ""
    changed: bool = False
    removed: bool = False

    @property
    def is_new(self) -> bool:
        return self.reps == 0

    def to_fsrs(self, now: datetime) -> fsrs.Card:
        return fsrs.Card(
            card_id=zlib.crc32(self.id.encode()),
            state=State(self.state),
            step=self.step,
            stability=self.stability,
            difficulty=self.difficulty,
            due=self.due or now,
            last_review=self.last_review,
        )


# What fsrs can schedule (fsrs.scheduler: STABILITY_MIN, MIN/MAX_DIFFICULTY). Stability is in
# days; fsrs's own values stay far below the upper bound (100 years is 36 500 days).
STABILITY_MIN, STABILITY_MAX = 0.001, 1e6
DIFFICULTY_MIN, DIFFICULTY_MAX = 1.0, 10.0
MAX_STEP = 1000  # a learning step index; fsrs treats one past the last step as graduated


def _number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


_STATE_NUMBERS = (int(_LEARNING), int(_REVIEW), int(_RELEARNING))
_RATING_OF = {int(r): r for r in Rating}


def rating_of(value: Rating | int) -> Rating:
    """``Rating(value)``: the same member (or error), by a dict's look-up first (the enum's
    call is two Python calls and reads its class's attributes: ~3 us, issue 26)."""
    try:
        return _RATING_OF[value]  # type: ignore[index]
    except (KeyError, TypeError):
        return Rating(value)


def state_problem(card: CardState) -> str | None:
    """Why fsrs cannot schedule ``card`` (one line), or None when it can.

    A state from outside (an imported file, a hand-edited database) is checked here before
    fsrs sees it: fsrs asserts on a review card without stability, divides by a zero
    stability and computes complex numbers from a negative one.
    """
    if card.state not in _STATE_NUMBERS:
        return f"state must be 1 (learning), 2 (review) or 3 (relearning), got {card.state!r}"
    for key in ("reps", "lapses"):
        value = getattr(card, key)
        if not (isinstance(value, int) and not isinstance(value, bool)) or not (
            0 <= value <= MAX_COUNT
        ):
            return f"{key} must be a whole number between 0 and {MAX_COUNT}, got {quoted(value)}"
    step = card.step
    if step is not None and (
        not isinstance(step, int) or isinstance(step, bool) or not 0 <= step <= MAX_STEP
    ):
        return f"step must be a whole number between 0 and {MAX_STEP}, got {quoted(step)}"
    if card.state in (_LEARNING, _RELEARNING) and step is None:
        return "a learning or relearning card needs its step"
    if (card.stability is None) != (card.difficulty is None):
        return "stability and difficulty come together (both set, or both empty for a new card)"
    if card.stability is None:
        if card.state != _LEARNING:
            return "a review or relearning card needs stability and difficulty"
    else:
        s, d = card.stability, card.difficulty
        if not _number(s) or not STABILITY_MIN <= s <= STABILITY_MAX:  # also refuses nan
            return (
                f"stability must be a number of days between {STABILITY_MIN} and "
                f"{STABILITY_MAX:g}, got {s!r}"
            )
        if not _number(d) or not DIFFICULTY_MIN <= d <= DIFFICULTY_MAX:
            return (
                f"difficulty must be between {DIFFICULTY_MIN:g} and {DIFFICULTY_MAX:g}, got {d!r}"
            )
    if card.state != _LEARNING and card.last_review is None:
        return "a review or relearning card needs last_review"
    for key in ("due", "last_review"):
        value = getattr(card, key)
        if value is not None and (not isinstance(value, datetime) or value.utcoffset() is None):
            return f"{key} must be a UTC time, got {quoted(value)}"
    return None


@dataclass(frozen=True)
class Outcome:
    """What one rating does to a card: the new state and the interval until it is due."""

    rating: Rating
    state: CardState
    interval: timedelta
    lapsed: bool


# a rating's new FSRS fields: state, step, stability, difficulty, due, last review (Outcome's
# state as _outcome makes it from them)
_Fields = tuple[int, int | None, float | None, float | None, datetime, datetime | None]


# The settings that decide what a rating does to a card: stored with every review (v9), so
# that a replay of the log on any machine computes the states the ratings gave
REPLAY_KEYS = (
    "desired_retention",
    "learning_steps_min",
    "relearning_steps_min",
    "maximum_interval",
    "parameters",
    "leech_threshold",
)


# replay params' "fuzz_by": how a review's fuzz is seeded (see the module doc)
FUZZ_BY_CARD = "card"  # the card and its history (id, review count, last review): new reviews
FUZZ_BY_REVIEW = "review"  # the review's own id (reviews made in rounds 7-11)
FUZZ_BY = (FUZZ_BY_CARD, FUZZ_BY_REVIEW)  # (and None: the card id and review count, before v2)


def replay_params(
    settings: Settings, fuzz: bool, seed: int, fuzz_by: str | None = FUZZ_BY_CARD
) -> dict:
    """What a review stores of the scheduler that made it (see REPLAY_KEYS). ``fuzz_by`` None:
    the oldest seeding by card id and review count (no "fuzz_by" key)."""
    d = settings.to_dict()
    out = {**{k: d[k] for k in REPLAY_KEYS}, "fuzz": bool(fuzz), "seed": int(seed)}
    if fuzz_by is not None:
        out["fuzz_by"] = fuzz_by
    return out


@dataclass
class Scheduler:
    """FSRS on our card states, with the fuzz seeded by the card and its history (see the
    module doc; ``fuzz_by`` as a review's replay parameters say)."""

    settings: Settings = field(default_factory=Settings)
    enable_fuzzing: bool = True
    seed: int = 0
    fuzz_by: str | None = FUZZ_BY_CARD  # FUZZ_BY_REVIEW: by the review's id; None: id and reps

    def __post_init__(self) -> None:
        s = self.settings
        kwargs = {} if s.parameters is None else {"parameters": s.parameters}
        self._fsrs = _SeededFsrs(
            desired_retention=s.desired_retention,
            learning_steps=tuple(timedelta(minutes=m) for m in s.learning_steps_min),
            relearning_steps=tuple(timedelta(minutes=m) for m in s.relearning_steps_min),
            maximum_interval=s.maximum_interval,
            enable_fuzzing=self.enable_fuzzing,
            **kwargs,
        )
        # the last preview: (card, seed text, time, its four ratings' new fields), which the
        # reviews of the same card with the same seed take (``_kept``) instead of running fsrs
        # again: a card's preview is computed when it is shown (``check``: no outcome made),
        # then asked for when the answer is revealed, then its rating is one of the four
        # (issue 26)
        self._previewed: tuple[CardState, str, datetime, list[_Fields]] | None = None
        self._replay: dict | None = None
        # the last seed text made, with what made it (_seed): a card shown, its preview on
        # reveal and its rating each ask for the same state's (a CardState is frozen)
        self._seeded: tuple[CardState, str | None, int, str | None, str] | None = None

    def replay_params(self) -> dict:
        """What a review made by this scheduler stores of it (module replay_params): the
        same dict each call (a store encodes it once), to read, not to change."""
        made = self._replay
        if made is None:
            made = self._replay = replay_params(
                self.settings, self.enable_fuzzing, self.seed, self.fuzz_by
            )
        return made

    @classmethod
    def from_replay_params(cls, params: dict) -> Scheduler:
        """The scheduler a review was made with (its replay_params); ValueError when they are
        not valid settings."""
        fuzz, seed = params.get("fuzz"), params.get("seed")
        if not isinstance(fuzz, bool) or not isinstance(seed, int) or isinstance(seed, bool):
            raise ValueError("fuzz must be true or false and seed a whole number")
        by = params.get("fuzz_by")
        if by is not None and by not in FUZZ_BY:
            raise ValueError(f"fuzz_by must be one of {', '.join(FUZZ_BY)}, got {by!r:.20}")
        if set(params) - {"fuzz_by"} != {*REPLAY_KEYS, "fuzz", "seed"}:
            raise ValueError(f"scheduler parameters must have exactly {', '.join(REPLAY_KEYS)}")
        settings = Settings.from_dict({k: params[k] for k in REPLAY_KEYS}).validated()
        return cls(settings, enable_fuzzing=fuzz, seed=seed, fuzz_by=by)

    def retrievability(self, card: CardState, now: datetime) -> float:
        if card.is_new:
            return 0.0
        return self._fsrs.get_card_retrievability(card.to_fsrs(now), to_utc(now))

    def _seed(self, card: CardState, key: str | None) -> str:
        """The text that seeds this review's fuzz (see review)."""
        by, kept = self.fuzz_by, self._seeded
        if kept is not None and kept[0] is card and kept[1:4] == (key, self.seed, by):
            return kept[4]
        if by == FUZZ_BY_CARD:  # the card and its history: the same after an undo
            last = card.last_review
            when = fmt(last) if isinstance(last, datetime) else "-"
            text = f"{self.seed}:{card.id}:{card.reps}:{when}"
        elif by == FUZZ_BY_REVIEW and key is not None:
            text = f"{self.seed}:{key}"
        else:
            text = f"{self.seed}:{card.id}:{card.reps}"
        self._seeded = (card, key, self.seed, by, text)
        return text

    def review(
        self, card: CardState, rating: Rating | int, now: datetime, key: str | None = None
    ) -> Outcome:
        """What ``rating`` at ``now`` does to ``card``. ``key``: the review's own id
        ("DEVICE:SEQ", Store.next_review_key), which seeds the fuzz of a review made with
        ``fuzz_by`` "review" (rounds 7-11), so that replaying it draws the interval it drew.
        Without one (a preview outside a store, a simulation) such a review is seeded by the
        card's id and review count, as reviews stored with the oldest parameters are. New
        reviews ("card") are seeded by the card and its history, whatever the key."""
        now = to_utc(now)
        rating = rating_of(rating)
        # Seeded by the review, not the clock: the interval previewed on a button is the
        # interval the same rating gives a moment later.
        seed = self._seed(card, key)
        kept = self._kept(card, seed, now)
        if kept is not None:
            return self._outcome(kept[0], rating, now, *kept[1][rating - 1])
        return self._review(card, rating, now, _FirstDraw(seed))

    def _review(
        self,
        card: CardState,
        rating: Rating,
        now: datetime,
        draw: _FirstDraw,
        given: fsrs.Card | None = None,
    ) -> Outcome:
        """fsrs's review (``given``: the card as fsrs.Card, which fsrs copies, never changes)."""
        self._fsrs.rng = draw
        fcard = card.to_fsrs(now) if given is None else given
        new_card, _log = self._fsrs.review_card(fcard, rating, now)
        return self._outcome(
            card,
            rating,
            now,
            int(new_card.state),
            new_card.step,
            new_card.stability,
            new_card.difficulty,
            new_card.due,
            new_card.last_review,
        )

    def _outcome(
        self,
        card: CardState,
        rating: Rating,
        now: datetime,
        state: int,
        step: int | None,
        stability: float | None,
        difficulty: float | None,
        due: datetime,
        last_review: datetime | None,
    ) -> Outcome:
        """The Outcome of rating ``card`` so, from the scheduler's new FSRS fields (fsrs's
        review or onepass's): the review count, lapses and leech mark counted here."""
        lapsed = card.state == _REVIEW and rating == _AGAIN
        lapses = card.lapses + (1 if lapsed else 0)
        # (_changed inline, its keywords' dict not made: five an answer)
        values = card.__dict__.copy()
        values["state"] = state
        values["step"] = step
        values["stability"] = stability
        values["difficulty"] = difficulty
        values["due"] = due
        values["last_review"] = last_review
        values["reps"] = card.reps + 1
        values["lapses"] = lapses
        values["leech"] = card.leech or lapses >= self.settings.leech_threshold
        values["changed"] = False
        new_state = _new(CardState)
        _set_dict(new_state, "__dict__", values)
        made = _new(Outcome)  # (as _changed makes a state)
        _set_dict(
            made,
            "__dict__",
            {"rating": rating, "state": new_state, "interval": due - now, "lapsed": lapsed},
        )
        return made

    def preview(
        self, card: CardState, now: datetime, key: str | None = None
    ) -> dict[Rating, Outcome]:
        """What each of the four ratings would do, computed before the user rates (``key``:
        the id the review will get, as review()). Kept for the reviews and previews of the
        same card and seed that follow (the rating among them), moved to their time."""
        now = to_utc(now)
        kept, fields = self._keep(card, now, key)
        outcome = self._outcome
        return {rating: outcome(kept, rating, now, *fields[rating - 1]) for rating in _RATINGS}

    def check(self, card: CardState, now: datetime, key: str | None = None) -> None:
        """preview's computation, kept for the preview and the rating that follow, without its
        outcomes made (a card shown: they are made when the answer is revealed); raises what
        preview raises."""
        self._keep(card, to_utc(now), key)

    def _keep(
        self, card: CardState, now: datetime, key: str | None
    ) -> tuple[CardState, list[_Fields]]:
        """The card the preview of ``card`` at ``now`` (UTC) is kept for and the new fields
        each rating gives it at ``now`` (_Fields, in Rating order): the kept ones moved to
        ``now``, or computed and kept."""
        seed = self._seed(card, key)
        kept = self._kept(card, seed, now)
        if kept is not None:
            return kept
        draw = _FirstDraw(seed)
        try:  # the four in one pass (engine/study/onepass.py: fsrs's formulas, bit for bit)
            self._fsrs.rng = draw
            fields: list[_Fields] = [
                (state, step, stability, difficulty, due, now)
                for _r, state, step, stability, difficulty, due in onepass.four(
                    self._fsrs, card, now
                )
            ]
        except Exception:  # a state the pass cannot compute: fsrs says what is wrong with it
            fcard = card.to_fsrs(now)
            fields = []
            for rating in _RATINGS:
                self._fsrs.rng = draw
                new, _log = self._fsrs.review_card(fcard, rating, now)
                fields.append(
                    (
                        int(new.state),
                        new.step,
                        new.stability,
                        new.difficulty,
                        new.due,
                        new.last_review,
                    )
                )
        self._previewed = (card, seed, now, fields)
        return card, fields

    def _kept(
        self, card: CardState, seed: str, now: datetime
    ) -> tuple[CardState, list[_Fields]] | None:
        """The card the last preview was computed for and its fields moved to ``now``, when
        moving them by the time passed since gives what fsrs would give now: the same card
        state and seed, and the same whole number of days since the card's last review (the
        only way fsrs reads the time besides adding it to the interval:
        fsrs.Scheduler.review_card, its retrievability). Moved: fsrs's due is the review's time
        plus the interval, its last review the review's time."""
        kept = self._previewed
        if kept is None or kept[1] != seed or (kept[0] is not card and kept[0] != card):
            return None
        at, fields = kept[2], kept[3]
        last = card.last_review
        if last is not None and (now - last).days != (at - last).days:
            return None
        if now == at:
            return kept[0], fields
        moved = now - at
        return kept[0], [
            (state, step, stability, difficulty, due + moved, now)
            for state, step, stability, difficulty, due, _at in fields
        ]


_new, _set_dict = object.__new__, object.__setattr__
