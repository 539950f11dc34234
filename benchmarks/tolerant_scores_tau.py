"""How much of a τ-bench miss is formatting or float rounding: FM / FM-json / CM / CM-numeric and the failure
classes of a "human arithmetic" simulator on the τ tier of benchmark v2, scored by the real scorer.

The simulator gives the true answer, except that observation JSON strings are re-serialised (sorted keys, no
spaces) and every float is rounded to 2 decimals, as a model writing money amounts would. Exact FM and CM count
these as misses; FM-json and CM-numeric do not, and the failure classes name them ``formatting_only`` /
``float_rounding_only`` (issue 29 item 4).

    ENVSIM_TAU_BENCH=../shared/third_party/tau-bench python benchmarks/tolerant_scores_tau.py
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any


def rounded(value: Any) -> Any:
    """``value`` with every float rounded to 2 decimals."""
    if isinstance(value, float):
        return round(value, 2)
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [rounded(v) for v in value]
    return value


def reformatted(observation: Any) -> Any:
    """An observation as the simulator writes it: JSON strings re-serialised compactly, floats rounded."""
    if isinstance(observation, str):
        try:
            return json.dumps(rounded(json.loads(observation)), sort_keys=True, separators=(",", ":"))
        except ValueError:
            return observation
    return rounded(observation)


def main() -> None:
    """Score the simulator on every τ-tier record and print the figures."""
    from envsim.benchmark import load
    from envsim.evaluation.scoring.parsing import parse_answer
    from envsim.evaluation.scoring.scoring import score_prediction

    counts: Counter[str] = Counter()
    classes: dict[str, Counter[str]] = {"observation": Counter(), "state": Counter()}
    for record in load("v2", "tau"):
        answer = json.dumps({"observation": reformatted(record["observation"]), "patch": rounded(record["patch"])})
        score = score_prediction(record, parse_answer(answer))
        counts["n"] += 1
        for rate in ("fm", "fm_json", "cm", "cm_numeric"):
            counts[rate] += bool(getattr(score, rate))
        for side, name in (score.failure or {}).items():
            if name:
                classes[side][name] += 1
    n = counts["n"]
    names = {"fm": "FM", "fm_json": "FM-json", "cm": "CM", "cm_numeric": "CM-numeric"}
    print(f"τ tier, {n} records: " + ", ".join(f"{names[rate]} {counts[rate]} "
                                                 f"({100 * counts[rate] / n:.1f}%)"
                                                 for rate in ("fm", "fm_json", "cm", "cm_numeric")))
    for side, found in classes.items():
        print(f"{side} failure classes: " + (", ".join(f"{c} {k}" for k, c in found.most_common()) or "none"))


if __name__ == "__main__":
    main()
