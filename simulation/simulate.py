"""Roll out agents in simulated environments; write ShareGPT trajectories, a drift report and costs.

A trajectory with a fallback step (the simulator gave no usable answer) is marked (``fallback_steps``)
and written to ``fallback_trajectories.jsonl``, not to the training file ``trajectories.jsonl``, unless
``include_fallbacks`` is set; ``steps.jsonl`` keeps every step either way.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from envsim.envs.base import Environment
from envsim.evaluation.baselines.builtin_names import BUILT_IN_MODELS, unknown_builtin_hint
from envsim.jsonsafe import dumps_line, write_text_atomic
from envsim.safe_files import write_json, write_text
from envsim.records import Action
from envsim.simulation.drift import drift_markdown, drift_report, fallback_counts, is_scored, plot_drift
from envsim.simulation.simulated import EnvSpec, SimulatedEnvironment

AGENT_SYSTEM = ("You are an agent operating a tool environment. Call one tool at a time; the results of your "
                "calls are returned to you. Stop calling tools when the task is done.")


def _task_text(env_id: str) -> str:
    return f"Work with the {env_id} environment: inspect it and make the changes a typical user would ask for."


async def run_episode(env: SimulatedEnvironment, agent: Any, seed: int, steps: int,
                      task: str | None = None) -> dict[str, Any]:
    """One episode: ``steps`` agent calls (or fewer when the agent stops) in ``env``."""
    env.start(seed)
    tools = env.spec.tools
    task = task or _task_text(env.spec.env_id)
    messages: list[dict[str, Any]] = [{"role": "system", "content": AGENT_SYSTEM}, {"role": "user", "content": task}]
    conversation = [{"from": "system", "value": AGENT_SYSTEM}, {"from": "human", "value": task}]
    for index in range(steps):
        action: Action | None = await agent.next_action(messages, tools, env.state)
        if action is None:
            break
        observation = await env.astep(action)
        call = {"name": action.name, "arguments": action.arguments}
        conversation += [{"from": "function_call", "value": json.dumps(call, ensure_ascii=False)},
                         {"from": "observation", "value": json.dumps(observation, ensure_ascii=False)}]
        call_id = f"call_{index}"
        messages += [{"role": "assistant", "content": None, "tool_calls": [
                         {"id": call_id, "type": "function",
                          "function": {"name": action.name, "arguments": json.dumps(action.arguments)}}]},
                     {"role": "tool", "tool_call_id": call_id, "content": json.dumps(observation)}]
    return {
        "env": env.spec.env_id, "seed": seed,
        "fallback_steps": sum(s.fallback for s in env.history),
        "conversations": conversation,
        "tools": json.dumps(tools, ensure_ascii=False),
        "final_state": env.state,
        "first_divergence": env.first_divergence,
        "steps": [asdict(s) for s in env.history],
    }


def _fallbacks_in(episode: dict[str, Any]) -> int:
    """Fallback steps of an episode (rows written before the count existed: counted from its steps)."""
    return episode.get("fallback_steps", sum(bool(s.get("fallback")) for s in episode["steps"]))


def _live_figures(episodes: Sequence[dict[str, Any]], shadow: bool) -> dict[str, Any]:
    """What the progress display shows after each episode: steps and fallback steps so far and, in shadow
    mode, how many episodes diverged from the real environment."""
    figures: dict[str, Any] = {"steps": sum(len(e["steps"]) for e in episodes),
                               "fallback": sum(_fallbacks_in(e) for e in episodes)}
    if shadow:
        figures["diverged"] = sum(e["first_divergence"] is not None for e in episodes)
    return figures


def _write_trajectories(path: Path, episodes: Sequence[dict[str, Any]]) -> None:
    """One ShareGPT row per episode, through the safe writer (a lone surrogate is escaped, never a crash)."""
    write_text_atomic(path, (dumps_line({"conversations": e["conversations"], "tools": e["tools"], "env": e["env"],
                                         "seed": e["seed"], "fallback_steps": _fallbacks_in(e)}) for e in episodes))


def write_outputs(episodes: Sequence[dict[str, Any]], out: Path, *, horizon: int, shadow: bool, stats: dict[str, Any],
                  title: str, include_fallbacks: bool = False) -> dict[str, Any]:
    """Write ``trajectories.jsonl`` (ShareGPT with tool calls; each row marked with its ``fallback_steps``),
    ``steps.jsonl``, costs and, in shadow mode, ``drift.json`` / ``drift.md`` / ``drift.png``. Returns the
    drift report (or ``{}``). Episodes that are not scored (infrastructure failures) are left out of the
    trajectories and steps, and counted apart. Episodes with a fallback step go to
    ``fallback_trajectories.jsonl`` instead of the training file unless ``include_fallbacks``."""
    out.mkdir(parents=True, exist_ok=True)
    scored = [e for e in episodes if is_scored(e)]
    clean = [e for e in scored if include_fallbacks or not _fallbacks_in(e)]
    _write_trajectories(out / "trajectories.jsonl", clean)
    held_out = [e for e in scored if not include_fallbacks and _fallbacks_in(e)]
    if held_out or (out / "fallback_trajectories.jsonl").exists():
        _write_trajectories(out / "fallback_trajectories.jsonl", held_out)
    write_text_atomic(out / "steps.jsonl",
                      (dumps_line({"env": e["env"], "seed": e["seed"], **step}) for e in scored for step in e["steps"]))
    write_json(out / "stats.json", stats)  # every file renamed into place: never written through a planted link
    if not shadow:
        return {}
    report = drift_report(episodes, horizon)
    write_json(out / "drift.json", report)
    # a fallback reason may quote the simulator's answer (a lone surrogate in a patch path, a terminal escape):
    # escaped, never a crash, never acted on by a terminal showing the file
    from envsim.control_chars import escape_lines

    write_text(out / "drift.md", escape_lines(drift_markdown(report, title)), errors="backslashreplace")
    plot_drift(report, out / "drift.png", title)
    return report


def cost_summary(envs: Sequence[SimulatedEnvironment], price_in: float, price_out: float) -> dict[str, Any]:
    """Tokens, steps per second and cost over a run's simulated environments."""
    steps = sum(e.stats.steps for e in envs)
    seconds = sum(e.stats.seconds for e in envs)
    tokens_in = sum(e.stats.prompt_tokens for e in envs)
    tokens_out = sum(e.stats.completion_tokens for e in envs)
    return {
        "steps": steps, "fallback_steps": sum(e.stats.fallback_steps for e in envs),
        "retries": sum(e.stats.retries for e in envs),
        "prompt_tokens": tokens_in, "completion_tokens": tokens_out,
        "prompt_tokens_per_step": round(tokens_in / steps, 1) if steps else 0.0,
        "completion_tokens_per_step": round(tokens_out / steps, 1) if steps else 0.0,
        "simulator_seconds": round(seconds, 3), "steps_per_second": round(steps / seconds, 2) if seconds else None,
        "price_in_per_mtok": price_in, "price_out_per_mtok": price_out,
        "cost": round(sum(e.stats.cost(price_in, price_out) for e in envs), 6),
    }


