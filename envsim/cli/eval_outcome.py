"""How ``envsim eval`` ends: the ``--min-scored`` option type and exit code 3.

Exit codes of ``envsim eval``: 0 the run finished and scored at least ``--min-scored`` samples (a tiered
benchmark without ``--tier``: in every tier whose requirements are met here; the tiers left out are named);
1 an error stopped it before the run (bad option, missing benchmark, an extra missing for a tier asked for
by name or with ``--tier all``, failed preflight);
2 a usage error (click); 3 the run finished but scored fewer samples than ``--min-scored``
(default: 1, so a run that scored nothing never exits 0; ``--min-scored 0`` turns the check off);
130 interrupted (Ctrl-C, SIGINT): the results written so far are kept and the same command resumes.
Results already written are kept either way.
"""

from __future__ import annotations

from typing import Any

import click

from envsim.evaluation.reporting.console import TOP_REASONS, infra_lines, top_reasons  # noqa: F401 - re-exported
from envsim.evaluation.running.eval_options import MinScored
from envsim.evaluation.running.eval_summary import EvalSummary

EXIT_TOO_FEW_SCORED = 3


class MinScoredType(click.ParamType):
    """``N`` (a count) or ``P%`` (a percentage of the run's samples)."""

    name = "N|P%"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> MinScored:
        """Parse ``"1"``, ``"380"``, ``"95%"``."""
        try:
            return MinScored.parse(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


def enforce_min_scored(scored: int, total: int, threshold: MinScored, unit: str = "samples") -> None:
    """Exit with ``EXIT_TOO_FEW_SCORED`` when fewer than the threshold were scored (after saying so)."""
    need = threshold.required(total)
    if scored >= need:
        return
    click.echo(f"error: {scored} of {total} {unit} scored, fewer than --min-scored {threshold} "
               f"(= {need}); exit code {EXIT_TOO_FEW_SCORED}", err=True)
    raise click.exceptions.Exit(EXIT_TOO_FEW_SCORED)


def exit_if_too_few(summary: EvalSummary, threshold: MinScored) -> None:
    """Exit 3 when ``summary`` (or any of its tiers, each named on stderr) scored fewer than the threshold."""
    if summary.kind != "tiers":
        enforce_min_scored(summary.scored, summary.total, threshold, unit=summary.unit)
        return
    short = [(name, s) for name, s in summary.tiers.items() if not s.enough_scored]
    for name, s in short:
        click.echo(f"tier {name}: {s.scored} of {s.total} scored", err=True)
    if short:
        s = short[0][1]
        enforce_min_scored(s.scored, s.total, threshold, unit=s.unit)
