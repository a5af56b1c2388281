"""A `--model` value (and a --plot path) comes from outside: `prep demo`'s error and progress
lines write its control characters as escapes (ESC]0;...BEL set the window title, \\x9b is CSI),
one line each, as the rest of prep's one-line errors do."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from prep.demos.cli import run

OSC = "\x1b]0;pwned\x07"
RAW = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")  # any control but the line break


def test_a_model_that_is_no_folder_is_named_with_its_escapes(capsys) -> None:
    code, _ = run(["real-ov-rank", "--device", "cpu", "--model", f"./nope{OSC}\x9b2J"])
    err = capsys.readouterr().err
    assert code == 2
    assert not RAW.search(err), repr(err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "--model ./nope\\x1b]0;pwned\\x07\\x9b2J: no such folder" in lines[0]


def test_a_folder_that_will_not_load_is_named_with_its_escapes(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / f"bad{OSC}"
    folder.mkdir()
    (folder / "config.json").write_text("{not json")
    monkeypatch.setenv("PREP_DEMO_PROGRESS", "1")  # the progress line names it too
    code, _ = run(["real-ov-rank", "--device", "cpu", "--model", str(folder)])
    err = capsys.readouterr().err
    assert code == 2
    assert not RAW.search(err), repr(err)
    assert "bad\\x1b]0;pwned\\x07" in err


def test_a_plot_path_is_named_with_its_escapes(tmp_path: Path, capsys) -> None:
    code, _ = run(["ov-rank", "--plot", str(tmp_path / f"no-folder{OSC}" / "x.svg")])
    err = capsys.readouterr().err
    assert code == 2 and not RAW.search(err), repr(err)
