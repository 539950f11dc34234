"""Roll out agents in simulated environments; write ShareGPT trajectories, a drift report and costs."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Sequence

from envsim.records import Action
from envsim.simulation.drift import drift_markdown, drift_report, is_scored, plot_drift
from envsim.simulation.simulated import SimulatedEnvironment

AGENT_SYSTEM = ("You are an agent operating a tool environment. Call one tool at a time; the results of your "
                "calls are returned to you. Stop calling tools when the task is done.")


def _task_text(env_id: str) -> str:
    return f"Work with the {env_id} environment: inspect it and make the changes a typical user would ask for."


async def run_episode(env: SimulatedEnvironment, agent: Any, seed: int, steps: int,
                      task: str | None = None) -> dict[str, Any]:
    """One episode: ``steps`` agent calls (or fewer when the agent stops) in ``env``."""
    env.reset(seed)
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
        "conversations": conversation,
        "tools": json.dumps(tools, ensure_ascii=False),
        "final_state": env.state,
        "first_divergence": env.first_divergence,
        "steps": [asdict(s) for s in env.history],
    }


def write_outputs(episodes: Sequence[dict[str, Any]], out: Path, *, horizon: int, shadow: bool, stats: dict[str, Any],
                  title: str) -> dict[str, Any]:
    """Write ``trajectories.jsonl`` (ShareGPT with tool calls), ``steps.jsonl``, costs and, in shadow mode,
    ``drift.json`` / ``drift.md`` / ``drift.png``. Returns the drift report (or ``{}``). Episodes that are
    not scored (infrastructure failures) are left out of the trajectories and steps, and counted apart."""
    out.mkdir(parents=True, exist_ok=True)
    scored = [e for e in episodes if is_scored(e)]
    with (out / "trajectories.jsonl").open("w", encoding="utf-8") as handle:
        for e in scored:
            handle.write(json.dumps({"conversations": e["conversations"], "tools": e["tools"], "env": e["env"],
                                     "seed": e["seed"]}, ensure_ascii=False) + "\n")
    with (out / "steps.jsonl").open("w", encoding="utf-8") as handle:
        for e in scored:
            for step in e["steps"]:
                handle.write(json.dumps({"env": e["env"], "seed": e["seed"], **step}, ensure_ascii=False) + "\n")
    (out / "stats.json").write_text(json.dumps(stats, indent=2) + "\n")
    if not shadow:
        return {}
    report = drift_report(episodes, horizon)
    (out / "drift.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / "drift.md").write_text(drift_markdown(report, title))
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


TaskCheck = Callable[[dict[str, Any]], bool]
