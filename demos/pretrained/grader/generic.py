"""Generic sentences against the bundled cards' rubrics (demos/pretrained/data/grader_generic.yaml),
and the grader's precision and recall on its labelled examples, torch-free but for `main`.

A generic sentence ("W_O maps each head output into the residual stream.") is true and about the
subject, and shares words with many points, but states none of them: graded alone as an answer,
it must earn no point. The set pairs each sentence with every bundled card whose points share a
content word with it (the cards a learner could type it for), each point labelled not covered
unless the file's `covers` says the sentence states it.

    python -m prep.demos.pretrained.grader.generic            # dev tune + look part
    python -m prep.demos.pretrained.grader.generic --final    # + held-out and the final part
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from prep.demos.pretrained.grader import devset
from prep.demos.pretrained.grader import text as tx
from prep.demos.pretrained.grader.rubric import Rubric

ROOT = Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class GenericCase:
    part: str  # "look" or "final"
    sentence: str
    card: str
    rubric: Rubric
    covered: dict[str, bool]


def card_rubrics() -> dict[str, Rubric]:
    """The bundled cards' `points:` as rubrics (read from the source tree, like train.py)."""
    import yaml

    out = {}
    for path in sorted((ROOT / "questions").glob("*.yaml")):
        for card in yaml.safe_load(path.read_text("utf-8")).get("cards", []):
            if card.get("points"):
                out[card["id"]] = Rubric.from_texts(
                    str(card["prompt"]), [str(p) for p in card["points"]]
                )
    return out


def load(rubrics: dict[str, Rubric] | None = None) -> list[GenericCase]:
    import yaml

    data = resources.files("prep.demos.pretrained").joinpath("data", "grader_generic.yaml")
    raw = yaml.safe_load(data.read_text("utf-8"))
    covers = {(c["sentence"], c["card"], c["point"]) for c in raw.get("covers") or []}
    rubrics = card_rubrics() if rubrics is None else rubrics
    out = []
    for part in ("look", "final"):
        for sentence in raw[part]:
            stems = tx.content_stems(sentence)
            for cid, rubric in rubrics.items():
                if any(stems & tx.content_stems(p.text) for p in rubric.points):
                    labels = {p.id: (sentence, cid, p.id) in covers for p in rubric.points}
                    out.append(GenericCase(part, sentence, cid, rubric, labels))
    return out


Predict = Callable[[Rubric, str], dict[str, bool]]


def precision_recall(pairs: list[tuple[bool, bool]]) -> dict[str, Any]:
    """(label, predicted) pairs -> precision, recall, false positive rate and counts."""
    tp = sum(lab and pred for lab, pred in pairs)
    fp = sum(pred and not lab for lab, pred in pairs)
    fn = sum(lab and not pred for lab, pred in pairs)
    neg = sum(not lab for lab, _ in pairs)
    return {
        "n": len(pairs),
        "precision": round(tp / (tp + fp), 3) if tp + fp else None,
        "recall": round(tp / (tp + fn), 3) if tp + fn else None,
        "false_positive_rate": round(fp / neg, 3) if neg else None,
        "tp": tp,
        "fp": fp,
        "fn": fn,
    }


def measure(predict: Predict, final: bool = False) -> dict[str, Any]:
    """Precision/recall on the dev set's tune part (and held-out part when `final`), the false
    positive rate on the generic set's look part (and final part)."""
    rubrics, examples = devset.load()
    out: dict[str, Any] = {}
    for split in ("tune", "heldout") if final else ("tune",):
        judged = devset.judge([e for e in examples if e.split == split], predict, rubrics)
        out[f"dev_{split}"] = precision_recall([(lab, pred) for _, _, lab, pred in judged])
        out[f"dev_{split}"]["balanced_accuracy"] = round(devset.balanced_accuracy(judged), 3)
    cases = load()
    for part in ("look", "final") if final else ("look",):
        pairs: list[tuple[bool, bool]] = []
        credited: dict[str, int] = {}
        for case in (c for c in cases if c.part == part):
            pred = predict(case.rubric, case.sentence)
            pairs += [(case.covered[pid], bool(pred[pid])) for pid in case.covered]
            hits = sum(bool(pred[pid]) and not case.covered[pid] for pid in case.covered)
            credited[case.sentence] = credited.get(case.sentence, 0) + hits
        out[f"generic_{part}"] = precision_recall(pairs) | {"false_credits": credited}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--final", action="store_true")
    parser.add_argument("--show", type=float, default=None, help="list generic hits >= SCORE")
    args = parser.parse_args(argv)
    from prep.demos.pretrained.grader.model import Grader

    grader = Grader()

    def predict(rubric: Rubric, answer: str) -> dict[str, bool]:
        return {v.id: v.covered for v in grader.grade(rubric, answer).points}

    print(json.dumps(measure(predict, args.final), indent=1))
    if args.show is not None:
        for case in load():
            if case.part == "look" or args.final:
                for v in grader.grade(case.rubric, case.sentence).points:
                    if v.score >= args.show:
                        print(f"{v.score:.2f} {case.card} {v.id} | {case.sentence} | {v.text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
