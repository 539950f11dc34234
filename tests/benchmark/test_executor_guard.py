"""Slow tier: the executor baseline over every shipped track misses only what the data cards list.

A miss the card does not list is a new prompt-sufficiency defect (a prompt that leaves out code, a name or a
state path the answer needs): fix the prompt or the record, or list the miss with why it is acceptable
(``benchmark/<version>/executor_misses.json``, see docs/executor.md)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

import envsim
from envsim.evaluation.baselines.executor_misses import accepted_misses, accepted_path, unlisted

TRACKS = [  # (benchmark, track as the card names it, tier, prompt mode)
    ("v1", "test", None, "mdp"),
    ("v2", "core", "core", "mdp"),
    ("v2", "extreme", "extreme", "mdp"),
    ("v2", "long_state", "long_state", "mdp"),
    ("v2", "chained", "chained", "mdp"),
    ("v2", "bfcl", "bfcl", "mdp"),
    ("v2", "tau", "tau", "mdp-view"),
    ("v1.1", "test", None, "mdp"),
    ("v2.1", "core", "core", "mdp"),
    ("v2.1", "extreme", "extreme", "mdp"),
    ("v2.1", "long_state", "long_state", "mdp"),
    ("v2.1", "chained", "chained", "mdp"),
    ("v2.1", "bfcl", "bfcl", "mdp"),
    ("v2.1", "tau", "tau", "mdp-view"),
]


def _available(track: str) -> str | None:
    if track == "bfcl" and importlib.util.find_spec("bfcl_eval") is None:
        return "bfcl-eval is not installed"
    if track == "tau":
        from envsim.evaluation.running.tiers import tau_bench_missing

        return tau_bench_missing()
    return None


@pytest.mark.slow
@pytest.mark.parametrize("version,track,tier,mode", TRACKS, ids=[f"{b}-{t}" for b, t, _, _ in TRACKS])
def test_every_executor_miss_is_listed_on_the_data_card(version: str, track: str, tier: str | None, mode: str,
                                                       tmp_path: Path) -> None:
    missing = _available(track)
    if missing:
        pytest.skip(missing)
    summary = envsim.evaluate("executor", benchmark=version, tier=tier, prompt_mode=mode, concurrency=2,
                              run_dir=tmp_path / "run")
    run_dir = summary.tiers[tier].run_dir if tier else summary.run_dir
    assert summary.infra_failures == 0
    misses = json.loads((run_dir / "executor_misses.json").read_text())["misses"]
    new = unlisted(misses, accepted_misses(version, track))
    assert not new, (f"{len(new)} executor misses on {version}/{track} are not listed in {accepted_path(version)}: "
                     + "; ".join(f"{m['id']} {m['env']}.{m['tool']}: {m['cause']} ({m['detail']})" for m in new[:10]))
    if "." in version:  # a point release (v1.1, v2.1): every sample follows from its prompt
        assert_floor(version, track, run_dir)



#: Point-release tracks still below the executor floor, each with its reason (issue 44). Anything else on a
#: point release must reach it.
BELOW_FLOOR: dict[tuple[str, str], str] = {}
FLOOR = 0.995


def assert_floor(version: str, track: str, run_dir: Path) -> None:
    """A point release's track reaches the executor floor (FM and CM >= 99.5 %), unless BELOW_FLOOR names it."""
    figures = json.loads((run_dir / "summary.json").read_text())
    fm, cm = ((figures["step_fm"]["rate"], figures["step_cm"]["rate"]) if "step_fm" in figures
              else (figures["overall"]["fm"], figures["overall"]["cm"]))
    if (version, track) in BELOW_FLOOR:
        assert fm < FLOOR, f"{version}/{track} reached the floor: take it out of BELOW_FLOOR"
        return
    assert fm >= FLOOR and cm >= FLOOR, f"{version}/{track}: executor FM {fm:.4f}, CM {cm:.4f} < {FLOOR}"


@pytest.mark.slow
def test_v2_1_core_under_state_views_reaches_the_floor(tmp_path: Path) -> None:
    """One view miss is left there (the view analysis does not follow ``plans[...]["print"]`` through a
    generator over a local list; benchmark/v2.1/README.md): 399 of 400."""
    summary = envsim.evaluate("executor", benchmark="v2.1", tier="core", prompt_mode="mdp-view", concurrency=2,
                              run_dir=tmp_path / "run")
    assert summary.infra_failures == 0
    assert_floor("v2.1", "core", summary.tiers["core"].run_dir)
