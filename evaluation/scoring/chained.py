"""Scoring of chained episodes (benchmark v2 ``chained`` tier): the simulator's own state carried forward.

Each episode is played through the multi-step machinery of the rollout track
(``simulation.simulated.SimulatedEnvironment`` in shadow mode, ``simulation.simulate.run_episode``):
at step ``t`` the simulator sees the state *it* predicted after step ``t-1`` and the episode's
fixed call ``t``; the real environment is stepped alongside from the same initial state. A step
scores FM (observation equals the true one) and CM (the tracked state equals the true state after
the step; once diverged, an episode stays diverged unless the simulator happens to repair it, which
still counts as diverged for ``CM@k``).

One attempt per step (temperature-0 retries would only hide errors): an unparseable answer or a
patch that does not apply is a scored failure of the step (the state is left unchanged and the
observation is an error), exactly as a simulated environment would behave in a training loop.
Requests that fail for infrastructure reasons (timeouts, 429/5xx after retries) make the episode an
infrastructure failure, kept apart and retried by a re-run.

Reported: ``cm_at_k`` (share of episodes with at least ``k`` calls whose tracked state is still
exact after call ``k``), ``cm_at_k_changed`` (the same over the episodes whose first ``k`` calls
changed the true state at least once: a "no change" answer cannot score there), step FM/CM, ``episode_cm`` (exact to the end), mean steps before
divergence (absolute and as a fraction of the episode), per episode length, with bootstrap 95% CIs.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Callable, Sequence

from envsim.evaluation.scoring.failure_classes import FailureClassCounter, counter_fields
from envsim.evaluation.scoring.failure_classes import markdown as failure_markdown
from envsim.evaluation.endpoints.providers import Generation, Provider
from envsim.evaluation.reporting.report import bootstrap_ci, reason_counts
from envsim.evaluation.running.runner import RetryPolicy, open_results_for_append, read_results
from envsim.jsonsafe import dumps_line
from envsim.records import Action

INFRA_PREFIX = "request failed"
#: What a chained step row keeps besides its scores, for failure classes and ``envsim view``.
STEP_DETAIL = ("fm_json", "cm_numeric", "failure", "action", "observation", "patch", "true_observation", "true_patch")


class ScriptedAgent:
    """Plays an episode's fixed calls, one per step; stops early when the simulated environment ``env``
    (if given) could not reach its simulator on the last step (the episode is then an infrastructure failure)."""

    def __init__(self, actions: Sequence[dict[str, Any]], env: Any = None) -> None:
        self.actions = [Action.from_json(a) for a in actions]
        self.index = 0
        self.env = env

    async def next_action(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                          state: dict[str, Any]) -> Action | None:
        """The next fixed call, or ``None`` after the last (or after an unreachable simulator)."""
        history = getattr(self.env, "history", None)
        if history and (history[-1].reason or "").startswith(INFRA_PREFIX):
            return None
        if self.index >= len(self.actions):
            return None
        self.index += 1
        return self.actions[self.index - 1]


class RetryingProvider:
    """A provider whose transient failures (as its ``should_retry`` says) are retried with backoff."""

    def __init__(self, inner: Provider, policy: RetryPolicy) -> None:
        self.inner = inner
        self.policy = policy
        self.name = getattr(inner, "name", "model")

    async def generate(self, messages: list[dict[str, str]], record: dict[str, Any]) -> Generation:
        """``inner.generate`` with the evaluator's timeout and retry discipline."""
        attempt = 0
        while True:
            attempt += 1
            try:
                return await asyncio.wait_for(self.inner.generate(messages, record), self.policy.timeout)
            except Exception as exc:  # noqa: BLE001 - classified like the single-step runner does
                transient = isinstance(exc, asyncio.TimeoutError) or self.inner.should_retry(exc)
                if not transient or attempt > self.policy.max_retries:
                    raise
                await asyncio.sleep(self.policy.delay(attempt))

    def should_retry(self, exc: BaseException) -> bool:
        """Retries happen inside ``generate``; the caller never retries."""
        return False

    async def aclose(self) -> None:
        """Close the inner provider."""
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()


