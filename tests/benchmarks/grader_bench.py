"""The grader on the held-out part of its labelled development set (never tuned on), beside
the two naive baselines measured in the same run, and its time per answer.

    python tests/benchmarks/grader_bench.py [--json]

Bars (from issue 25, argued before any run): balanced accuracy >= 0.80, salad and negated
points called covered <= 25%, correct paraphrases found >= 50%. Nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the whole result as JSON")
    args = parser.parse_args()
    from prep.demos.pretrained.grader.batch import missing

    hint = missing()
    if hint:
        print(f"grader bench skipped: {hint}")
        return 0
    from prep.demos.pretrained.grader.model import Grader
    from prep.demos.pretrained.grader.train import BARS, evaluate

    start = time.perf_counter()
    grader = Grader()
    load = time.perf_counter() - start
    result = evaluate(grader)
    if args.json:
        print(json.dumps({"load_seconds": round(load, 2), **result}, indent=2))
        return 0
    held = result["heldout"]
    print(f"grader (held-out: {held['n_answers']} answers, {held['n_points']} points)")
    print(f"  model load {load:.1f} s; {1000 * result['seconds_per_answer']:.0f} ms per answer")
    lo, hi = held["balanced_accuracy_ci95"]
    print(f"  balanced accuracy {held['balanced_accuracy']:.3f} (95% CI {lo:.3f}-{hi:.3f})")
    for key, (op, bar) in BARS.items():
        value = held[key]
        ok = value >= bar if op == ">=" else value <= bar
        print(f"  {key:24} {value:6.3f}   bar {op} {bar}  {'meets' if ok else 'MISSES'}")
    if fresh := result.get("heldout_fresh"):
        lo, hi = fresh["balanced_accuracy_ci95"]
        print(
            f"  of which round 2's fresh questions ({fresh['n_answers']} answers): balanced "
            f"accuracy {fresh['balanced_accuracy']:.3f} (95% CI {lo:.3f}-{hi:.3f}), salad "
            f"{fresh['salad_called_covered']:.3f}, negated {fresh['negated_called_covered']:.3f}, "
            f"paraphrase {fresh['paraphrase_found']:.3f}"
        )
    for key, label in (
        ("heldout_before_round3", "the nine questions before round 3"),
        ("heldout_round3", "round 3's fresh questions"),
    ):
        if part := result.get(key):
            print(
                f"  of which {label} ({part['n_answers']} answers): balanced accuracy "
                f"{part['balanced_accuracy']:.3f}, salad {part['salad_called_covered']:.3f}, "
                f"negated {part['negated_called_covered']:.3f}, "
                f"paraphrase {part['paraphrase_found']:.3f}"
            )
    older = (result.get("heldout_before_round3") or {}).get("by_style", {})
    newer = (result.get("heldout_round3") or {}).get("by_style", {})
    print(
        "  per style: accuracy (all | nine older | round 3's four), share called covered "
        "(labelled covered)"
    )
    for style, row in held["by_style"].items():
        parts = " | ".join(
            f"{part[style]['accuracy']:.3f}" if style in part else "  -  "
            for part in (older, newer)
        )
        print(
            f"    {style:10} {row['accuracy']:.3f} | {parts}  {row['called_covered']:.3f} "
            f"({row['labelled_covered']:.3f})"
        )
    for name, base in result["baselines_heldout"].items():
        print(
            f"  baseline {name:16} BA {base['balanced_accuracy']:.3f}  salad "
            f"{base['salad_called_covered']:.3f}  negated {base['negated_called_covered']:.3f}  "
            f"paraphrase {base['paraphrase_found']:.3f}  (threshold {base['threshold']}, "
            "best on the tune part)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
