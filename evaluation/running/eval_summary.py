"""What ``envsim.evaluate`` returns: the figures of ``summary.json`` as typed objects.

``EvalSummary.data`` is the ``summary.json`` dictionary itself (byte-identical to the file when dumped the
way the report writes it); the typed fields are read from it. A tiered run (benchmark v2) returns one
summary per tier in ``tiers``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

RATES = ("fm", "cm", "cm_lenient", "cm_original", "fm_json", "cm_numeric")


@dataclass(frozen=True)
class GroupRates:
    """One group's figures (overall, a stratum, a |Δ|): rates in [0, 1] with 95% bootstrap intervals."""

    n: int
    fm: float | None = None
    cm: float | None = None
    cm_lenient: float | None = None
    cm_original: float | None = None
    fm_json: float | None = None      # tolerant rates beside FM / CM (None: a summary written before them)
    cm_numeric: float | None = None
    ci: Mapping[str, tuple[float, float]] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, group: Mapping[str, Any]) -> "GroupRates":
        """A group of ``summary.json``; rates it lacks (an empty group, an older file) are ``None``."""
        return cls(n=int(group.get("n", 0)), **{rate: group.get(rate) for rate in RATES},
                   ci={rate: tuple(bounds) for rate, bounds in (group.get("ci") or {}).items()})


@dataclass(frozen=True)
class EvalSummary:
    """The outcome of one evaluation (one split or track), or of every tier (``tiers``) of a tiered benchmark.

    ``scored`` of ``total`` samples (episodes on the rollout and chained tracks) were scored; ``required``
    is what ``min_scored`` asked for. ``overall`` / ``by_stratum`` / ``by_delta`` are empty for the
    rollout and chained tracks, whose own figures are in ``data``."""

    kind: str                       # "single", "rollout", "chained" or "tiers"
    run_dir: Path
    model: str
    benchmark: str
    scored: int
    total: int
    required: int
    infra_failures: int
    data: dict[str, Any]
    overall: GroupRates | None = None
    by_stratum: dict[str, GroupRates] = field(default_factory=dict)
    by_delta: dict[str, GroupRates] = field(default_factory=dict)
    tiers: dict[str, "EvalSummary"] = field(default_factory=dict)
    not_run: dict[str, str] = field(default_factory=dict)  # tiered run: tiers left out -> what they need

    @property
    def enough_scored(self) -> bool:
        """Whether at least ``required`` were scored (for a tiered run: in every tier)."""
        if self.kind == "tiers":
            return all(t.enough_scored for t in self.tiers.values())
        return self.scored >= self.required

    @property
    def unit(self) -> str:
        """What ``scored`` counts: ``samples`` or ``episodes``."""
        return "episodes" if self.kind in ("rollout", "chained") else "samples"

    @classmethod
    def from_summary(cls, summary: dict[str, Any], run_dir: Path, required_for: Any, *, model: str = "",
                     benchmark: str = "") -> "EvalSummary":
        """Typed view of a ``summary.json`` dictionary (single-step, chained tier or rollout report);
        ``required_for(total)`` gives the samples the run must score; ``model``/``benchmark`` fill in
        what a report does not name."""
        if summary.get("tier") == "chained":
            kind, total = "chained", summary["episodes"]
        elif "cm_at_k" in summary and "overall" not in summary:
            kind = "rollout"
            total = summary.get("scored", summary["episodes"]) + summary.get("infra_failures", 0)
        else:
            kind, total = "single", summary["samples"]
        scored = summary.get("scored", summary.get("episodes", 0))
        groups = {key: {name: GroupRates.from_dict(g) for name, g in summary.get(key, {}).items()}
                  for key in ("by_stratum", "by_delta")}
        return cls(kind=kind, run_dir=Path(run_dir), model=str(summary.get("model", model)),
                   benchmark=str(summary.get("benchmark", benchmark)), scored=scored, total=total,
                   required=required_for(total), infra_failures=summary.get("infra_failures", 0), data=summary,
                   overall=GroupRates.from_dict(summary["overall"]) if "overall" in summary else None, **groups)
