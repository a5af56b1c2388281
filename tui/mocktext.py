"""The mock interview's words, shared by the line mode (plain.py) and the mock screen: neither
front end imports the other's module for them."""

from __future__ import annotations

from rich.cells import cell_len

from prep.engine.study.mock import MockInterview, MockStep
from prep.engine.study.present import clock_text, count, first_line, shorten
from prep.engine.study.scheduler import RATING_NAMES


def took_text(step: MockStep) -> str:
    """``You took 1:12 of 2:00.`` (and how far over the budget)."""
    assert step.elapsed_s is not None
    text = f"You took {clock_text(step.elapsed_s)} of {clock_text(step.budget_s)}"
    if step.over_budget:
        text += f", {clock_text(step.elapsed_s - step.budget_s)} over"
    return text + "."


def question_text(prompt: str) -> str:
    """A question as one short line of plain text (for lists of questions)."""
    return shorten(first_line(prompt).replace("**", ""))


def mock_summary_lines(mock: MockInterview) -> list[str]:
    """The end of a mock interview: a headline, then one line per question."""
    s = mock.summary()
    lines = [
        f"Mock over: {s['graded']} of {count(s['questions'], 'question')} graded in "
        f"{clock_text(s['seconds'])} (budget {clock_text(s['budget_seconds'])}); "
        f"{s['over_budget']} over their time."
    ]
    for i, step in enumerate(mock.steps, 1):
        rating = RATING_NAMES[step.rating] if step.rating is not None else "not graded"
        took = clock_text(step.elapsed_s) if step.elapsed_s is not None else "-"
        lines.append(
            f"  {i}. {'  ' * step.depth}{question_text(step.card.prompt)}: "
            f"{took} of {clock_text(step.budget_s)}, {rating}"
        )
        for point in step.missed:
            lines.append(f"     {'  ' * step.depth}missed: {point}")
    return lines


def grades_text(head: str, options: list[str], width: int) -> str:
    """The revealed question's grade line, ``Grade 1-4 (Enter = Good):  1 Again 1m   2 Hard
    6m ...``, in ``width`` cells: on one line when it fits, else broken between options, so
    that a grade is never parted from its interval (``4 Easy`` at one line's end, ``10d`` on
    the next, at 80 columns)."""
    lines, line = [], head
    for i, option in enumerate(options):
        joined = f"{line}{'  ' if i == 0 else '   '}{option}"
        if cell_len(joined) <= width:
            line = joined
        else:
            lines.append(line)
            line = option
    return "\n".join([*lines, line])
