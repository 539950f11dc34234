"""Learning check figures: a tiny model before and after real CPU SFT steps, on held-out samples.

Needs the [train] extra.  Usage: python benchmarks/learning_check.py [--steps N] [--lr LR] [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from envsim.training.learning_check import LearningCheckSettings, run_learning_check


def main() -> None:
    """Run the check and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    defaults = LearningCheckSettings()
    parser.add_argument("--steps", type=int, default=defaults.steps)
    parser.add_argument("--lr", type=float, default=defaults.learning_rate)
    parser.add_argument("--hidden-size", type=int, default=defaults.hidden_size)
    parser.add_argument("--work", type=Path, default=None, help="Keep the files here (default: a temp dir).")
    args = parser.parse_args()
    settings = LearningCheckSettings(steps=args.steps, learning_rate=args.lr, hidden_size=args.hidden_size)
    with tempfile.TemporaryDirectory() as tmp:
        figures = run_learning_check(args.work or Path(tmp), settings)
    for phase in ("before", "after"):
        f = figures[phase]
        print(f"{phase:6s} parse-valid {f['parse_valid']:.1%}  FM {f['fm']:.1%}  CM {f['cm']:.1%}  "
              f"CM no-change {f['cm_by_stratum'].get('no_change', 0):.1%}  CM failure {f['cm_by_stratum'].get('failure', 0):.1%}")
    print(f"train samples {figures['train_samples']}, held-out {figures['heldout_samples']} from "
          f"{len(figures['heldout_envs'])} unseen envs, {settings.steps} steps in {figures['train_seconds']} s")
    print(json.dumps(figures["after_answers"][:2], ensure_ascii=False))


if __name__ == "__main__":
    main()
