"""`prep optimize` (fsrs's Optimizer on the user's log) and `prep config parameters`."""

from __future__ import annotations

import io
import random
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import fsrs
import pytest
from click.testing import CliRunner
from fsrs.scheduler import DEFAULT_PARAMETERS

from prep.engine.store import Store
from prep.engine.study import optimize as opt
from prep.engine.study.scheduler import CardState, Scheduler, Settings
from prep.tui.cli import main

T0 = datetime(2025, 1, 1, 9, 0, tzinfo=UTC)


def simulate_learner(store: Store, *, cards: int = 100, days: int = 150, seed: int = 1) -> None:
    """A seeded learner who forgets a little faster than FSRS's defaults predict: new cards
    arrive 8 a day; every due card is reviewed that day; recall is drawn from the true
    forgetting curve; the schedule is the app's own (defaults, fuzz off)."""
    rng = random.Random(seed)
    sched = Scheduler(Settings(), enable_fuzzing=False)
    states: dict[str, CardState] = {}
    for day in range(days):
        now = T0 + timedelta(days=day)
        for i in range(day * 8, min(cards, day * 8 + 8)):
            states[f"c{i}"] = CardState(id=f"c{i}")
        for cid, state in list(states.items()):
            t = now
            while state.is_new or (state.due <= now + timedelta(hours=12)):
                t = max(t, state.due or t)
                if state.is_new:
                    rating = rng.choice([1, 3, 3, 3, 4])
                else:
                    recall = sched.retrievability(state, t) ** 1.3
                    rating = 1 if rng.random() > recall else rng.choice([2, 3, 3, 3, 4])
                out = sched.review(state, rating, t)
                prev = None if state.is_new else state
                store.record_review(prev, out.state, rating, t, rng.randint(2_000, 20_000))
                state = states[cid] = out.state
                t += timedelta(seconds=30)


@pytest.fixture(scope="module")
def learner_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("learner") / "p.db"
    with Store.open(path) as store:
        simulate_learner(store)
    return path


def logs_for(days_apart: list[int], card: int = 0) -> list[fsrs.ReviewLog]:
    t = T0
    out = []
    for gap in days_apart:
        t += timedelta(days=gap)
        out.append(fsrs.ReviewLog(card, fsrs.Rating.Good, t, None))
    return out


# --- the threshold ------------------------------------------------------------------------------


def test_threshold_is_fsrs_own() -> None:
    import fsrs.optimizer as fo  # imports torch; fine in a test

    assert opt.MIN_REVIEWS == fo.mini_batch_size == 512
    assert fo.max_seq_len == opt.MAX_SEQ_LEN


def test_trainable_count_counts_what_fsrs_trains_on() -> None:
    # same-day reviews and reviews past the 64th of a card do not count
    assert opt.trainable_count(logs_for([0, 0, 1, 0, 2])) == 2
    assert opt.trainable_count(logs_for([1] * 100)) == 63
    # just under the minimum, fsrs's optimizer itself hands back the defaults untouched
    logs = [log for c in range(7) for log in logs_for([1] * 64, card=c)]  # 7 * 63 = 441
    logs += logs_for([1] * 71, card=99)  # + 63 = 504
    logs += logs_for([1] * 8, card=100)  # + 7 = 511
    assert opt.trainable_count(logs) == 511
    from fsrs.optimizer import Optimizer

    assert Optimizer(logs).compute_optimal_parameters() == list(DEFAULT_PARAMETERS)
    with pytest.raises(opt.OptimizeError, match=r"needs 512 .* you have 511 \(1 more needed"):
        opt.check_enough(logs)


