"""Red-flag cards are articulated before they are recognised: the line mode asks the learner
to say what the quoted answer gets wrong, and only then lists the choices (the review
screen's two steps are held in tests/test_tui.py)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from prep.tui.cli import main

FLAG_DECK = """\
deck: flags
cards:
  - id: flag
    kind: red-flag
    prompt: "A candidate says: \\"W_O only restores the width for the residual add.\\" What does it get wrong?"
    answer: (b). The shapes already match; W_O mixes heads.
    choices: [It forgets the softmax, It misses cross-head mixing, It ignores dropout]
    correct: b
"""


def _quiz(tmp_path: Path, keys: str) -> str:
    decks = tmp_path / "decks"
    decks.mkdir()
    (decks / "flags.yaml").write_text(FLAG_DECK, encoding="utf-8")
    args = ["--db", str(tmp_path / "p.db"), "--questions", str(decks)]
    result = CliRunner().invoke(
        main, [*args, "quiz", "--plain", "--deck", "flags"], input=keys, catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    return result.output


def test_plain_red_flag_asks_for_the_flaw_before_the_choices(tmp_path: Path) -> None:
    out = _quiz(tmp_path, "the shapes already match\nb\n\nq\n")
    ask = out.index("Say what this answer gets wrong")
    first_choice = out.index("a) It forgets the softmax")
    assert ask < first_choice, out
    assert "Right" in out and "Saved: Good" in out


def test_plain_red_flag_quits_before_the_choices(tmp_path: Path) -> None:
    out = _quiz(tmp_path, "q\n")
    assert "Say what this answer gets wrong" in out
    assert "a) It forgets the softmax" not in out
