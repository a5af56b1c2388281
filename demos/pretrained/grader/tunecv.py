"""The grader's recipe judged on the tune part alone: leave one tune question out.

    python -m prep.demos.pretrained.grader.tunecv                     # seeds 0-3, per style
    python -m prep.demos.pretrained.grader.tunecv --without point_margin sentence_margin

For each of the tune part's questions, a head is fit exactly as train.py fits the shipped one
(the generated pairs and the other tune questions) and grades that question's answers. No
held-out answer is read. `--without NAME` sets a feature to a constant for every pair (the head
then learns nothing from it): the recipe before that feature, on the same pairs. This is how
each idea is measured before any held-out look (grader_metrics.json's history cites it).
"""

from __future__ import annotations

import argparse
import json
import random
import time

from prep.demos._torch import torch
from prep.demos.pretrained.grader import devset, train
from prep.demos.pretrained.grader.model import FEATURES, Grader, Head, apply_rules


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--without", nargs="*", default=[], choices=FEATURES, metavar="NAME")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    start = time.perf_counter()
    grader = Grader(head=Head())
    gen = train.generated(random.Random(train.SEED))
    items = gen + train.tune_instances()
    rival = train.rivals(gen, random.Random(train.SEED + 1)) + train.tune_rivals()
    feats = train.featurise(grader, items, rival)
    for name in args.without:
        for f in feats:
            f[:, FEATURES.index(name)] = 0.0
    rubrics, examples = devset.load()
    owners = [(ex, p.id) for ex in examples if ex.split == "tune" for p in rubrics[ex.qid].points]
    owner = [None] * len(gen) + owners  # the tune example each item comes from
    labels = torch.tensor([lab for *_, lab in items])
    for seed in args.seeds:
        judged: list[devset.Judgement] = []
        for qid in sorted({ex.qid for ex, _ in owners}):
            keep = [i for i, o in enumerate(owner) if o is None or o[0].qid != qid]
            weights = torch.tensor([1.0 if owner[i] is None else train.TUNE_WEIGHT for i in keep])
            head = train.fit([feats[i] for i in keep], labels[keep], weights, seed=seed)
            with torch.no_grad():
                for i, o in enumerate(owner):
                    if o is not None and o[0].qid == qid:
                        logit = float(apply_rules(head(feats[i]), feats[i]).max())
                        judged.append((o[0], o[1], bool(labels[i] > 0.5), logit >= 0.0))
        rep = devset.report(judged)
        styles = {k: v["accuracy"] for k, v in rep["by_style"].items()}
        keys = ("balanced_accuracy", "salad_called_covered", "negated_called_covered")
        print(
            json.dumps(
                {
                    "seed": seed,
                    **{k: rep[k] for k in keys},
                    "paraphrase_found": rep["paraphrase_found"],
                }
                | {"accuracy_by_style": styles}
            )
        )
    print(f"{time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