def test_refuses_below_the_minimum(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    with Store.open(db) as store:
        simulate_learner(store, cards=20, days=10)
        before = store.count_reviews()
    result = CliRunner().invoke(main, ["--db", str(db), "optimize", "--yes"])
    assert result.exit_code == 2
    assert result.stderr.startswith("prep: not enough reviews to optimize: fsrs needs 512")
    assert "more needed" in result.stderr and "Traceback" not in result.output
    with Store.open(db) as store:
        assert store.settings().parameters is None and store.count_reviews() == before


# --- fitting ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_fit_on_a_simulated_learner(
    learner_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "p.db"
    db.write_bytes(learner_db.read_bytes())
    fits: list[opt.FitResult] = []
    real_fit = opt.fit
    monkeypatch.setattr(
        opt, "fit", lambda store, **kw: fits.append(real_fit(store, **kw)) or fits[-1]
    )
    result = CliRunner().invoke(main, ["--db", str(db), "optimize"], input="n\n")
    assert result.exit_code == 0, result.output
    out = result.output
    assert "Fitted on" in out and "w20" in out and "forgetting curve decay" in out
    assert "log loss on your reviews: old" in out and "better by" in out
    assert "Save these parameters? [y/N]" in out and out.rstrip().endswith("Not saved.")
    (fit,) = fits
    assert fit.trainable >= 512 and fit.changed
    assert fit.new_loss < fit.old_loss  # the fit predicts this learner better
    with Store.open(db) as store:
        assert store.settings().parameters is None
        store.save_settings(replace(store.settings(), parameters=fit.new))  # fsrs accepts them


def test_saving_is_explicit(
    learner_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    new = tuple(
        round(w * 1.01, 4) if i in (0, 1, 2, 3) else w for i, w in enumerate(DEFAULT_PARAMETERS)
    )
    canned = opt.FitResult(tuple(DEFAULT_PARAMETERS), new, 900, 600, 0.40, 0.38, 0.1)
    monkeypatch.setattr(opt, "fit", lambda store, **kw: canned)
    db = tmp_path / "p.db"
    db.write_bytes(learner_db.read_bytes())
    runner = CliRunner()
    for args, stdin in ((["--dry-run"], None), ([], "n\n"), ([], "")):
        result = runner.invoke(main, ["--db", str(db), "optimize", *args], input=stdin)
        assert result.exit_code == 0, result.output
        assert "Not saved" in result.output
    with Store.open(db) as store:
        assert store.settings().parameters is None
    result = runner.invoke(main, ["--db", str(db), "optimize"], input="y\n")
    assert "Saved." in result.output
    with Store.open(db) as store:
        assert store.settings().parameters == new
        store.save_settings(replace(store.settings(), parameters=None))
    result = runner.invoke(main, ["--db", str(db), "optimize", "--yes"])
    assert "Saved." in result.output and "Save these parameters?" not in result.output
    with Store.open(db) as store:
        assert store.settings().parameters == new


class Endless(io.RawIOBase):
    """`< /dev/zero`: NUL bytes forever, counted (a test that reads it all stops at 64 MB)."""

    def __init__(self) -> None:
        self.read_bytes = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # noqa: ANN001 - a writable buffer
        if self.read_bytes > 64 * 2**20:
            raise AssertionError("read more than 64 MB of an endless standard input")
        buffer[:] = bytes(len(buffer))
        self.read_bytes += len(buffer)
        return len(buffer)


def test_the_save_question_never_reads_an_endless_or_wrong_answer(
    learner_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    new = tuple(round(w * 1.01, 4) if i < 4 else w for i, w in enumerate(DEFAULT_PARAMETERS))
    canned = opt.FitResult(tuple(DEFAULT_PARAMETERS), new, 900, 600, 0.40, 0.38, 0.1)
    monkeypatch.setattr(opt, "fit", lambda store, **kw: canned)
    db = tmp_path / "p.db"
    db.write_bytes(learner_db.read_bytes())
    runner = CliRunner()
    endless = Endless()
    result = runner.invoke(main, ["--db", str(db), "optimize"], input=io.BufferedReader(endless))
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().splitlines()[-1] == (
        "prep: standard input: an answer longer than 1,000 characters (expected y or n); "
        "nothing saved"
    )
    assert endless.read_bytes < 2**20 and "Traceback" not in result.output
    # a pipe cannot be asked again: an answer that is not y or n is one line, exit 2
    result = runner.invoke(main, ["--db", str(db), "optimize"], input="maybe\n")
    assert result.exit_code == 2
    assert "prep: standard input: 'maybe' is not y or n; nothing saved" in result.stderr
    with Store.open(db) as store:
        assert store.settings().parameters is None
    result = runner.invoke(main, ["--db", str(db), "optimize"], input="Yes\n")
    assert result.exit_code == 0 and "Saved." in result.output
    with Store.open(db) as store:
        assert store.settings().parameters == new


def test_render_shows_old_and_new_side_by_side() -> None:
    new = tuple(w * 1.5 if i == 2 else w for i, w in enumerate(DEFAULT_PARAMETERS))
    result = opt.FitResult(tuple(DEFAULT_PARAMETERS), new, 900, 600, 0.40, 0.38, 2.0)
    from prep.tui.reports import optimize_text

    text = optimize_text(result, Settings(), T0)
    line = next(ln for ln in text.splitlines() if ln.startswith("w2 "))
    assert "initial stability (Good)" in line and line.endswith("*")
    assert f"{DEFAULT_PARAMETERS[2]:.4f}" in line and f"{new[2]:.4f}" in line
    assert "better by 5.0%" in text
    old_line = next(ln for ln in text.splitlines() if ln.strip().startswith("old:"))
    new_line = next(ln for ln in text.splitlines() if ln.strip().startswith("new:"))
    assert old_line.count(",") == 2 and old_line != new_line.replace("new", "old")


# --- prep config parameters ---------------------------------------------------------------------


def test_config_parameters(tmp_path: Path) -> None:
    db = str(tmp_path / "p.db")
    runner = CliRunner()
    result = runner.invoke(main, ["--db", db, "config"])
    assert "parameters = default" in result.output
    result = runner.invoke(main, ["--db", db, "config", "parameters"])
    assert result.exit_code == 0 and "(fsrs defaults)" in result.output
    assert f"{DEFAULT_PARAMETERS[0]:.4f}" in result.output

    mine = [round(w, 4) for w in DEFAULT_PARAMETERS]
    mine[0] = 0.3
    result = runner.invoke(main, ["--db", db, "config", "parameters", ",".join(map(str, mine))])
    assert result.exit_code == 0, result.output
    with Store.open(db) as store:
        assert store.settings().parameters == tuple(mine)

    for bad, message in (
        ("1,2,3", "Expected 21 parameters, got 3"),
        ("a,b", "'a' is not a number"),
        (",".join(["100"] * 21), "out of bounds"),
    ):
        result = runner.invoke(main, ["--db", db, "config", "parameters", bad])
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith("prep: parameters: ") and message in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
    with Store.open(db) as store:
        assert store.settings().parameters == tuple(mine)  # unchanged by the bad values

    result = runner.invoke(main, ["--db", db, "config", "parameters", "default"])
    assert result.exit_code == 0
    with Store.open(db) as store:
        assert store.settings().parameters is None


# --- import weight ------------------------------------------------------------------------------


def test_light_commands_do_not_import_torch_pandas_or_textual() -> None:
    code = (
        "import sys\n"
        "import prep.tui.cli, prep.engine.transfer.export, prep.engine.study.optimize, prep.engine.study.cram\n"
        "import prep.engine.study.mock, prep.engine.transfer.anki, prep.tui.plain\n"
        "heavy = [m for m in ('torch', 'pandas', 'textual') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_optimize_help() -> None:
    result = CliRunner().invoke(main, ["optimize", "--help"])
    assert result.exit_code == 0
    assert "512" in result.output and "--yes" in result.output and "--dry-run" in result.output


class _FakeOptimizer:
    """fsrs's Optimizer's shape without torch: reads each card's history once per pass (one
    to count, two per epoch: train and loss) and per loss, as fsrs 6 does (checked against
    the real one: 13 passes for 5 epochs); returns the defaults nudged."""

    def __init__(self, logs: list[fsrs.ReviewLog]) -> None:
        self._revlogs_train = {log.card_id: [log] for log in logs}

    def _passes(self, n: int) -> None:
        for _ in range(n):
            for card_id in list(self._revlogs_train.keys()):
                self._revlogs_train[card_id]

    def compute_optimal_parameters(self, verbose: bool = False) -> list[float]:
        self._passes(1)  # count the reviews
        for _epoch in range(5):
            self._passes(1)  # train
            self._compute_batch_loss(parameters=list(DEFAULT_PARAMETERS))  # the epoch's loss
        return [w * 1.01 for w in DEFAULT_PARAMETERS]

    def _compute_batch_loss(self, *, parameters: list[float]) -> float:
        self._passes(1)
        return sum(parameters) / 100


def test_optimize_shows_progress(
    learner_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = type(sys)("fsrs.optimizer")
    fake.Optimizer = _FakeOptimizer
    fake.num_epochs = 5
    monkeypatch.setitem(sys.modules, "fsrs.optimizer", fake)
    db = tmp_path / "p.db"
    db.write_bytes(learner_db.read_bytes())
    result = CliRunner().invoke(main, ["--db", str(db), "optimize", "--dry-run"])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("Fitting:")]
    # not a terminal: one line per tenth, 0% to 100%, each with the time so far
    assert [line.split()[1] for line in lines] == [f"{p}%" for p in range(0, 101, 10)], lines
    assert "left" in lines[5] and "Fitted on" in result.stdout
