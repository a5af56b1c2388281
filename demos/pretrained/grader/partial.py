"""Partial answers against the bundled cards' rubrics (demos/pretrained/data/grader_partial.yaml),
torch-free but for `main`.

A partial answer states one point of a card and nothing else: graded as the whole answer against
that card's rubric, it must earn that point and no other. Round 12's grader credited "Each head's
block of W_O can scale it up when it is useful or down when it is noise." with the mixing and
slice points beside the weighting point it states (tests/test_grader.py's partial xfail).

    python -m prep.demos.pretrained.grader.partial            # the look part
    python -m prep.demos.pretrained.grader.partial --final    # + the final part (once, at the end)
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

from prep.demos.pretrained.grader import generic
from prep.demos.pretrained.grader.rubric import Rubric


@dataclass(frozen=True)
class PartialCase:
    part: str  # "look" or "final"
    sentence: str
    card: str
    rubric: Rubric
    covered: dict[str, bool]


def load(rubrics: dict[str, Rubric] | None = None) -> list[PartialCase]:
    import yaml

    data = resources.files("prep.demos.pretrained").joinpath("data", "grader_partial.yaml")
    raw = yaml.safe_load(data.read_text("utf-8"))
    rubrics = generic.card_rubrics() if rubrics is None else rubrics
    out = []
    for part in ("look", "final"):
        for row in raw[part]:
            rubric = rubrics[row["card"]]
            states = {row["point"], *row.get("also", [])}
            ids = {p.id for p in rubric.points}
            if not states <= ids:
                raise ValueError(f"grader_partial.yaml: {row['card']} has no point {states - ids}")
            labels = {p.id: p.id in states for p in rubric.points}
            out.append(PartialCase(part, row["sentence"], row["card"], rubric, labels))
    return out


def measure(predict: generic.Predict, final: bool = False) -> dict[str, Any]:
    """Precision, recall and balanced accuracy over every point of every case, per part; and
    how many cases earned exactly the points they state."""
    out: dict[str, Any] = {}
    cases = load()
    for part in ("look", "final") if final else ("look",):
        pairs: list[tuple[bool, bool]] = []
        exact = 0
        mine = [c for c in cases if c.part == part]
        for case in mine:
            pred = predict(case.rubric, case.sentence)
            got = [(case.covered[pid], bool(pred[pid])) for pid in case.covered]
            pairs += got
            exact += all(lab == p for lab, p in got)
        rep = generic.precision_recall(pairs)
        tnr = 1 - rep["false_positive_rate"] if rep["false_positive_rate"] is not None else 0.0
        rep["balanced_accuracy"] = round(((rep["recall"] or 0.0) + tnr) / 2, 3)
        rep["exact_answers"] = f"{exact} of {len(mine)}"
        out[f"partial_{part}"] = rep
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--final", action="store_true")
    parser.add_argument("--show", action="store_true", help="list each case's scores")
    args = parser.parse_args(argv)
    from prep.demos.pretrained.grader.model import Grader

    grader = Grader()

    def predict(rubric: Rubric, answer: str) -> dict[str, bool]:
        return {v.id: v.covered for v in grader.grade(rubric, answer).points}

    print(json.dumps(measure(predict, args.final), indent=1))
    if args.show:
        for case in load():
            if case.part == "look" or args.final:
                scores = {v.id: v.score for v in grader.grade(case.rubric, case.sentence).points}
                marks = " ".join(
                    f"{pid}{'*' if case.covered[pid] else ''}={s:.2f}" for pid, s in scores.items()
                )
                print(f"{case.part} {case.card}: {marks}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
