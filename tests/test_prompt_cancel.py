"""Ctrl-C at a yes/no question cancels the command (cli13): `prep config --reset` and
`prep optimize` read it as "no" and exited 0, so a shell or a script saw a cancelled command
succeed. Now it ends as Ctrl-C anywhere in a command does (tui/entry.guarded): one line,
`prep: interrupted`, exit 130, and nothing is changed."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from fsrs.scheduler import DEFAULT_PARAMETERS

from prep.engine.store import Store, backup
from prep.engine.study import optimize as opt
from prep.tui.cli import run

TUNED = (0.4321, *list(DEFAULT_PARAMETERS)[1:])


class _CtrlC(io.StringIO):
    """A terminal whose user presses Ctrl-C at the question."""

    def isatty(self) -> bool:
        return True

    def readline(self, size: int | None = -1) -> str:
        raise KeyboardInterrupt


def _run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, *args: str):
    monkeypatch.setattr(sys, "stdin", _CtrlC())
    with pytest.raises(SystemExit) as ended:
        run(list(args))
    return ended.value.code, capsys.readouterr()


def test_ctrl_c_at_config_reset_exits_130_and_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    db = tmp_path / "p.db"
    with Store.open(db) as store:
        store.update_settings(parameters=TUNED, new_per_day=5)
    code, out = _run(monkeypatch, capsys, "--db", str(db), "config", "--reset")
    assert code == 130, out
    assert "Reset every setting? [y/N]" in out.out
    assert out.err.strip().splitlines() == ["prep: interrupted"]
    assert "nothing changed" not in out.out  # (not the answer "no")
    with Store.open(db) as store:
        assert store.settings().new_per_day == 5 and tuple(store.settings().parameters) == TUNED
    assert backup.listing(db) == []


def test_ctrl_c_at_optimizes_save_question_exits_130_and_saves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    new = tuple(round(w * 1.01, 4) for w in DEFAULT_PARAMETERS)
    canned = opt.FitResult(tuple(DEFAULT_PARAMETERS), new, 900, 600, 0.40, 0.38, 0.1)
    monkeypatch.setattr(opt, "check_enough", lambda logs: 600)
    monkeypatch.setattr(opt, "fit", lambda store, **kw: canned)
    db = tmp_path / "p.db"
    Store.open(db).close()
    code, out = _run(monkeypatch, capsys, "--db", str(db), "optimize")
    assert code == 130, out
    assert "Save these parameters? [y/N]" in out.out and "Not saved." not in out.out
    assert out.err.strip().splitlines()[-1] == "prep: interrupted"
    with Store.open(db) as store:
        assert store.settings().parameters is None
