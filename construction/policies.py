"""Rollout sources besides the explorer: replaying logged tool calls, and an LLM agent.

* ``replay_log``: label an existing log (JSONL of ``{"env", "state", "actions": [...]}``): the
  actions are executed in order, each on the state the previous one left.
* ``llm_rollout``: an agent model behind any OpenAI-compatible endpoint chooses tool calls (function
  calling) in the real environment; requests use the evaluator's timeout and exponential-backoff
  discipline (``RetryPolicy`` + the provider's ``should_retry``).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from envsim.construction.rollout import rollout
from envsim.envs.base import Environment
from envsim.envs.sandbox import execute
from envsim.envs.registry import get_env
from envsim.records import Action, Transition


class ReplayError(ValueError):
    """A log line that cannot be replayed (names the line and the problem)."""


class _Scripted:
    """A policy that returns logged actions one after another."""

    def __init__(self, actions: list[Any]) -> None:
        self.actions = [Action.from_json(a) for a in actions]
        self.index = 0

    def next_action(self, env_class: type[Environment], state: dict[str, Any]) -> Action:
        action = self.actions[self.index]
        self.index += 1
        return action


@dataclass
class LoggedEpisode:
    """One line of a replay log: the environment, its starting state and the logged calls."""

    line: int
    env_class: type[Environment]
    state: dict[str, Any]
    actions: list[Action]


def _entry(path: Path, number: int, line: str) -> tuple[dict[str, Any], type[Environment], list[Action]]:
    """One log line parsed and checked: the entry, its environment class and its calls (``ReplayError`` if bad)."""
    try:
        entry = json.loads(line)
        if not isinstance(entry, dict):
            raise ValueError(f"expected a JSON object, got {type(entry).__name__}")
        env_class = get_env(entry["env"])
        logged = entry.get("actions", [])
        if not isinstance(logged, list):
            raise ValueError("'actions' must be a list")
        if "state" in entry and not isinstance(entry["state"], dict):
            raise ValueError("'state' must be a JSON object")
        return entry, env_class, [Action.from_json(a) for a in logged]
    except (KeyError, ValueError, TypeError, LookupError, AttributeError) as exc:
        raise ReplayError(f"{path}:{number}: {type(exc).__name__}: {exc}") from None


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                yield number, line


def check_log(path: Path) -> None:
    """Parse and check every line of a replay log (JSON, environment, calls): ``ReplayError`` names a bad line."""
    for number, line in _lines(path):
        _entry(path, number, line)


def read_episode(path: Path, number: int, line: str,
                 initial: dict[tuple[type, int], dict[str, Any]]) -> LoggedEpisode:
    """Log line ``number`` as an episode: its environment, calls and starting state (its ``state``, a foreign class's
    in the load->save form, or ``sample_state(seed)``, made once per class and seed in ``initial``);
    ``ReplayError`` names the line."""
    entry, env_class, actions = _entry(path, number, line)
    try:
        if "state" in entry:
            state = entry["state"]
            if callable(getattr(env_class, "normalise", None)):  # foreign: the load->save form
                state = env_class.normalise(state)
        else:  # sample_state gives the load->save form already; episodes never mutate it
            key = (env_class, int(entry.get("seed", 0)))
            if key not in initial:
                initial[key] = env_class.sample_state(key[1])
            state = initial[key]
    except (KeyError, ValueError, TypeError, LookupError, AttributeError) as exc:
        raise ReplayError(f"{path}:{number}: {type(exc).__name__}: {exc}") from None
    return LoggedEpisode(number, env_class, state, actions)


def read_log(path: Path) -> Iterator[LoggedEpisode]:
    """The episodes of a replay log, one line at a time (a line's state is held while its episode is labelled).
    Every line is parsed and checked first (JSON, environment, calls), so a bad line stops the replay before any
    call runs (``ReplayError`` names it); a starting state the environment refuses is named at its line."""
    check_log(path)
    initial: dict[tuple[type, int], dict[str, Any]] = {}  # sample_state(seed) once per class and seed
    for number, line in _lines(path):
        yield read_episode(path, number, line, initial)


def episode_calls(episode: LoggedEpisode, starts: dict[Any, Any]) -> Iterator[Any]:
    """Label the logged calls of ``episode`` in order (``cow_labelling.LabelledCall``s): the user's own environments
    copy-on-write (``starts``: see ``cow_labelling.start_labeller``), the others by the executor (``record_id``
    left empty)."""
    from envsim.construction.cow_labelling import LabelledCall, label_calls, labels_traced

    env_class = episode.env_class
    if labels_traced(env_class):
        yield from label_calls(env_class, episode.state, episode.actions, starts)
        return
    policy = _Scripted([a.to_json() for a in episode.actions])
    for transition in rollout(env_class, episode.state, policy, len(policy.actions)):
        yield LabelledCall(transition, "", False)


def replay_calls(path: Path) -> Iterator[tuple[type[Environment], Any]]:
    """Label every logged call of ``path`` in order, each on the state the previous one of its episode left;
    yields ``(environment class, cow_labelling.LabelledCall)`` (``episode_calls``)."""
    starts: dict[Any, Any] = {}  # tasks from one starting state share its labeller (cow_labelling.start_labeller)
    for episode in read_log(path):
        for call in episode_calls(episode, starts):
            yield episode.env_class, call


def replay_log(path: Path) -> Iterator[tuple[type[Environment], Transition]]:
    """Execute every logged episode of ``path``; yields ``(environment class, transition)`` pairs."""
    for env_class, call in replay_calls(path):
        yield env_class, call.transition


AGENT_PROMPT = ("You are a user's assistant operating the tools of a {domain} system. Explore it and carry out "
                "realistic requests a user of this system would make, one tool call at a time.")


async def llm_rollout(env_class: type[Environment], state: dict[str, Any], model: str, base_url: str | None,
                      steps: int, *, timeout: float = 120.0, max_retries: int = 4,
                      temperature: float = 0.8) -> list[Transition]:
    """Let an LLM agent act for up to ``steps`` calls in the real environment; returns the transitions."""
    import openai

    from envsim.evaluation.endpoints.providers import OpenAICompatibleProvider
    from envsim.evaluation.running.runner import RetryPolicy

    provider = OpenAICompatibleProvider(model, base_url=base_url, temperature=temperature, timeout=timeout)
    policy = RetryPolicy(timeout=timeout, max_retries=max_retries)
    tools = env_class.tool_schemas()
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": AGENT_PROMPT.format(domain=env_class.env_domain().replace("_", " "))},
        {"role": "user", "content": "Current data:\n" + json.dumps(state)[:6000]}]
    transitions: list[Transition] = []
    try:
        for index in range(steps):
            attempt = 0
            while True:
                attempt += 1
                try:
                    response = await asyncio.wait_for(provider.client.chat.completions.create(
                        model=model, messages=messages, tools=tools, temperature=temperature), policy.timeout)
                    break
                except Exception as exc:  # noqa: BLE001 - classified like the evaluator does
                    transient = isinstance(exc, asyncio.TimeoutError) or provider.should_retry(exc)
                    if not transient or attempt > policy.max_retries:
                        raise
                    await asyncio.sleep(policy.delay(attempt))
            calls = (response.choices[0].message.tool_calls or []) if response.choices else []
            if not calls:
                break
            call = calls[0]
            try:
                arguments = json.loads(call.function.arguments or "{}")
            except json.JSONDecodeError:
                arguments = {}
            transition = execute(env_class, state, Action(call.function.name, arguments if isinstance(arguments, dict) else {}))
            transitions.append(transition)
            state = transition.next_state
            messages += [{"role": "assistant", "content": None, "tool_calls": [
                             {"id": call.id or f"call_{index}", "type": "function",
                              "function": {"name": call.function.name, "arguments": call.function.arguments or "{}"}}]},
                         {"role": "tool", "tool_call_id": call.id or f"call_{index}",
                          "content": json.dumps(transition.observation)}]
    except openai.OpenAIError:
        if not transitions:
            raise
    finally:
        await provider.aclose()
    return transitions
