"""A typed answer of only zero-width characters, NUL or other characters that show nothing is no
answer, as an empty one is (it was graded 0 of N points); `prep grade --json` writes the C1
controls (\\x9b is CSI to a terminal) as \\u escapes inside its JSON strings, not raw."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from prep.demos.pretrained.grader import batch
from prep.demos.pretrained.grader.rubric import Grade, PointVerdict, Rubric
from prep.tui.answertext import answer_text
from prep.tui.cli import main

BLANK = ["", "  \n", "\u200b", "\u200b\u200c\u200d\u2060", "\ufeff", "\x00", "\x00\x00 \u200b\n"]
CARD = "wo-dla"  # a bundled card with a rubric


@pytest.fixture
def graded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The grader faked (the model is not what these tests are about): the answers it was given."""
    asked: list[str] = []

    def fake_grade_all(rubric: Rubric, given):
        for aid, answer in given:
            asked.append(answer)
            yield (
                aid,
                Grade([PointVerdict(p.id, p.text, False, 0.1, answer) for p in rubric.points]),
            )

    monkeypatch.setattr(batch, "grade_all", fake_grade_all)
    monkeypatch.setattr(batch, "missing", lambda: None)
    return asked


@pytest.mark.parametrize("answer", BLANK, ids=repr)
def test_an_answer_that_shows_nothing_is_no_answer(
    tmp_path: Path, graded: list[str], answer: str
) -> None:
    done = CliRunner().invoke(
        main, ["--db", str(tmp_path / "p.db"), "grade", CARD], input=answer.encode()
    )
    assert done.exit_code == 2, done.output
    lines = done.output.strip().splitlines()
    assert len(lines) == 1 and "no answer" in lines[0], done.output
    assert graded == []  # never graded 0 of N


def test_an_answer_with_text_between_invisible_characters_is_graded(
    tmp_path: Path, graded: list[str]
) -> None:
    done = CliRunner().invoke(
        main,
        ["--db", str(tmp_path / "p.db"), "grade", CARD],
        input="\u200bW_O mixes heads\x00".encode(),
    )
    assert done.exit_code == 0, done.output
    assert graded == ["\u200bW_O mixes heads\x00"]  # (as typed: the grader reads its sentences)


def test_answer_text_keeps_what_shows() -> None:
    assert [answer_text(a) for a in BLANK] == [""] * len(BLANK)
    assert answer_text(" a\u200bb ") == "a\u200bb"  # inside the answer: kept
    assert answer_text("é ") == "é"


def test_grade_json_escapes_c1_controls(tmp_path: Path, graded: list[str]) -> None:
    rubric = tmp_path / "r.yaml"
    rubric.write_text('question: q\npoints:\n  - id: "p\\x9b2J"\n    text: "a point"\n')
    answers = tmp_path / "a.jsonl"
    answers.write_text('{"answer_id": "a\\u009b31m\\u0085é", "answer": "x"}\n')
    base = ["--db", str(tmp_path / "p.db"), "grade", "--json"]
    done = CliRunner().invoke(main, [*base, "--rubric", str(rubric), "--answers", str(answers)])
    assert done.exit_code == 0, done.output
    assert not any(0x7F <= ord(c) <= 0x9F for c in done.output), repr(done.output)
    assert "a\\u009b31m\\u0085é" in done.output  # escaped, and é still readable
    row = json.loads(done.output)
    assert row["answer_id"] == "a\x9b31m\x85é" and "p\x9b2J" in row["covered"]  # same data
    one = CliRunner().invoke(
        main, ["--db", str(tmp_path / "p.db"), "grade", CARD, "--json"], input="W_O \x9b2J mixes"
    )
    assert one.exit_code == 0, one.output
    assert "\x9b" not in one.output and "\\u009b" in one.output
    assert json.loads(one.output)["card_id"] == CARD


def test_the_apps_answer_box_takes_invisible_text_as_nothing_typed() -> None:
    from prep.tui.testing import make_app
    from prep.tui.widgets.answer_box import AnswerBox
    from tests.pilot import async_test
    from tests.test_grade_tui import FakeGrading, _open_review, collection

    @async_test
    async def run() -> None:
        grading = FakeGrading()
        app = make_app(collection=collection(), grading=grading)
        async with app.run_test(size=(100, 40)) as pilot:
            screen = await _open_review(app, pilot)
            await pilot.press("t")
            box = screen.query_one(AnswerBox)
            box.text = "\u200b\x00\u200b"
            await pilot.press("enter")  # as with nothing typed: not handed in
            await pilot.pause()
            assert grading.asked == [] and not screen.revealed and screen.box_open
            await pilot.press("escape")  # nothing typed: closed without asking
            await pilot.pause()
            assert not screen.box_open and app.screen is screen

    run()


def test_a_batch_says_an_empty_answer_is_empty_and_grades_the_others(
    tmp_path: Path, graded: list[str]
) -> None:
    """`prep grade --answers` graded an empty or invisible answer "0 of N" (note 11): it is
    now one line saying it is empty, in its place, and never reaches the grader."""
    rubric = tmp_path / "r.yaml"
    rubric.write_text("question: q\npoints:\n  - {id: p1, text: a point}\n", "utf-8")
    answers = tmp_path / "a.jsonl"
    rows = [("a1", "W_O mixes heads"), ("a2", ""), ("a3", "\u200b\x00 "), ("a4", "x")]
    answers.write_text(
        "\n".join(json.dumps({"answer_id": a, "answer": t}) for a, t in rows) + "\n", "utf-8"
    )
    base = ["--db", str(tmp_path / "p.db"), "grade", "--rubric", str(rubric)]
    done = CliRunner().invoke(main, [*base, "--answers", str(answers), "--json"])
    assert done.exit_code == 0, done.output
    out = [json.loads(line) for line in done.output.splitlines()]
    assert [o["answer_id"] for o in out] == ["a1", "a2", "a3", "a4"]
    assert out[1] == {"answer_id": "a2", "empty": True, "covered": None, "scores": None}
    assert out[2]["empty"] is True and out[2]["covered"] is None
    assert out[0]["covered"] == {"p1": False} and "empty" not in out[0]
    assert graded == ["W_O mixes heads", "x"]  # the empty ones never reached the grader
    text = CliRunner().invoke(main, [*base, "--answers", str(answers)])
    assert text.exit_code == 0, text.output
    lines = text.output.splitlines()
    assert lines[1] == "a2: empty answer, not graded" and lines[2].startswith("a3: empty answer")
    assert lines[0].startswith("a1: p1 ✗")


def test_a_batch_of_only_empty_answers_needs_no_grader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_model(rubric, given):
        raise AssertionError("the grader was loaded for empty answers")

    monkeypatch.setattr(batch, "grade_all", no_model)
    monkeypatch.setattr(batch, "missing", lambda: "grading needs the extra")
    rubric = tmp_path / "r.yaml"
    rubric.write_text("question: q\npoints:\n  - {id: p1, text: a point}\n", "utf-8")
    answers = tmp_path / "a.jsonl"
    answers.write_text('{"answer_id": 1, "answer": "  "}\n', "utf-8")
    args = ["grade", "--rubric", str(rubric), "--answers", str(answers)]
    done = CliRunner().invoke(main, ["--db", str(tmp_path / "p.db"), *args])
    assert done.exit_code == 0 and done.output == "1: empty answer, not graded\n", done.output
