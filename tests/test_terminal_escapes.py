"""Text from outside that prep prints (an exception's message, a typed or pasted answer, a
rubric or answers file of the user's, a demo's error) is shown, never obeyed: an escape
sequence in it (``ESC ] 0 ; title BEL`` sets the window title, ``ESC [ 2 J`` clears the
screen) is written out as ``\\x1b``, on the command line and inside the app."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from rich.text import Text

from prep.demos.pretrained.grader.rubric import Grade, Point, PointVerdict, Rubric
from prep.engine.store import Store
from prep.tui.grading import self_check_text, verdict_lines, verdict_text

OSC = "\x1b]0;pwned\x07"
CSI = "\x1b[2J"


def _grade() -> Grade:
    return Grade(
        points=[
            PointVerdict("p1", f"heads {CSI}write", True, 0.9, f"my {OSC}answer\x9b31m"),
            PointVerdict("p2", "mixing", False, 0.1, ""),
        ]
    )


def _no_controls(text: str) -> None:
    assert not any(ord(c) < 32 and c not in "\n\t" or 0x7F <= ord(c) <= 0x9F for c in text), text


def test_the_verdict_lines_show_the_escapes() -> None:
    lines = verdict_lines(_grade(), 3)
    for line in lines:
        _no_controls(line)
    joined = "\n".join(lines)
    assert "my \\x1b]0;pwned\\x07answer\\x9b31m" in joined and "heads \\x1b[2Jwrite" in joined


def test_the_apps_verdict_and_self_check_show_the_escapes() -> None:
    text = verdict_text(_grade())
    assert isinstance(text, Text)
    _no_controls(text.plain)
    assert "\\x1b]0;pwned" in text.plain
    rubric = Rubric("q", (Point("p1", f"a {CSI}point"),))
    pasted = f"line one\nline {OSC}two"
    check = self_check_text(pasted, rubric, "why").plain
    _no_controls(check)
    assert "line one\nline \\x1b]0;pwned\\x07two" in check  # (lines kept)


def test_an_internal_errors_message_shows_the_escapes(tmp_path: Path) -> None:
    Store.open(tmp_path / "p.db").close()
    code = (
        "from prep.engine.study import stats\n"
        f"def broken(*a, **k): raise TypeError({('bad ' + OSC + CSI)!r})\n"
        "stats.compute = broken\n"
        "from prep.tui.cli import run\n"
        f"run(['--db', {str(tmp_path / 'p.db')!r}, 'stats'])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 70
    _no_controls(done.stderr)
    assert "bad \\x1b]0;pwned\\x07\\x1b[2J" in done.stderr


def test_grade_batch_lines_show_the_escapes(tmp_path: Path, monkeypatch) -> None:
    from prep.demos.pretrained.grader import batch
    from prep.tui.cli import main

    rubric = tmp_path / "r.yaml"
    rubric.write_text('question: q\npoints:\n  - id: "p\\e[2J"\n    text: "a point"\n')
    answers = tmp_path / "a.jsonl"
    answers.write_text('{"answer_id": "a\\u001b]0;pwned\\u0007", "answer": "x"}\n')

    def fake_grade_all(rubric: Rubric, given):  # the model is not what this test is about
        for aid, _ in given:
            yield aid, Grade([PointVerdict(p.id, p.text, False, 0.1, "") for p in rubric.points])

    monkeypatch.setattr(batch, "grade_all", fake_grade_all)
    monkeypatch.setattr(batch, "missing", lambda: None)
    result = CliRunner().invoke(
        main,
        [
            "--db",
            str(tmp_path / "p.db"),
            "grade",
            "--rubric",
            str(rubric),
            "--answers",
            str(answers),
        ],
    )
    assert result.exit_code == 0, result.output
    _no_controls(result.output)
    assert result.output.startswith("a\\x1b]0;pwned\\x07: p\\x1b[2J ")


def test_a_demo_error_in_the_app_shows_the_escapes() -> None:
    from prep.tui.testing import make_app

    async def run() -> None:
        app = make_app()
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            app.open_screen("demo", next(iter(app.demos)))
            await pilot.pause()
            screen = app.screen
            screen.write_line(f"CUDA error: {OSC}gone\nsecond line")
            await pilot.pause()
            shown = "\n".join(screen.log_lines)
            _no_controls(shown)
            assert "CUDA error: \\x1b]0;pwned\\x07gone\nsecond line" in shown

    asyncio.run(run())
