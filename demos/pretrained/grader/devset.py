"""The labelled development set (demos/pretrained/data/grader_dev*.{yaml,jsonl}) and its scoring, torch-free.

Each answer is one style of eight: strong, partial, paraphrase, salad (the right terms, nothing
correct), negated, off-topic, rambling, terse; each point of its rubric is labelled covered or
not. Rubrics are split: `tune` (the head may be fit on them) and `heldout` (never tuned on).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any

from prep.demos.pretrained.grader.rubric import Rubric, parse_rubric

STYLES = ("strong", "partial", "paraphrase", "salad", "negated", "off-topic", "rambling", "terse")


@dataclass(frozen=True)
class Example:
    qid: str
    split: str
    style: str
    answer: str
    covered: dict[str, bool]


def load() -> tuple[dict[str, Rubric], list[Example]]:
    import yaml

    data = resources.files("prep.demos.pretrained").joinpath("data")
    raw = yaml.safe_load(data.joinpath("grader_dev_rubrics.yaml").read_text("utf-8"))
    rubrics = {}
    splits = {}
    for qid, item in raw.items():
        splits[qid] = item.pop("split")
        rubrics[qid] = parse_rubric(item, f"grader_dev_rubrics.yaml: {qid}")
    examples = []
    for line in data.joinpath("grader_dev.jsonl").read_text("utf-8").splitlines():
        row = json.loads(line)
        if "comment" in row:
            continue
        ids = [p.id for p in rubrics[row["qid"]].points]
        assert sorted(row["covered"]) == sorted(ids), row
        examples.append(
            Example(row["qid"], splits[row["qid"]], row["style"], row["answer"], row["covered"])
        )
    return rubrics, examples


# (example, point id, label, predicted)
Judgement = tuple[Example, str, bool, bool]


def balanced_accuracy(judged: list[Judgement]) -> float:
    pos = [pred for _, _, label, pred in judged if label]
    neg = [not pred for _, _, label, pred in judged if not label]
    tpr = sum(pos) / len(pos) if pos else 0.0
    tnr = sum(neg) / len(neg) if neg else 0.0
    return (tpr + tnr) / 2


def report(judged: list[Judgement], seed: int = 0, n_boot: int = 1000) -> dict[str, Any]:
    """Balanced accuracy (with a bootstrap 95% interval over answers), the issue's three rates,
    and per style: accuracy and the share of points called covered."""
    by_style: dict[str, dict[str, float]] = {}
    for style in STYLES:
        rows = [j for j in judged if j[0].style == style]
        if rows:
            by_style[style] = {
                "n_points": len(rows),
                "accuracy": round(sum(lab == pred for _, _, lab, pred in rows) / len(rows), 3),
                "called_covered": round(sum(pred for *_, pred in rows) / len(rows), 3),
                "labelled_covered": round(sum(lab for _, _, lab, _ in rows) / len(rows), 3),
            }

    def rate(style: str, label: bool | None) -> float | None:
        rows = [j for j in judged if j[0].style == style and (label is None or j[2] == label)]
        return round(sum(j[3] for j in rows) / len(rows), 3) if rows else None

    answers = sorted({id(j[0]): j[0] for j in judged}.values(), key=lambda e: (e.qid, e.style))
    per_answer = {id(e): [j for j in judged if j[0] is e] for e in answers}
    rng = random.Random(seed)
    boots = []
    for _ in range(n_boot):
        sample = [j for e in rng.choices(answers, k=len(answers)) for j in per_answer[id(e)]]
        boots.append(balanced_accuracy(sample))
    boots.sort()
    return {
        "n_answers": len(answers),
        "n_points": len(judged),
        "balanced_accuracy": round(balanced_accuracy(judged), 3),
        "balanced_accuracy_ci95": [
            round(boots[int(0.025 * n_boot)], 3),
            round(boots[int(0.975 * n_boot) - 1], 3),
        ],
        "salad_called_covered": rate("salad", None),
        "negated_called_covered": rate("negated", None),
        "paraphrase_found": rate("paraphrase", True),
        "by_style": by_style,
    }


def judge(
    examples: list[Example], predict: Callable[[Rubric, str], dict[str, bool]], rubrics: dict
) -> list[Judgement]:
    out: list[Judgement] = []
    for ex in examples:
        pred = predict(rubrics[ex.qid], ex.answer)
        out += [(ex, pid, label, bool(pred[pid])) for pid, label in ex.covered.items()]
    return out