BUILT_IN_SIMULATORS = BUILT_IN_MODELS


def unknown_simulator_hint(simulator: str, urls: Sequence[str]) -> str | None:
    """An error message when ``simulator`` without any endpoint URL looks like a misspelt built-in
    (``nul``, ``Oracle``); ``None`` otherwise (the preflight judges every other name)."""
    return unknown_builtin_hint(simulator, urls, "simulator")


@dataclass
class SimulationRun:
    """What ``simulate`` produced: the episodes, costs (``stats``), fallback figures and the drift report
    (``{}`` without shadow mode)."""

    episodes: list[dict[str, Any]]
    stats: dict[str, Any]
    fallbacks: dict[str, Any]
    drift: dict[str, Any] = field(default_factory=dict)

    def fallback_rate_exceeds(self, max_rate: float) -> bool:
        """Whether the share of fallback steps is above ``max_rate`` (0 = any fallback step is too many)."""
        return self.fallbacks["fallback_rate"] > max_rate


async def simulate(env_classes: Sequence[type[Environment]], provider: Any, out: str | Path, *, episodes: int,
                   steps: int, seed: int = 0, agent: str = "explorer", agent_base_url: str | None = None,
                   shadow: bool = True, prompt_mode: str = "mdp", prompt_version: str = "2", max_attempts: int = 3,
                   price_in: float = 0.0, price_out: float = 0.0, include_fallbacks: bool = False,
                   title: str | None = None, request_timeout: float = 120.0) -> SimulationRun:
    """Roll ``episodes`` episodes of ``steps`` calls per environment class in environments simulated by
    ``provider``, write the outputs under ``out`` (see ``write_outputs``) and return them. The provider is
    closed at the end. ``request_timeout``: seconds one simulator request may take (``--timeout``)."""
    from envsim.progress import progress
    from envsim.simulation.agents import LLMAgent, explorer_agent

    out = Path(out)
    results, envs = [], []
    bar = progress(total=len(env_classes) * episodes, desc=f"simulate {getattr(provider, 'name', 'simulator')}",
                   unit="episode")
    try:
        for cls in env_classes:
            for i in range(episodes):
                env = SimulatedEnvironment(EnvSpec.from_class(cls), provider, prompt_mode=prompt_mode,
                                           max_attempts=max_attempts, shadow=shadow, prompt_version=prompt_version,
                                           request_timeout=request_timeout)
                envs.append(env)
                policy = explorer_agent(cls, seed + i) if agent == "explorer" else LLMAgent(agent, agent_base_url)
                results.append(await run_episode(env, policy, seed + i, steps))
                bar.set_postfix(**_live_figures(results, shadow))
                bar.update(1)
    finally:
        bar.close()
        close = getattr(provider, "aclose", None)
        if close is not None:
            await close()
    stats = cost_summary(envs, price_in, price_out)
    if hasattr(provider, "endpoint_report"):
        stats["endpoints"] = provider.endpoint_report()
    title = title or f"{getattr(provider, 'name', 'simulator')} on {len(env_classes)} environment(s)"
    drift = write_outputs(results, out, horizon=steps, shadow=shadow, stats=stats, title=title,
                          include_fallbacks=include_fallbacks)
    return SimulationRun(results, stats, fallback_counts(results), drift)


TaskCheck = Callable[[dict[str, Any]], bool]