async def play_episode(episode: dict[str, Any], simulator: Provider, *, prompt_mode: str = "mdp",
                       prompt_version: str = "2", request_timeout: float = 600.0) -> dict[str, Any]:
    """Play one chained episode with ``simulator``; returns its result row (see module docstring)."""
    from envsim.envs.registry import get_env
    from envsim.simulation.simulate import run_episode
    from envsim.simulation.simulated import EnvSpec, SimulatedEnvironment

    base = {"id": episode["id"], "env": episode["env"], "length": episode["length"]}
    try:
        spec = EnvSpec.from_class(get_env(episode["env"]))
    except Exception as exc:  # noqa: BLE001 - an unknown environment is reported, never raised
        return {**base, "status": "infra_failure", "reason": f"environment: {type(exc).__name__}: {exc}"}
    initial = episode["state"]
    spec.initial_state = lambda _seed: initial  # never changed in place (SimulatedEnvironment.start)
    spec.code.update({s["tool"]: s["code"] for s in episode["steps"]})
    env = SimulatedEnvironment(spec, simulator, prompt_mode=prompt_mode, max_attempts=1, shadow=True,
                               request_timeout=request_timeout, prompt_version=prompt_version)
    played = await run_episode(env, ScriptedAgent([s["action"] for s in episode["steps"]], env), 0, episode["length"])
    steps = played["steps"]
    infra = next((s["reason"] for s in steps if (s.get("reason") or "").startswith(INFRA_PREFIX)), None)
    if infra is not None:
        return {**base, "status": "infra_failure", "reason": infra}
    first = played["first_divergence"]
    return {**base, "status": "scored", "first_divergence": first,
            "steps_before_divergence": episode["length"] if first is None else first,
            "steps": [{"index": s["index"], "fm": s["fm"], "cm": s["cm"], "fallback": s["fallback"],
                       "reason": s["reason"], "true_delta_size": s["true_delta_size"],
                       "stratum": episode["steps"][s["index"]]["stratum"], "prompt_tokens": s["prompt_tokens"],
                       "completion_tokens": s["completion_tokens"], "latency_s": s["latency_s"],
                       **{k: s.get(k) for k in STEP_DETAIL}} for s in steps]}



