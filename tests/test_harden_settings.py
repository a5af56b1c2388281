"""`prep optimize` writes only the parameters, against the settings saved when it writes: a
`prep config` made during its fit or at its prompt stays. `prep config` changes only the
setting it names."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from fsrs.scheduler import DEFAULT_PARAMETERS

from prep.engine.store import Store
from prep.engine.study import optimize as opt
from prep.tui.cli import main

NEW = tuple(round(w * 1.01, 6) for w in DEFAULT_PARAMETERS)


def fake_fit_changing_config(db: Path, when: str):
    """opt.fit that, like a second terminal, runs `prep config` while the fit runs (when is
    "fit") or leaves it to the prompt (when is "prompt")."""

    def fit(store: Store, progress=None, damaged=None) -> opt.FitResult:
        if when == "fit":
            other = CliRunner().invoke(
                main, ["--db", str(db), "config", "desired_retention", "0.8"]
            )
            assert other.exit_code == 0, other.output
        return opt.FitResult(tuple(DEFAULT_PARAMETERS), NEW, 600, 600, 0.5, 0.4, 1.0)

    return fit


@pytest.mark.parametrize("when", ["fit", "prompt"])
def test_optimize_keeps_a_config_change_made_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    db = tmp_path / "p.db"
    Store.open(db).close()
    assert CliRunner().invoke(main, ["--db", str(db), "config", "new_per_day", "7"]).exit_code == 0
    monkeypatch.setattr(opt, "check_enough", lambda logs: 600)
    monkeypatch.setattr(opt, "fit", fake_fit_changing_config(db, when))
    import prep.tui.reports

    monkeypatch.setattr(
        prep.tui.reports, "optimize_text", lambda result, settings, now: "(the fit)"
    )
    import prep.tui.ask  # optimize's question (bounded: never reads a whole stream)

    def confirm(*args, **kwargs):
        if when == "prompt":  # the user changes a setting in another terminal, then says yes
            other = CliRunner().invoke(
                main, ["--db", str(db), "config", "desired_retention", "0.8"]
            )
            assert other.exit_code == 0, other.output
        return True

    monkeypatch.setattr(prep.tui.ask, "confirm", confirm)
    result = CliRunner().invoke(main, ["--db", str(db), "optimize"])
    assert result.exit_code == 0, result.output
    assert "Saved." in result.output
    with Store.open(db) as store:
        settings = store.settings()
    assert settings.parameters is not None
    assert tuple(settings.parameters) == pytest.approx(NEW)  # the fit's parameters
    assert settings.desired_retention == 0.8  # the change made meanwhile stays
    assert settings.new_per_day == 7


def test_config_writes_only_its_setting(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    with Store.open(db) as first, Store.open(db) as second:
        first.update_settings(new_per_day=3)
        second.update_settings(desired_retention=0.85)  # read before the first wrote
        first.update_settings(maximum_interval=400)
        settings = second.settings()
    assert (settings.new_per_day, settings.desired_retention, settings.maximum_interval) == (
        3,
        0.85,
        400,
    )
    with Store.open(db) as store, pytest.raises(ValueError):
        store.update_settings(desired_retention=7.0)  # validated against the saved settings
