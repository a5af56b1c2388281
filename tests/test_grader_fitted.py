"""The grader's snapshot of the decks (prep.demos.pretrained.grader.fitted): the idf table and
the head are fitted to the bundled decks' training cards, and a card edited after the fit is
said, in one line naming the retrain command, never graded against silently."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from prep.demos.pretrained.grader import batch, fitted
from prep.demos.pretrained.grader.rubric import Grade, PointVerdict, Rubric


def test_the_shipped_grader_is_fitted_to_the_shipped_decks():
    """Fails when a bundled card's points, bullets or text changed since the last fit."""
    if fitted.fitted_digest() != fitted.digest():
        pytest.fail(
            f"the bundled decks changed since the grader was fitted: run {fitted.RETRAIN}",
            pytrace=False,
        )


def _cards() -> list[dict]:
    return copy.deepcopy(fitted.bundled_cards())


def test_the_fingerprint_sees_every_text_the_fit_reads_and_only_those():
    cards = _cards()
    base = fitted.digest(cards)
    trained = next(
        i
        for i, c in enumerate(cards)
        if c.get("points") and c.get("bullets") and c["id"] not in fitted.HELDOUT_CARDS
    )
    held = next(i for i, c in enumerate(cards) if c["id"] in fitted.HELDOUT_CARDS)
    for key in ("points", "bullets"):
        edited = _cards()
        edited[trained][key][0] += " (edited)"
        assert fitted.digest(edited) != base, key
    for key in ("prompt", "answer"):
        edited = _cards()
        edited[trained][key] = str(edited[trained][key]) + " More."
        assert fitted.digest(edited) != base, key
    reordered = _cards()
    reordered[trained]["points"] = list(reversed(reordered[trained]["points"]))
    assert fitted.digest(reordered) != base
    # a held-out card is never fitted on: editing it leaves the grader as fitted as before
    edited = _cards()
    edited[held]["points"] = [*edited[held]["points"], "A new point."]
    assert fitted.digest(edited) == base
    assert fitted.digest(cards) == base  # and the digest reads nothing but its argument


@pytest.fixture
def stale(monkeypatch):
    monkeypatch.setattr(fitted, "fitted_digest", lambda: "0" * 64)
    fitted.stale.cache_clear()
    yield fitted.stale()
    fitted.stale.cache_clear()


def test_a_stale_grader_is_one_line_naming_the_retrain_command(stale):
    assert stale is not None and "\n" not in stale and fitted.RETRAIN in stale


def test_a_grade_carries_the_note_to_every_front_end(stale):
    from prep.tui.grading import verdict_lines, verdict_text

    grade = Grade([PointVerdict("p1", "W_O mixes heads.", True, 0.9, "It mixes.")], 0.1, stale)
    back = Grade.from_dict(json.loads(json.dumps(grade.to_dict())))  # the worker's round trip
    assert back == grade
    assert verdict_lines(back, 3)[-1] == stale
    assert verdict_text(back).plain.splitlines()[-1] == stale
    fresh = Grade(grade.points, 0.1)
    assert "note" not in fresh.to_dict() and Grade.from_dict(fresh.to_dict()).note == ""
    assert stale not in "\n".join(verdict_lines(fresh, 3))


RUBRIC = "question: What does W_O do?\npoints:\n  - {id: mix, text: W_O mixes heads.}\n"


def _stub(note: str):
    def grade_all(rubric: Rubric, answers):
        for aid, _ in answers:
            p = rubric.points[0]
            yield aid, Grade([PointVerdict(p.id, p.text, True, 0.9, "x")], 0.0, note)

    return grade_all


def test_prep_grade_batch_says_a_stale_grader_once_on_stderr(stale, tmp_path: Path, monkeypatch):
    from prep.tui.cli import main

    monkeypatch.setattr(batch, "grade_all", _stub(stale))
    monkeypatch.setattr(batch, "missing", lambda: None)
    (tmp_path / "r.yaml").write_text(RUBRIC, encoding="utf-8")
    lines = [json.dumps({"answer_id": i, "answer": "W_O mixes heads."}) for i in range(3)]
    (tmp_path / "a.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    args = ["grade", "--rubric", str(tmp_path / "r.yaml"), "--answers", str(tmp_path / "a.jsonl")]
    result = CliRunner().invoke(main, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [stale]
    assert [json.loads(line)["answer_id"] for line in result.stdout.splitlines()] == [0, 1, 2]


def test_the_real_grader_notes_a_stale_fit_and_a_user_deck_alone_is_no_reason(stale, minilm):
    """Stale bundled decks: every grade says so. A user's own deck is graded like a held-out
    card (the grader never saw it either way) and adds no note of its own."""
    from prep.demos.pretrained.grader.model import Encoder, Grader

    user = Rubric.from_texts("What is a KV cache?", ["Keys and values are kept per token."])
    assert Grader(encoder=Encoder(real=minilm)).grade(user, "The cache keeps keys.").note == stale
    fitted.stale.cache_clear()
    fitted_now = fitted.digest()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fitted, "fitted_digest", lambda: fitted_now)
        grade = Grader(encoder=Encoder(real=minilm)).grade(user, "The cache keeps keys.")
    assert grade.note == "" and len(grade.points) == 1
