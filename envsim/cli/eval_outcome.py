"""How ``envsim eval`` ends: the ``--min-scored`` threshold, its exit code and the console lines that
say why samples were not scored.

Exit codes of ``envsim eval``: 0 the run finished and scored at least ``--min-scored`` samples;
1 an error stopped it before the run (bad option, missing benchmark, failed preflight);
2 a usage error (click); 3 the run finished but scored fewer samples than ``--min-scored``
(default: 1, so a run that scored nothing never exits 0; ``--min-scored 0`` turns the check off).
Results already written are kept either way.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Mapping

import click

EXIT_TOO_FEW_SCORED = 3
TOP_REASONS = 3


@dataclass(frozen=True)
class MinScored:
    """At least ``count`` samples, or at least ``percent`` % of the run's samples, must be scored."""

    count: int | None = None
    percent: float | None = None

    def required(self, total: int) -> int:
        """Samples that must be scored out of ``total`` (never more than ``total``)."""
        if self.percent is not None:
            return min(total, math.ceil(total * self.percent / 100 - 1e-9))
        return min(total, self.count or 0)

    def __str__(self) -> str:
        return f"{self.percent:g}%" if self.percent is not None else str(self.count)


class MinScoredType(click.ParamType):
    """``N`` (a count) or ``P%`` (a percentage of the run's samples)."""

    name = "N|P%"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> MinScored:
        """Parse ``"1"``, ``"380"``, ``"95%"``."""
        if isinstance(value, MinScored):
            return value
        text = str(value).strip()
        match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*%", text)
        if match and float(match.group(1)) <= 100:
            return MinScored(percent=float(match.group(1)))
        if text.isdigit():
            return MinScored(count=int(text))
        self.fail(f"{value!r} is not a count (e.g. 380) or a percentage up to 100% (e.g. 95%)", param, ctx)


def top_reasons(reasons: Mapping[str, int] | list[str] | None, limit: int = TOP_REASONS) -> list[str]:
    """The most common failure reasons as ``"N× reason"`` lines (a plain list is shown as given)."""
    if not reasons:
        return []
    if isinstance(reasons, Mapping):
        ranked = sorted(reasons.items(), key=lambda kv: -kv[1])[:limit]
        return [f"{count}× {reason}" for reason, count in ranked]
    return list(reasons)[:limit]


def infra_lines(unscored: int, total: int, reasons: Mapping[str, int] | list[str] | None, unit: str = "samples"
                ) -> list[str]:
    """Console lines for the infrastructure failures of a run (none when there are none)."""
    if not unscored:
        return []
    head = (f"no {unit[:-1]} was scored: all {total} failed before an answer could be scored" if unscored >= total
            else f"{unscored} of {total} {unit} were not scored (infrastructure failures, not counted as wrong)")
    return [head] + [f"  {line}" for line in top_reasons(reasons)] + [
        "  a re-run of the same command retries them; the answers already scored are kept"]


def enforce_min_scored(scored: int, total: int, threshold: MinScored, unit: str = "samples") -> None:
    """Exit with ``EXIT_TOO_FEW_SCORED`` when fewer than the threshold were scored (after saying so)."""
    need = threshold.required(total)
    if scored >= need:
        return
    click.echo(f"error: {scored} of {total} {unit} scored, fewer than --min-scored {threshold} "
               f"(= {need}); exit code {EXIT_TOO_FEW_SCORED}", err=True)
    raise click.exceptions.Exit(EXIT_TOO_FEW_SCORED)
