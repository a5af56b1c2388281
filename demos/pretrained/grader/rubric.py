"""A rubric (a question and its points) and a grade, torch-free: the worker, the CLI and the
TUI pass these around without loading the model.

A rubric file (``prep grade --rubric FILE.yaml``)::

    question: Beyond shape preservation, what does W_O do?
    points:
      - id: p1
        text: W_O lets heads write along shared directions (cross-head mixing).
      - id: p2
        text: Each head's block of W_O can amplify or suppress that head.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_POINTS = 12
MAX_POINT_CHARS = 400


class RubricError(Exception):
    """The rubric cannot be used; the message is one line naming the file and what is wrong."""


@dataclass(frozen=True)
class Point:
    id: str
    text: str


@dataclass(frozen=True)
class Rubric:
    question: str
    points: tuple[Point, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "points": [[p.id, p.text] for p in self.points]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Rubric:
        return cls(str(data["question"]), tuple(Point(str(i), str(t)) for i, t in data["points"]))

    @classmethod
    def from_texts(cls, question: str, texts: tuple[str, ...] | list[str]) -> Rubric:
        """Points named p1, p2, ... in order (a card's `points:` or its bullets)."""
        return cls(question, tuple(Point(f"p{i}", t) for i, t in enumerate(texts, 1)))


@dataclass
class PointVerdict:
    id: str
    text: str
    covered: bool
    score: float
    sentence: str  # the answer's sentence that covers it best ("" when the answer is empty)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Grade:
    points: list[PointVerdict] = field(default_factory=list)
    seconds: float = 0.0
    note: str = ""  # one line the learner should read beside the marks (fitted.stale())

    @property
    def missed(self) -> list[PointVerdict]:
        return [p for p in self.points if not p.covered]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "points": [p.to_dict() for p in self.points],
            "seconds": self.seconds,
        }
        if self.note:
            out["note"] = self.note
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Grade:
        points = [PointVerdict(**p) for p in data["points"]]
        return cls(points, float(data.get("seconds", 0.0)), str(data.get("note") or ""))


def parse_rubric(data: Any, where: str) -> Rubric:
    """A rubric from parsed YAML/JSON; RubricError (one line, naming `where`) when malformed."""
    if not isinstance(data, dict):
        raise RubricError(f"{where}: a rubric is a mapping with 'question' and 'points'")
    unknown = sorted(set(map(str, data)) - {"question", "points", "id"})
    if unknown:
        raise RubricError(f"{where}: unknown key {unknown[0]!r} (expected question, points)")
    question = data.get("question")
    if not isinstance(question, str) or not question.strip():
        raise RubricError(f"{where}: 'question' must be non-empty text")
    raw = data.get("points")
    if not isinstance(raw, list) or not raw:
        raise RubricError(f"{where}: 'points' must be a non-empty list of {{id, text}}")
    if len(raw) > MAX_POINTS:
        raise RubricError(f"{where}: {len(raw)} points; a rubric has at most {MAX_POINTS}")
    points: list[Point] = []
    seen: set[str] = set()
    for n, item in enumerate(raw, 1):
        if not isinstance(item, dict) or set(map(str, item)) - {"id", "text"}:
            raise RubricError(f"{where}: point {n} must be a mapping with 'id' and 'text'")
        pid, text = item.get("id"), item.get("text")
        if not isinstance(pid, (str, int)) or isinstance(pid, bool) or not str(pid).strip():
            raise RubricError(f"{where}: point {n} needs an 'id' (text)")
        if not isinstance(text, str) or not text.strip():
            raise RubricError(f"{where}: point {pid!s} needs a non-empty 'text'")
        if len(text) > MAX_POINT_CHARS:
            raise RubricError(f"{where}: point {pid!s} is longer than {MAX_POINT_CHARS} chars")
        if str(pid) in seen:
            raise RubricError(f"{where}: point id {pid!s} appears twice")
        seen.add(str(pid))
        points.append(Point(str(pid), text.strip()))
    return Rubric(question.strip(), tuple(points))


def load_rubric(path: str | Path) -> Rubric:
    """Read a rubric YAML file; RubricError (one line) when it is unreadable or malformed."""
    import yaml

    from prep.demos.pretrained.grader.inputs import MAX_RUBRIC_BYTES, read_text, shown

    text = read_text(path, MAX_RUBRIC_BYTES)
    path = shown(path)  # (in the messages: "standard input" for -)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise RubricError(f"{path}{line}: not valid YAML") from None
    except RecursionError:  # (PyYAML's composer recurses once a level: `[[[[...` in 38 KB)
        raise RubricError(f"{path}: nested too deeply to be a rubric") from None
    return parse_rubric(data, str(path))