async def run_chained(episodes: Sequence[dict[str, Any]], provider: Provider, run_dir: Path, *,
                      prompt_mode: str = "mdp", prompt_version: str = "2", concurrency: int = 8,
                      policy: RetryPolicy = RetryPolicy(),
                      on_episode: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Play (or resume) every episode; ``results.jsonl`` gets one line per finished episode, and
    ``summary.json`` / ``report.md`` the aggregate. Returns the summary."""
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / "results.jsonl"
    done = read_results(path)
    todo = [e for e in episodes if done.get(e["id"], {}).get("status") != "scored"]
    simulator = RetryingProvider(provider, policy)
    semaphore = asyncio.Semaphore(max(1, concurrency))
    with open_results_for_append(path) as sink:

        async def one(episode: dict[str, Any]) -> None:
            async with semaphore:
                row = await play_episode(episode, simulator, prompt_mode=prompt_mode, prompt_version=prompt_version,
                                         request_timeout=policy.timeout * (policy.max_retries + 2))
            sink.write(dumps_line(row) + "\n")
            sink.flush()
            done[row["id"]] = row
            if on_episode is not None:
                on_episode(row)

        try:
            await asyncio.gather(*(one(e) for e in todo))
        finally:
            await simulator.aclose()
    rows = [done[e["id"]] for e in episodes if e["id"] in done]
    summary = chained_summary(rows, model=getattr(provider, "name", "model"), prompt_mode=prompt_mode,
                              prompt_version=prompt_version)
    from envsim.evaluation.reporting.report import write_markdown
    from envsim.safe_files import write_json

    write_json(run_dir / "summary.json", summary)  # renamed into place, never written through a planted link
    write_markdown(run_dir / "report.md", chained_markdown(summary))
    return summary


def _exact_through(row: dict[str, Any], k: int) -> float:
    """1.0 when the episode's tracked state was still exact after call ``k``."""
    return 1.0 if row["first_divergence"] is None or row["first_divergence"] >= k else 0.0


def _rate(values: list[float]) -> dict[str, Any]:
    return {"n": len(values), "rate": round(sum(values) / len(values), 4) if values else 0.0,
            "ci": bootstrap_ci(values)}


def chained_summary(rows: Sequence[dict[str, Any]], **header: Any) -> dict[str, Any]:
    """Aggregate episode rows: CM@k, step FM/CM, episode CM and steps before divergence, per length."""
    scored = [r for r in rows if r.get("status") == "scored"]
    horizon = max((r["length"] for r in scored), default=0)
    cm_at_k, cm_at_k_changed = {}, {}
    for k in range(1, horizon + 1):
        eligible = [r for r in scored if r["length"] >= k]
        cm_at_k[str(k)] = _rate([_exact_through(r, k) for r in eligible])
        cm_at_k_changed[str(k)] = _rate([_exact_through(r, k) for r in eligible
                                         if any((s.get("true_delta_size") or 0) > 0 for s in r["steps"][:k])])
    steps = [s for r in scored for s in r["steps"]]
    by_length: dict[str, Any] = {}
    for length in sorted({r["length"] for r in scored}):
        group = [r for r in scored if r["length"] == length]
        by_length[str(length)] = {
            "episode_cm": _rate([1.0 if r["first_divergence"] is None else 0.0 for r in group]),
            "mean_steps_before_divergence": round(sum(r["steps_before_divergence"] for r in group) / len(group), 3)}
    before = [r["steps_before_divergence"] for r in scored]
    return {
        **header, "tier": "chained", "episodes": len(rows), "scored": len(scored),
        "infra_failures": len(rows) - len(scored), "infra_failure_reasons": reason_counts(
            r for r in rows if r.get("status") != "scored"), "steps": len(steps),
        "step_fm": _rate([1.0 if s["fm"] else 0.0 for s in steps]),
        "step_cm": _rate([1.0 if s["cm"] else 0.0 for s in steps]),
        "episode_cm": _rate([1.0 if r["first_divergence"] is None else 0.0 for r in scored]),
        "cm_at_k": cm_at_k,
        "cm_at_k_changed": cm_at_k_changed,
        "mean_steps_before_divergence": round(sum(before) / len(before), 3) if before else 0.0,
        "mean_fraction_before_divergence": round(sum(r["steps_before_divergence"] / r["length"] for r in scored)
                                                 / len(scored), 4) if scored else 0.0,
        "invalid_answers": sum(bool(s["fallback"]) for s in steps),
        "by_length": by_length,
        **step_tolerant_fields(steps),
        **failure_fields(((s, {"stratum": s.get("stratum"), "env": r.get("env"),
                               "tool": f"{r.get('env')}.{(s.get('action') or {}).get('name')}"})
                          for r in scored for s in r["steps"])),
    }


def step_tolerant_fields(steps: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``step_fm_json`` / ``step_cm_numeric`` over steps that carry them (none for rows written before them; a
    step without them counts with its exact verdict)."""
    if not any("fm_json" in s for s in steps):
        return {}
    return {f"step_{rate}": _rate([1.0 if s.get(rate, s.get(exact)) else 0.0 for s in steps])
            for rate, exact in (("fm_json", "fm"), ("cm_numeric", "cm"))}


def failure_fields(steps: Any) -> dict[str, Any]:
    """Failure-class fields over ``(step, groups)`` pairs (``evaluation.scoring.failure_classes``)."""
    counter = FailureClassCounter()
    for step, groups in steps:
        counter.add(step, groups)
    return counter_fields(counter)


def chained_markdown(summary: dict[str, Any]) -> str:
    """The chained summary as Markdown (an empty group reads "–", never 0.0)."""
    def pct(group: dict[str, Any]) -> str:
        if not group["n"]:
            return "–"
        lo, hi = group["ci"]
        return f"{100 * group['rate']:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"

    lines = [f"# Chained tier: {summary.get('model', 'model')}", "",
             f"{summary['scored']} episodes scored ({summary['steps']} calls), {summary['infra_failures']} "
             f"infrastructure failures; prompt `{summary.get('prompt_mode')}` v{summary.get('prompt_version')}.", ""]
    if summary["infra_failures"]:
        lines += [("**No episode was scored.** " if not summary["scored"] else "")
                  + f"Infrastructure failures ({summary['infra_failures']} of {summary['episodes']} episodes; "
                  "a re-run of the same command retries them):", ""]
        lines += [f"- {count}× {reason}" for reason, count in summary.get("infra_failure_reasons", {}).items()]
        lines.append("")
    fraction = (f"{100 * summary['mean_fraction_before_divergence']:.1f}% of the episode" if summary["scored"]
                else "–")
    lines += [f"- episode CM (exact to the end): {pct(summary['episode_cm'])}",
              f"- step FM: {pct(summary['step_fm'])}; step CM (state exact after the step): {pct(summary['step_cm'])}",
              f"- mean steps before divergence: {summary['mean_steps_before_divergence'] if summary['scored'] else '–'}"
              f" ({fraction})",
              f"- invalid answers (unparseable or unappliable): {summary['invalid_answers']}", ""]
    if "step_fm_json" in summary:
        lines[-1:-1] = [f"- tolerant, beside the exact figures: step FM-json {pct(summary['step_fm_json'])}; "
                        f"step CM-numeric {pct(summary['step_cm_numeric'])}"]
    lines += ["CM@k over all episodes with at least k calls, and over those whose first k calls changed the "
              "true state at least once (a model that predicts no change scores 0 there).", "",
              "| k | episodes with ≥k calls | CM@k % [95% CI] | of them, state changed by call k | CM@k on them % |",
              "|---:|---:|---:|---:|---:|"]
    changed = summary.get("cm_at_k_changed", {})
    empty = {"n": 0, "rate": 0.0, "ci": [0.0, 0.0]}
    lines += [f"| {k} | {g['n']} | {pct(g)} | {changed.get(k, empty)['n']} | {pct(changed.get(k, empty))} |"
              for k, g in summary["cm_at_k"].items()]
    lines += ["", "| length | episodes | episode CM % | mean steps before divergence |", "|---:|---:|---:|---:|"]
    lines += [f"| {k} | {g['episode_cm']['n']} | {pct(g['episode_cm'])} | {g['mean_steps_before_divergence']} |"
              for k, g in summary["by_length"].items()]
    if summary.get("steps") and "failure_classes" in summary:
        lines += ["", failure_markdown(summary, ("stratum", "env")).replace("failed sample", "failed step")]
    return "\n".join(lines) + "\n"
